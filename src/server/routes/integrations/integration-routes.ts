import type { FastifyInstance } from 'fastify';
import type { Services } from '../../../domain/create-services.js';
import { z } from 'zod';
import {
  createdIntegrationSchema,
  createdPlatformIntegrationSchema,
  createIntegrationSchema,
  integrationRecordSchema,
  updateIntegrationSchema,
} from '../../../domain/integrations/integration.schema.js';
import { pagingSchema } from '../../../domain/shared/paging.js';
import { parseInput } from '../../../domain/shared/validate.js';
import { describeRoute, idParams, pageOf } from '../../openapi/route-schema.js';

const integrations = { tag: 'Integrations', credential: 'apiKey' as const };

/** Store integrations: list (never the key or secret), create and rotate (key shown once), (de)activate. */
export function integrationRoutes(services: Services) {
  return async (app: FastifyInstance) => {
    app.get(
      '/integrations',
      { schema: describeRoute({ ...integrations, summary: 'List integrations', query: pagingSchema, replies: { 200: pageOf(integrationRecordSchema) }, errors: [400, 401] }) },
      async (request) => services.integrations.list(request.workspaceId, parseInput(pagingSchema, request.query)),
    );

    app.post(
      '/integrations',
      {
        schema: describeRoute({
          ...integrations,
          summary: 'Create a Website integration (its webhook key is shown once), or a Shopify or WooCommerce one (its webhook URL)',
          body: createIntegrationSchema,
          replies: { 201: z.union([createdIntegrationSchema, createdPlatformIntegrationSchema]) },
          errors: [400, 401],
        }),
      },
      async (request, reply) => reply.code(201).send(await services.integrations.add(request.workspaceId, request.body)),
    );

    app.get<{ Params: { id: string } }>(
      '/integrations/:id',
      { schema: describeRoute({ ...integrations, summary: 'Read an integration (Shopify and WooCommerce: with the topics it ignored)', params: idParams, replies: { 200: integrationRecordSchema }, errors: [401, 404] }) },
      async (request) => services.integrations.get(request.workspaceId, request.params.id),
    );

    app.patch<{ Params: { id: string } }>(
      '/integrations/:id',
      {
        schema: describeRoute({
          ...integrations,
          summary: '`active: false` makes its webhook answer 404',
          params: idParams,
          body: updateIntegrationSchema,
          replies: { 200: integrationRecordSchema },
          errors: [400, 401, 404],
        }),
      },
      async (request) => services.integrations.update(request.workspaceId, request.params.id, request.body),
    );

    app.post<{ Params: { id: string } }>(
      '/integrations/:id/rotate-key',
      {
        schema: describeRoute({
          ...integrations,
          summary: 'A new webhook key (shown once); the old one stops working',
          params: idParams,
          replies: { 200: createdIntegrationSchema },
          errors: [401, 404],
        }),
      },
      async (request) => services.integrations.rotateKey(request.workspaceId, request.params.id),
    );
  };
}
