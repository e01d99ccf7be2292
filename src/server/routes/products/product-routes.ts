import type { FastifyInstance } from 'fastify';
import type { Services } from '../../../domain/create-services.js';
import { pagingSchema } from '../../../domain/shared/paging.js';
import { parseInput } from '../../../domain/shared/validate.js';

interface IdParams {
  id: string;
}

/** The catalog (spec: GET /api/v1/ecommerce/products; CONTRACT §3): list, read one, manual create. */
export function productRoutes(services: Services) {
  return async (app: FastifyInstance) => {
    app.get('/ecommerce/products', async (request) =>
      services.products.list(request.workspaceId, request.query, parseInput(pagingSchema, request.query)),
    );

    app.get<{ Params: IdParams }>('/ecommerce/products/:id', async (request) =>
      services.products.get(request.workspaceId, request.params.id),
    );

    app.post('/ecommerce/products', async (request, reply) => {
      const { product, created } = await services.products.create(request.workspaceId, request.body);
      return reply.code(created ? 201 : 200).send(product);
    });
  };
}
