import type { FastifyInstance } from 'fastify';
import type { Services } from '../../../domain/create-services.js';
import {
  batchBodySchema,
  batchReplySchema,
  correctBodySchema,
  correctReplySchema,
  createEventSchema,
  eventListQuerySchema,
  eventRecordSchema,
} from '../../../domain/events/event.schema.js';
import { pagingSchema } from '../../../domain/shared/paging.js';
import { parseInput } from '../../../domain/shared/validate.js';
import { describedOnly, describeRoute, pageOf } from '../../openapi/route-schema.js';

const events = { tag: 'Events', credential: 'apiKey' as const };

/** Management events: record one for a contact, batches and corrections, the workspace's events newest first. */
export function eventRoutes(services: Services) {
  return async (app: FastifyInstance) => {
    app.post(
      '/events',
      { schema: describeRoute({ ...events, summary: 'Record an event of a contact', body: createEventSchema, replies: { 201: eventRecordSchema }, errors: [400, 401, 404] }) },
      async (request, reply) => reply.code(201).send(await services.events.create(request.workspaceId, request.body)),
    );

    // Partial success: bad rows are reported per row in `errors`, with 200; the body is checked by the batch.
    app.post(
      '/events/batch',
      {
        schema: describeRoute({
          ...events,
          summary: 'Record up to 1000 events of existing contacts by email; bad rows are reported in `errors`',
          body: describedOnly(batchBodySchema),
          replies: { 200: batchReplySchema },
          errors: [400, 401],
        }),
      },
      async (request) => services.events.recordBatch(request.workspaceId, request.body),
    );

    app.put(
      '/events/batch',
      {
        schema: describeRoute({
          ...events,
          summary: 'Correct up to 1000 stored events matched by email, event_name and dedupe_key (no trigger fires)',
          body: describedOnly(correctBodySchema),
          replies: { 200: correctReplySchema },
          errors: [400, 401],
        }),
      },
      async (request) => services.events.correctBatch(request.workspaceId, request.body),
    );

    app.get(
      '/events',
      {
        schema: describeRoute({
          ...events,
          summary: 'List the workspace’s events, newest first',
          query: eventListQuerySchema.extend(pagingSchema.shape),
          replies: { 200: pageOf(eventRecordSchema) },
          errors: [400, 401],
        }),
      },
      async (request) => services.events.list(request.workspaceId, request.query, parseInput(pagingSchema, request.query)),
    );
  };
}
