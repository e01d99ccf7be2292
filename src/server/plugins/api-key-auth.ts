import type { FastifyInstance } from 'fastify';
import type { ApiKeyService } from '../../domain/api-keys/api-key-service.js';
import type { UserService } from '../../domain/users/user-service.js';

declare module 'fastify' {
  interface FastifyRequest {
    /** The workspace of the request's `X-API-Key`, or of the user whose access token it carries. */
    workspaceId: string;
  }
}

const BEARER = /^Bearer\s+(\S+)\s*$/i;

/**
 * Management API credential: `X-API-Key`, or else a user's `Authorization: Bearer <access_token>`, names the
 * workspace every handler in this scope works in. Neither: 401 `missing api key`.
 */
export function registerApiKeyAuth(app: FastifyInstance, apiKeys: ApiKeyService, users: UserService): void {
  app.decorateRequest('workspaceId', '');
  app.addHook('onRequest', async (request) => {
    const header = request.headers['x-api-key'];
    const key = Array.isArray(header) ? header[0] : header;
    const bearer = key ? undefined : BEARER.exec(request.headers.authorization ?? '')?.[1];
    request.workspaceId = bearer ? await users.authenticate(bearer) : await apiKeys.authenticate(key);
  });
}
