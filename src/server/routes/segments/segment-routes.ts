import type { FastifyInstance } from 'fastify';
import { z } from 'zod';
import type { Services } from '../../../domain/create-services.js';
import { segmentCreateSchema, segmentMemberSchema, segmentRecordSchema, segmentUpdateSchema } from '../../../domain/segments/segment.schema.js';
import { pagingSchema } from '../../../domain/shared/paging.js';
import { parseInput } from '../../../domain/shared/validate.js';
import { describeRoute, idParams, pageOf } from '../../openapi/route-schema.js';

const segments = { tag: 'Segments', credential: 'apiKey' as const };
type ById = { Params: { id: string } };

/** Segments: saved conditions and their current members (docs/segments.md). */
export function segmentRoutes(services: Services) {
  return async (app: FastifyInstance) => {
    app.post(
      '/segments',
      {
        schema: describeRoute({
          ...segments,
          summary: 'Create a segment; its members are computed before the reply (a condition the service cannot use is a 400 naming it)',
          body: segmentCreateSchema,
          replies: { 201: segmentRecordSchema },
          errors: [400, 401],
        }),
      },
      async (request, reply) => reply.code(201).send(await services.segments.create(request.workspaceId, request.body)),
    );

    app.get(
      '/segments',
      { schema: describeRoute({ ...segments, summary: 'List segments, newest first, each with member_count', query: pagingSchema, replies: { 200: pageOf(segmentRecordSchema) }, errors: [400, 401] }) },
      async (request) => services.segments.list(request.workspaceId, parseInput(pagingSchema, request.query)),
    );

    app.get<ById>(
      '/segments/:id',
      { schema: describeRoute({ ...segments, summary: 'Read a segment', params: idParams, replies: { 200: segmentRecordSchema }, errors: [401, 404] }) },
      async (request) => services.segments.get(request.workspaceId, request.params.id),
    );

    app.patch<ById>(
      '/segments/:id',
      {
        schema: describeRoute({
          ...segments,
          summary: 'Rename a segment or change its conditions (members are recomputed before the reply)',
          params: idParams,
          body: segmentUpdateSchema,
          replies: { 200: segmentRecordSchema },
          errors: [400, 401, 404],
        }),
      },
      async (request) => services.segments.update(request.workspaceId, request.params.id, request.body),
    );

    app.delete<ById>(
      '/segments/:id',
      { schema: describeRoute({ ...segments, summary: 'Delete a segment and its memberships', params: idParams, replies: { 204: z.null().describe('No content') }, errors: [401, 404] }) },
      async (request, reply) => {
        await services.segments.delete(request.workspaceId, request.params.id);
        return reply.code(204).send();
      },
    );

    app.get<ById>(
      '/segments/:id/members',
      {
        schema: describeRoute({
          ...segments,
          summary: 'Current members, newest entry first',
          params: idParams,
          query: pagingSchema,
          replies: { 200: pageOf(segmentMemberSchema) },
          errors: [400, 401, 404],
        }),
      },
      async (request) => services.segments.members(request.workspaceId, request.params.id, parseInput(pagingSchema, request.query)),
    );
  };
}
