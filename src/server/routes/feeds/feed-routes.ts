import type { FastifyInstance } from 'fastify';
import { z } from 'zod';
import type { Services } from '../../../domain/create-services.js';
import {
  feedCreateSchema,
  feedGetQuerySchema,
  feedProductsQuerySchema,
  feedRecordSchema,
  feedUpdateSchema,
} from '../../../domain/feeds/feed.schema.js';
import { productRecordSchema } from '../../../domain/products/product.schema.js';
import { pagingSchema } from '../../../domain/shared/paging.js';
import { parseInput } from '../../../domain/shared/validate.js';
import { describeRoute, idParams, listOf, pageOf } from '../../openapi/route-schema.js';

const feeds = { tag: 'Product feeds', credential: 'apiKey' as const };
const feedReply = z.object({ feed: feedRecordSchema, product_count: z.number().int(), products: z.array(productRecordSchema).optional() });

/** Saved product feeds, and a feed ranked for one recipient (what email product blocks read). */
export function feedRoutes(services: Services) {
  return async (app: FastifyInstance) => {
    app.post(
      '/product-feeds',
      { schema: describeRoute({ ...feeds, summary: 'Create a feed (only name is required)', body: feedCreateSchema, replies: { 201: feedReply }, errors: [400, 401] }) },
      async (request, reply) => reply.code(201).send(await services.feeds.create(request.workspaceId, request.body)),
    );

    app.get(
      '/product-feeds',
      { schema: describeRoute({ ...feeds, summary: 'List feeds, each with its product count', query: pagingSchema, replies: { 200: pageOf(feedReply) }, errors: [400, 401] }) },
      async (request) => services.feeds.list(request.workspaceId, parseInput(pagingSchema, request.query)),
    );

    app.get<{ Params: { id: string } }>(
      '/product-feeds/:id',
      {
        schema: describeRoute({
          ...feeds,
          summary: 'Read a feed; `preview=N` adds its first N products in plain order',
          params: idParams,
          query: feedGetQuerySchema,
          replies: { 200: feedReply },
          errors: [400, 401, 404],
        }),
      },
      async (request) => services.feeds.get(request.workspaceId, request.params.id, request.query),
    );

    app.put<{ Params: { id: string } }>(
      '/product-feeds/:id',
      {
        schema: describeRoute({
          ...feeds,
          summary: 'Change only the fields sent (`clear_stock_min` / `clear_stock_max` remove a bound)',
          params: idParams,
          body: feedUpdateSchema,
          replies: { 200: feedReply },
          errors: [400, 401, 404],
        }),
      },
      async (request) => services.feeds.update(request.workspaceId, request.params.id, request.body),
    );

    app.delete<{ Params: { id: string } }>(
      '/product-feeds/:id',
      { schema: describeRoute({ ...feeds, summary: 'Delete a feed', params: idParams, replies: { 204: z.null().describe('No content') }, errors: [401, 404] }) },
      async (request, reply) => {
        await services.feeds.delete(request.workspaceId, request.params.id);
        return reply.code(204).send();
      },
    );

    app.get<{ Params: { id: string } }>(
      '/product-feeds/:id/products',
      {
        schema: describeRoute({
          ...feeds,
          summary: 'The feed ranked for a recipient (`contact_id`; without it, the plain order)',
          params: idParams,
          query: feedProductsQuerySchema,
          replies: { 200: listOf(productRecordSchema) },
          errors: [400, 401, 404],
        }),
      },
      async (request) => services.feeds.productsFor(request.workspaceId, request.params.id, request.query),
    );
  };
}
