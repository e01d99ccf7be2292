import type { FastifyInstance } from 'fastify';
import type { EmkConfig } from '../../../domain/config.js';
import type { Services } from '../../../domain/create-services.js';
import { ForbiddenError } from '../../../domain/errors.js';
import { loginSchema, refreshSchema, registerSchema, registrationSchema, sessionSchema, setPasswordSchema } from '../../../domain/users/user.schema.js';
import { describeRoute } from '../../openapi/route-schema.js';

const auth = { tag: 'Auth', credential: 'none' as const };

/**
 * Accounts: register (a user and its workspace, when the operator opened registration), login, refresh,
 * set-password (docs/api/auth.md). 10 requests/min per IP.
 */
export function authRoutes(services: Services, { registration }: Pick<EmkConfig, 'registration'>) {
  return async (app: FastifyInstance) => {
    app.post(
      '/register',
      {
        schema: describeRoute({
          ...auth,
          summary: 'Create a user and the workspace it owns; answers its first tokens (403 unless EMK_REGISTRATION=open)',
          body: registerSchema,
          replies: { 201: registrationSchema },
          errors: [400, 403, 409, 429],
        }),
        // Closed is closed, whatever the body: answered before the body is checked.
        preValidation: async () => {
          if (registration !== 'open') throw new ForbiddenError('registration is closed');
        },
      },
      async (request, reply) => reply.code(201).send(await services.users.register(request.body)),
    );

    app.post(
      '/set-password',
      {
        schema: describeRoute({
          ...auth,
          summary: 'Set the password of a user an owner added, with its one-time token; answers its first tokens',
          body: setPasswordSchema,
          replies: { 200: sessionSchema },
          errors: [400, 401, 429],
        }),
      },
      async (request) => services.users.setPassword(request.body),
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
