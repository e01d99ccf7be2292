import type { FastifyInstance } from 'fastify';
import type { Services } from '../../../domain/create-services.js';

interface WebhookParams {
  platform: string;
  integrationId: string;
}

/**
 * The integration webhook. It takes any body as text: the spec answers a body that is not JSON with
 * `{status:"skipped", reason:"normalize_error"}`, never with a 4xx.
 */
export function webhookRoutes(services: Services) {
  return async (app: FastifyInstance) => {
    app.removeAllContentTypeParsers();
    app.addContentTypeParser('*', { parseAs: 'string' }, (_request, body, done) => done(null, body));

    app.post<{ Params: WebhookParams }>('/ecom/:platform/:integrationId', async (request) => {
      const integration = await services.integrations.authenticateWebhook(
        request.params.integrationId,
        request.params.platform,
        request.headers.authorization,
      );
      return services.webhook.handle(integration, typeof request.body === 'string' ? request.body : '');
    });
  };
}
