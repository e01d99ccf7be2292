import type { FastifyInstance } from 'fastify';
import type { Services } from '../../../domain/create-services.js';
import { pagingSchema } from '../../../domain/shared/paging.js';
import { parseInput } from '../../../domain/shared/validate.js';

/** Management events: record one for a contact; list the workspace's events, newest first. */
export function eventRoutes(services: Services) {
  return async (app: FastifyInstance) => {
    app.post('/events', async (request, reply) => {
      const event = await services.events.create(request.workspaceId, request.body);
      return reply.code(201).send(event);
    });

    // Partial success: bad rows are reported per row in `errors`, with 200.
    app.post('/events/batch', async (request) => services.events.recordBatch(request.workspaceId, request.body));

    app.put('/events/batch', async (request) => services.events.correctBatch(request.workspaceId, request.body));

    app.get('/events', async (request) =>
      services.events.list(request.workspaceId, request.query, parseInput(pagingSchema, request.query)),
    );
  };
}
