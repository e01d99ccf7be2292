import type { FastifyInstance } from 'fastify';
import type { Services } from '../../../domain/create-services.js';
import { orderUpdateReplySchema, orderUpdateSchema, shipmentReplySchema, shipmentSchema } from '../../../domain/shipments/shipment.schema.js';
import { describeRoute } from '../../openapi/route-schema.js';

const shipments = { tag: 'Shipments', credential: 'apiKey' as const, errors: [400, 401] };

/** Shop back-ends report shipments and order status changes. */
export function shipmentRoutes(services: Services) {
  return async (app: FastifyInstance) => {
    app.post(
      '/events/shipment',
      { schema: describeRoute({ ...shipments, summary: "Set a matched order's Shipping Status; fires shipping_information", body: shipmentSchema, replies: { 200: shipmentReplySchema } }) },
      async (request) => services.shipments.shipment(request.workspaceId, request.body),
    );

    app.post(
      '/events/order-update',
      { schema: describeRoute({ ...shipments, summary: 'Delivered / Canceled labels from an order status; fires order_updated', body: orderUpdateSchema, replies: { 200: orderUpdateReplySchema } }) },
      async (request) => services.shipments.orderUpdate(request.workspaceId, request.body),
    );
  };
}
