import type { FastifyInstance } from 'fastify';
import type { Services } from '../../../domain/create-services.js';
import {
  createdOrderSchema,
  createOrderSchema,
  orderListQuerySchema,
  orderRecordSchema,
  syncBodySchema,
  syncReplySchema,
} from '../../../domain/orders/order.schema.js';
import { pagingSchema } from '../../../domain/shared/paging.js';
import { parseInput } from '../../../domain/shared/validate.js';
import { describedOnly, describeRoute, idParams, pageOf } from '../../openapi/route-schema.js';

const orders = { tag: 'Orders', credential: 'apiKey' as const };

/** Orders: direct create, reads, and historical sync. */
export function orderRoutes(services: Services) {
  return async (app: FastifyInstance) => {
    app.post(
      '/ecommerce/orders',
      {
        schema: describeRoute({
          ...orders,
          summary: 'Insert an order for a known contact (no duplicate protection, no attribution)',
          body: createOrderSchema,
          replies: { 201: createdOrderSchema },
          errors: [400, 401, 404],
        }),
      },
      async (request, reply) => reply.code(201).send(await services.orders.create(request.workspaceId, request.body)),
    );

    app.get(
      '/ecommerce/orders',
      {
        schema: describeRoute({
          ...orders,
          summary: 'List orders, newest first',
          query: orderListQuerySchema.extend(pagingSchema.shape),
          replies: { 200: pageOf(orderRecordSchema) },
          errors: [400, 401],
        }),
      },
      async (request) => services.orders.list(request.workspaceId, request.query, parseInput(pagingSchema, request.query)),
    );

    app.get<{ Params: { id: string } }>(
      '/ecommerce/orders/:id',
      { schema: describeRoute({ ...orders, summary: 'Read an order', params: idParams, replies: { 200: orderRecordSchema }, errors: [401, 404] }) },
      async (request) => services.orders.get(request.workspaceId, request.params.id),
    );

    // Partial success: bad orders are reported per row in `errors`; the body is checked by the sync.
    app.post(
      '/ecommerce/sync-historical-orders',
      {
        schema: describeRoute({
          ...orders,
          summary: 'Upsert up to 1000 orders by external_id (re-running never double counts), attributed from ordered_at',
          body: describedOnly(syncBodySchema),
          replies: { 200: syncReplySchema },
          errors: [400, 401],
        }),
      },
      async (request) => services.orders.sync(request.workspaceId, request.body),
    );
  };
}
