import type { FastifyInstance } from 'fastify';
import type { Services } from '../../../domain/create-services.js';
import { manualProductSchema, productListQuerySchema, productRecordSchema } from '../../../domain/products/product.schema.js';
import { pagingSchema } from '../../../domain/shared/paging.js';
import { parseInput } from '../../../domain/shared/validate.js';
import { describeRoute, idParams, pageOf } from '../../openapi/route-schema.js';

const products = { tag: 'Products', credential: 'apiKey' as const };

/** The catalog: list, read one, manual create. */
export function productRoutes(services: Services) {
  return async (app: FastifyInstance) => {
    app.get(
      '/ecommerce/products',
      {
        schema: describeRoute({
          ...products,
          summary: 'List catalog products (filters: platform, external_id, source)',
          query: productListQuerySchema.extend(pagingSchema.shape),
          replies: { 200: pageOf(productRecordSchema) },
          errors: [400, 401],
        }),
      },
      async (request) => services.products.list(request.workspaceId, request.query, parseInput(pagingSchema, request.query)),
    );

    app.get<{ Params: { id: string } }>(
      '/ecommerce/products/:id',
      { schema: describeRoute({ ...products, summary: 'Read a product', params: idParams, replies: { 200: productRecordSchema }, errors: [401, 404] }) },
      async (request) => services.products.get(request.workspaceId, request.params.id),
    );

    app.post(
      '/ecommerce/products',
      {
        schema: describeRoute({
          ...products,
          summary: 'Create or update a manual product (platform `manual`; external_id generated when absent)',
          body: manualProductSchema,
          replies: { 200: productRecordSchema, 201: productRecordSchema },
          errors: [400, 401],
        }),
      },
      async (request, reply) => {
        const { product, created } = await services.products.create(request.workspaceId, request.body);
        return reply.code(created ? 201 : 200).send(product);
      },
    );
  };
}
