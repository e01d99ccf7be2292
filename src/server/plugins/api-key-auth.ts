import type { FastifyInstance } from 'fastify';
import type { ApiKeyService } from '../../domain/api-keys/api-key-service.js';
import { ForbiddenError } from '../../domain/errors.js';
import type { UserRole } from '../../domain/users/user.schema.js';
import type { UserService } from '../../domain/users/user-service.js';

declare module 'fastify' {
  interface FastifyRequest {
    /** The workspace of the request's `X-API-Key`, or of the user whose access token it carries. */
    workspaceId: string;
    /** What the credential may do: an API key acts as an owner; a user as its role. */
    role: UserRole;
  }
}

const BEARER = /^Bearer\s+(\S+)\s*$/i;

/**
 * Management API credential: `X-API-Key`, or else a user's `Authorization: Bearer <access_token>`, names the
 * workspace every handler in this scope works in, and the role it acts as. Neither: 401 `missing api key`.
 */
export function registerApiKeyAuth(app: FastifyInstance, apiKeys: ApiKeyService, users: UserService): void {
  app.decorateRequest('workspaceId', '');
  app.decorateRequest('role', 'member');
  app.addHook('onRequest', async (request) => {
    const header = request.headers['x-api-key'];
    const key = Array.isArray(header) ? header[0] : header;
    const bearer = key ? undefined : BEARER.exec(request.headers.authorization ?? '')?.[1];
    if (bearer) {
      const { workspaceId, role } = await users.principal(bearer);
      request.workspaceId = workspaceId;
      request.role = role;
    } else {
      request.workspaceId = await apiKeys.authenticate(key);
      request.role = 'owner';
    }
  });
}

/**
 * Owner-only routes (users, API keys, senders, settings, integrations): every route of this scope answers a
 * member 403 `forbidden`. Registered inside the scope of `registerApiKeyAuth`, so it runs after it.
 */
export function requireOwner(app: FastifyInstance): void {
  app.addHook('onRequest', async (request) => {
    if (request.role !== 'owner') throw new ForbiddenError();
  });
}
