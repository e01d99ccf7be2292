import type { FastifyInstance } from 'fastify';
import type { Services } from '../../../domain/create-services.js';
import {
  deliverabilityQuerySchema,
  deliverabilityReportSchema,
  revenueQuerySchema,
  revenueReportSchema,
} from '../../../domain/reports/report.schema.js';
import { describeRoute } from '../../openapi/route-schema.js';

/** Attributed revenue and deliverability by campaign and flow. */
export function reportRoutes(services: Services) {
  return async (app: FastifyInstance) => {
    app.get(
      '/reports/revenue',
      {
        schema: describeRoute({
          tag: 'Reports',
          credential: 'apiKey',
          summary: 'Net revenue of the orders placed in [from, to) credited to each campaign and flow (default: the last 30 days)',
          query: revenueQuerySchema,
          replies: { 200: revenueReportSchema },
          errors: [400, 401],
        }),
      },
      async (request) => services.reports.revenue(request.workspaceId, request.query),
    );
    app.get(
      '/reports/deliverability',
      {
        schema: describeRoute({
          tag: 'Reports',
          credential: 'apiKey',
          summary: 'Delivered, bounced, complained and unsubscribed per campaign and flow over the last `days` days (default 30), rates above the mailbox providers\' thresholds flagged',
          query: deliverabilityQuerySchema,
          replies: { 200: deliverabilityReportSchema },
          errors: [400, 401],
        }),
      },
      async (request) => services.reports.deliverability(request.workspaceId, request.query),
    );
  };
}
