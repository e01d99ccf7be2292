import type { FastifyInstance } from 'fastify';
import { z } from 'zod';
import type { Services } from '../../../domain/create-services.js';
import { pagingSchema } from '../../../domain/shared/paging.js';
import { parseInput } from '../../../domain/shared/validate.js';
import { suppressionRecordSchema, suppressReplySchema, suppressSchema } from '../../../domain/suppressions/suppression.schema.js';
import { describeRoute, pageOf } from '../../openapi/route-schema.js';

const suppressions = { tag: 'Suppressions', credential: 'apiKey' as const };

/** Addresses that get no email of any kind. */
export function suppressionRoutes(services: Services) {
  return async (app: FastifyInstance) => {
    app.post(
      '/suppressions',
      { schema: describeRoute({ ...suppressions, summary: 'Suppress addresses (one already suppressed keeps its reason)', body: suppressSchema, replies: { 200: suppressReplySchema }, errors: [400, 401] }) },
      async (request) => services.suppressions.suppress(request.workspaceId, request.body),
    );
    app.get(
      '/suppressions',
      { schema: describeRoute({ ...suppressions, summary: 'List suppressed addresses, newest first', query: pagingSchema, replies: { 200: pageOf(suppressionRecordSchema) }, errors: [400, 401] }) },
      async (request) => services.suppressions.list(request.workspaceId, parseInput(pagingSchema, request.query)),
    );
    app.delete<{ Params: { email: string } }>(
      '/suppressions/:email',
      {
        schema: describeRoute({
          ...suppressions,
          summary: 'Lift one suppression',
          params: z.object({ email: z.string().describe('The address') }),
          replies: { 204: z.null().describe('No content') },
          errors: [400, 401, 404],
        }),
      },
      async (request, reply) => {
        await services.suppressions.lift(request.workspaceId, request.params.email);
        return reply.code(204).send();
      },
    );
  };
}
