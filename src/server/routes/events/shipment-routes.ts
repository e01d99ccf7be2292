import type { FastifyInstance } from 'fastify';
import type { Services } from '../../../domain/create-services.js';

/** Shop back-ends report shipments and order status changes (spec: POST /events/shipment, /events/order-update). */
export function shipmentRoutes(services: Services) {
  return async (app: FastifyInstance) => {
    app.post('/events/shipment', async (request) => services.shipments.shipment(request.workspaceId, request.body));

    app.post('/events/order-update', async (request) => services.shipments.orderUpdate(request.workspaceId, request.body));
  };
}
