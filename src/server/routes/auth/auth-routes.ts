import type { FastifyInstance } from 'fastify';
import type { Services } from '../../../domain/create-services.js';
import { loginSchema, refreshSchema, registerSchema, registrationSchema, sessionSchema } from '../../../domain/users/user.schema.js';
import { describeRoute } from '../../openapi/route-schema.js';

const auth = { tag: 'Auth', credential: 'none' as const };

/** Accounts: register (a user and its workspace), login, refresh (docs/api/auth.md). 10 requests/min per IP. */
export function authRoutes(services: Services) {
  return async (app: FastifyInstance) => {
    app.post(
      '/register',
      {
        schema: describeRoute({
          ...auth,
          summary: 'Create a user and the workspace it owns; answers its first tokens',
          body: registerSchema,
          replies: { 201: registrationSchema },
          errors: [400, 409, 429],
        }),
      },
      async (request, reply) => reply.code(201).send(await services.users.register(request.body)),
    );

    app.post(
      '/login',
      { schema: describeRoute({ ...auth, summary: 'Exchange email and password for tokens', body: loginSchema, replies: { 200: sessionSchema }, errors: [400, 401, 429] }) },
      async (request) => services.users.login(request.body),
    );

    app.post(
      '/refresh',
      {
        schema: describeRoute({
          ...auth,
          summary: 'Exchange a refresh token (single use) for a new pair; a reused one revokes its family',
          body: refreshSchema,
          replies: { 200: sessionSchema },
          errors: [400, 401, 429],
        }),
      },
      async (request) => services.users.refresh(request.body),
    );
  };
}
