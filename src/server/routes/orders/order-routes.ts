import type { FastifyInstance } from 'fastify';
import type { Services } from '../../../domain/create-services.js';
import { pagingSchema } from '../../../domain/shared/paging.js';
import { parseInput } from '../../../domain/shared/validate.js';

/** Orders: direct create, reads, and historical sync. */
export function orderRoutes(services: Services) {
  return async (app: FastifyInstance) => {
    app.post('/ecommerce/orders', async (request, reply) => {
      const order = await services.orders.create(request.workspaceId, request.body);
      return reply.code(201).send(order);
    });

    app.get('/ecommerce/orders', async (request) =>
      services.orders.list(request.workspaceId, request.query, parseInput(pagingSchema, request.query)),
    );

    app.get<{ Params: { id: string } }>('/ecommerce/orders/:id', async (request) =>
      services.orders.get(request.workspaceId, request.params.id),
    );

    app.post('/ecommerce/sync-historical-orders', async (request) =>
      services.orders.sync(request.workspaceId, request.body),
    );
  };
}
