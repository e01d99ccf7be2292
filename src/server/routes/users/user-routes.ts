import type { FastifyInstance } from 'fastify';
import { z } from 'zod';
import type { Services } from '../../../domain/create-services.js';
import { pagingSchema } from '../../../domain/shared/paging.js';
import { parseInput } from '../../../domain/shared/validate.js';
import { addedUserSchema, addUserSchema, workspaceUserSchema } from '../../../domain/users/user.schema.js';
import { describeRoute, idParams, pageOf } from '../../openapi/route-schema.js';

const users = { tag: 'Users', credential: 'apiKey' as const };

/** The workspace's users (owners only, docs/api/auth.md): add one (with its set-password token), list, remove. */
export function userRoutes(services: Services) {
  return async (app: FastifyInstance) => {
    app.get(
      '/users',
      {
        schema: describeRoute({ ...users, summary: "The workspace's users and their roles, oldest first", query: pagingSchema, replies: { 200: pageOf(workspaceUserSchema) }, errors: [400, 401, 403] }),
      },
      async (request) => services.users.list(request.workspaceId, parseInput(pagingSchema, request.query ?? {})),
    );

    app.post(
      '/users',
      {
        schema: describeRoute({
          ...users,
          summary: 'Add a user (owner or member); answers its one-time set-password token',
          body: addUserSchema,
          replies: { 201: addedUserSchema },
          errors: [400, 401, 403, 409],
        }),
      },
      async (request, reply) => reply.code(201).send(await services.users.add(request.workspaceId, request.body)),
    );

    app.delete<{ Params: { id: string } }>(
      '/users/:id',
      {
        schema: describeRoute({
          ...users,
          summary: "Remove a user: its tokens stop working at once (409 for the workspace's last owner)",
          params: idParams,
          replies: { 204: z.null().describe('No content') },
          errors: [401, 403, 404, 409],
        }),
      },
      async (request, reply) => {
        await services.users.remove(request.workspaceId, request.params.id);
        return reply.code(204).send();
      },
    );
  };
}
