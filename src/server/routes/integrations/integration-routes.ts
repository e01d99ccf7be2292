import type { FastifyInstance } from 'fastify';
import type { Services } from '../../../domain/create-services.js';
import { pagingSchema } from '../../../domain/shared/paging.js';
import { parseInput } from '../../../domain/shared/validate.js';

interface IdParams {
  id: string;
}

/** Store integrations (CONTRACT §3): list (never the key), create and rotate (key shown once), (de)activate. */
export function integrationRoutes(services: Services) {
  return async (app: FastifyInstance) => {
    app.get('/integrations', async (request) =>
      services.integrations.list(request.workspaceId, parseInput(pagingSchema, request.query)),
    );

    app.post('/integrations', async (request, reply) =>
      reply.code(201).send(await services.integrations.add(request.workspaceId, request.body)),
    );

    app.get<{ Params: IdParams }>('/integrations/:id', async (request) =>
      services.integrations.get(request.workspaceId, request.params.id),
    );

    app.patch<{ Params: IdParams }>('/integrations/:id', async (request) =>
      services.integrations.update(request.workspaceId, request.params.id, request.body),
    );

    app.post<{ Params: IdParams }>('/integrations/:id/rotate-key', async (request) =>
      services.integrations.rotateKey(request.workspaceId, request.params.id),
    );
  };
}
