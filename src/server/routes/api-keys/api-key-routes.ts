import type { FastifyInstance } from 'fastify';
import { z } from 'zod';
import { apiKeyRecordSchema, createApiKeySchema, createdApiKeySchema } from '../../../domain/api-keys/api-key.schema.js';
import type { Services } from '../../../domain/create-services.js';
import { toPage } from '../../../domain/shared/paging.js';
import { parseInput } from '../../../domain/shared/validate.js';
import { describeRoute, idParams, pageOf } from '../../openapi/route-schema.js';

const apiKeys = { tag: 'API keys', credential: 'apiKey' as const };

/** Workspace API keys: list (prefix only), create (the key shown once), revoke. */
export function apiKeyRoutes(services: Services) {
  return async (app: FastifyInstance) => {
    app.get(
      '/api-keys',
      { schema: describeRoute({ ...apiKeys, summary: "The workspace's keys (prefix only), oldest first", replies: { 200: pageOf(apiKeyRecordSchema) }, errors: [401] }) },
      async (request) => {
        // A workspace holds a handful of keys: one page holds them all.
        const keys = await services.apiKeys.list(request.workspaceId);
        return toPage(keys, keys.length, { page: 1, perPage: Math.max(keys.length, 1) });
      },
    );

    app.post(
      '/api-keys',
      { schema: describeRoute({ ...apiKeys, summary: 'Create a key (the whole key is shown once)', body: createApiKeySchema, replies: { 201: createdApiKeySchema }, errors: [400, 401] }) },
      async (request, reply) => {
        const input = parseInput(createApiKeySchema, request.body);
        return reply.code(201).send(await services.apiKeys.issue(request.workspaceId, input?.name));
      },
    );

    app.delete<{ Params: { id: string } }>(
      '/api-keys/:id',
      { schema: describeRoute({ ...apiKeys, summary: 'Revoke a key: it stops working at once', params: idParams, replies: { 204: z.null().describe('No content') }, errors: [401, 404] }) },
      async (request, reply) => {
        await services.apiKeys.revoke(request.workspaceId, request.params.id);
        return reply.code(204).send();
      },
    );
  };
}
