import type { FastifyInstance } from 'fastify';
import type { Services } from '../../../domain/create-services.js';
import { dataRequestRecordSchema } from '../../../domain/data-rights/data-rights.schema.js';
import { pagingSchema } from '../../../domain/shared/paging.js';
import { parseInput } from '../../../domain/shared/validate.js';
import { describeRoute, pageOf } from '../../openapi/route-schema.js';

/** The shop platforms' data requests (Shopify's `customers/data_request`), for an owner to fulfil with `emk contacts export`. */
export function dataRequestRoutes(services: Services) {
  return async (app: FastifyInstance) => {
    app.get(
      '/data-requests',
      {
        schema: describeRoute({
          tag: 'Data rights',
          credential: 'apiKey',
          summary: "Requests for what is kept about a person that a shop platform forwarded, newest first",
          query: pagingSchema,
          replies: { 200: pageOf(dataRequestRecordSchema) },
          errors: [400, 401, 403],
        }),
      },
      async (request) => services.dataRights.listDataRequests(request.workspaceId, parseInput(pagingSchema, request.query)),
    );
  };
}
