import fastifySwagger from '@fastify/swagger';
import fastifySwaggerUi from '@fastify/swagger-ui';
import type { FastifyInstance } from 'fastify';
import { jsonSchemaTransform } from 'fastify-type-provider-zod';
import { SECURITY_SCHEMES, serializerCompiler, validatorCompiler } from './route-schema.js';

/** Paths of the document itself and of its page: not routes of the API. */
export const DOCUMENTATION_ROUTES = ['/openapi.json', '/docs'];

/**
 * The routes describe themselves (route-schema.ts); this gathers them into the OpenAPI 3.1 document at
 * `GET /openapi.json` and a readable page at `GET /docs`, whose scripts and styles come from the installed
 * swagger-ui package (no CDN). Register before any route: only routes added afterwards are collected.
 */
export async function registerOpenApi(app: FastifyInstance, version: string): Promise<void> {
  app.setValidatorCompiler(validatorCompiler);
  app.setSerializerCompiler(serializerCompiler);
  await app.register(fastifySwagger, {
    openapi: {
      openapi: '3.1.0',
      info: {
        title: 'emk',
        version,
        description:
          'Customer data and marketing automation for online shops: the management API (`/api/v1`), the Collect API, ' +
          'the integration webhook and the browser SDK. Failures answer `{error, request_id}`; lists answer `{data, meta}`.',
      },
      components: { securitySchemes: SECURITY_SCHEMES },
    },
    transform: jsonSchemaTransform,
    hideUntagged: true,
  });
  await app.register(fastifySwaggerUi, { routePrefix: '/docs', uiConfig: { docExpansion: 'list', deepLinking: true } });
  app.get('/openapi.json', { schema: { hide: true } }, async () => app.swagger());
}
