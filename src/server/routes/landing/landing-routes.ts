import type { FastifyInstance } from 'fastify';
import { z } from 'zod';
import type { Services } from '../../../domain/create-services.js';
import { describeRoute } from '../../openapi/route-schema.js';
import { landingPage } from '../console/console-pages.js';

/** `GET /`: what this server is, where to go (the console, the API documentation, health) and the first command. */
export function landingRoutes(services: Services) {
  return async (app: FastifyInstance) => {
    app.get(
      '/',
      { schema: describeRoute({ tag: 'Console', credential: 'none', summary: 'The landing page: links to the console, /docs and /healthz, and the first command to run', replies: { 200: z.string().describe('text/html') } }) },
      async (_request, reply) =>
        reply
          .header('content-type', 'text/html; charset=utf-8')
          .header('cache-control', 'no-store')
          .send(landingPage({ hasWorkspace: await services.workspaces.anyExists() })),
    );
  };
}
