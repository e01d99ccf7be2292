import type { FastifyInstance } from 'fastify';
import type { Services } from '../../../domain/create-services.js';
import { pagingSchema } from '../../../domain/shared/paging.js';
import { parseInput } from '../../../domain/shared/validate.js';

interface IdParams {
  id: string;
}

/** Management contacts (CONTRACT §3): list and read, reconcile by email, merge and consent updates. */
export function contactRoutes(services: Services) {
  return async (app: FastifyInstance) => {
    app.get('/contacts', async (request) =>
      services.contacts.list(request.workspaceId, request.query, parseInput(pagingSchema, request.query)),
    );

    app.get<{ Params: IdParams }>('/contacts/:id', async (request) =>
      services.contacts.get(request.workspaceId, request.params.id),
    );

    app.post('/contacts', async (request, reply) => {
      const { contact, created } = await services.contacts.upsert(request.workspaceId, request.body);
      return reply.code(created ? 201 : 200).send(contact);
    });

    app.patch<{ Params: IdParams }>('/contacts/:id', async (request) =>
      services.contacts.update(request.workspaceId, request.params.id, request.body),
    );
  };
}
