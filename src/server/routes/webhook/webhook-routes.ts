import type { FastifyInstance } from 'fastify';
import { z } from 'zod';
import type { Services } from '../../../domain/create-services.js';
import { webhookBodySchema, webhookReplySchema } from '../../../domain/webhook/webhook-event.js';
import { describedOnly, describeRoute } from '../../openapi/route-schema.js';

interface WebhookParams {
  platform: string;
  integrationId: string;
}

const webhookParams = z.object({
  platform: z.string().describe('`website`, or a storefront platform slug'),
  integrationId: z.string().describe('The integration id'),
});

/**
 * The integration webhook. It takes any body as text: the spec answers a body that is not JSON with
 * `{status:"skipped", reason:"normalize_error"}`, never with a 4xx (so its body is documented, not validated).
 */
export function webhookRoutes(services: Services) {
  return async (app: FastifyInstance) => {
    app.removeAllContentTypeParsers();
    app.addContentTypeParser('*', { parseAs: 'string' }, (_request, body, done) => done(null, body));

    app.post<{ Params: WebhookParams }>(
      '/ecom/:platform/:integrationId',
      {
        schema: describeRoute({
          tag: 'Integration webhook',
          credential: 'integrationKey',
          summary: 'Order, cart, customer, product and custom events from a shop (always 200 once authenticated)',
          params: webhookParams,
          body: describedOnly(webhookBodySchema),
          replies: { 200: webhookReplySchema },
          errors: [401, 404, 429],
        }),
      },
      async (request) => {
        const integration = await services.integrations.authenticateWebhook(
          request.params.integrationId,
          request.params.platform,
          request.headers.authorization,
        );
        return services.webhook.handle(integration, typeof request.body === 'string' ? request.body : '');
      },
    );
  };
}
