import type { FastifyInstance } from 'fastify';
import type { Services } from '../../../domain/create-services.js';
import { createRelayWebhookSchema, relayWebhookCreatedSchema, relayWebhookRecordSchema } from '../../../domain/relay-webhooks/relay-webhook.schema.js';
import { describeRoute, pageOf } from '../../openapi/route-schema.js';

const relayWebhooks = { tag: 'Relay webhooks', credential: 'apiKey' as const };

/** Relay webhooks (owners only, docs/api/relay-webhooks.md): register the endpoint a relay posts its bounces and complaints to. */
export function relayWebhookRoutes(services: Services) {
  return async (app: FastifyInstance) => {
    app.get(
      '/relay-webhooks',
      {
        schema: describeRoute({
          ...relayWebhooks,
          summary: 'The relay webhooks of the workspace (secrets are never shown)',
          replies: { 200: pageOf(relayWebhookRecordSchema) },
          errors: [401, 403],
        }),
      },
      async (request) => services.relayWebhooks.list(request.workspaceId),
    );

    app.post(
      '/relay-webhooks',
      {
        schema: describeRoute({
          ...relayWebhooks,
          summary: 'Register a relay webhook (ses, postmark, sendgrid, mailgun): answers the URL to give the relay',
          body: createRelayWebhookSchema,
          replies: { 201: relayWebhookCreatedSchema },
          errors: [400, 401, 403],
        }),
      },
      async (request, reply) => reply.code(201).send(await services.relayWebhooks.create(request.workspaceId, request.body)),
    );
  };
}
