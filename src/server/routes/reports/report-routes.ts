import type { FastifyInstance } from 'fastify';
import type { Services } from '../../../domain/create-services.js';
import { revenueQuerySchema, revenueReportSchema } from '../../../domain/reports/report.schema.js';
import { describeRoute } from '../../openapi/route-schema.js';

/** Attributed revenue by campaign and flow. */
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
  };
}
