import type { FastifyInstance } from 'fastify';
import type { Services } from '../../../domain/create-services.js';
import { pagingSchema } from '../../../domain/shared/paging.js';
import { parseInput } from '../../../domain/shared/validate.js';

interface IdParams {
  id: string;
}

/** Saved product feeds (spec: "Product feeds (management)"; CONTRACT §3 `/product-feeds/{id}/products`). */
export function feedRoutes(services: Services) {
  return async (app: FastifyInstance) => {
    app.post('/product-feeds', async (request, reply) =>
      reply.code(201).send(await services.feeds.create(request.workspaceId, request.body)),
    );

    app.get('/product-feeds', async (request) =>
      services.feeds.list(request.workspaceId, parseInput(pagingSchema, request.query)),
    );

    app.get<{ Params: IdParams }>('/product-feeds/:id', async (request) =>
      services.feeds.get(request.workspaceId, request.params.id, request.query),
    );

    app.put<{ Params: IdParams }>('/product-feeds/:id', async (request) =>
      services.feeds.update(request.workspaceId, request.params.id, request.body),
    );

    app.delete<{ Params: IdParams }>('/product-feeds/:id', async (request, reply) => {
      await services.feeds.delete(request.workspaceId, request.params.id);
      return reply.code(204).send();
    });

    app.get<{ Params: IdParams }>('/product-feeds/:id/products', async (request) =>
      services.feeds.productsFor(request.workspaceId, request.params.id, request.query),
    );
  };
}
