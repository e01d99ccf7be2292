import type { FastifyInstance } from 'fastify';
import type { ApiKeyService } from '../../domain/api-keys/api-key-service.js';

declare module 'fastify' {
  interface FastifyRequest {
    /** The workspace of the request's `X-API-Key`. */
    workspaceId: string;
  }
}

/** Management API credential: `X-API-Key` names the workspace every handler in this scope works in. */
export function registerApiKeyAuth(app: FastifyInstance, apiKeys: ApiKeyService): void {
  app.decorateRequest('workspaceId', '');
  app.addHook('onRequest', async (request) => {
    const header = request.headers['x-api-key'];
    request.workspaceId = await apiKeys.authenticate(Array.isArray(header) ? header[0] : header);
  });
}
