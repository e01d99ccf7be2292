import type { FastifyInstance } from 'fastify';
import { z } from 'zod';
import type { Services } from '../../../domain/create-services.js';
import { parseInput, text } from '../../../domain/shared/validate.js';

const createKeySchema = z.object({ name: text(200).optional() }).optional();

/** Workspace API keys: list (prefix only), create (the key shown once), revoke. */
export function apiKeyRoutes(services: Services) {
  return async (app: FastifyInstance) => {
    app.get('/api-keys', async (request) => ({ data: await services.apiKeys.list(request.workspaceId) }));

    app.post('/api-keys', async (request, reply) => {
      const input = parseInput(createKeySchema, request.body);
      const key = await services.writer.run((trx) => services.apiKeys.create(trx, request.workspaceId, input?.name));
      return reply.code(201).send(key);
    });

    app.delete<{ Params: { id: string } }>('/api-keys/:id', async (request, reply) => {
      await services.apiKeys.revoke(request.workspaceId, request.params.id);
      return reply.code(204).send();
    });
  };
}
