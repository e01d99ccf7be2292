import type { FastifyInstance, FastifyRequest } from 'fastify';
import type { Services } from '../../../domain/create-services.js';
import type { NativePlatform } from '../../../domain/integrations/integration.schema.js';
import {
  platformBodySchema,
  platformReplySchema,
  platformWebhookParams,
  type PlatformDelivery,
} from '../../../domain/platform-webhooks/platform-webhook.schema.js';
import { describedOnly, describeRoute } from '../../openapi/route-schema.js';

/** Where each platform puts what a delivery needs (Shopify's and WooCommerce's webhook documentation). */
const HEADERS: Record<NativePlatform, { signature: string; topic: string; deliveryId: string; shop: string; test: string | null }> = {
  shopify: {
    signature: 'x-shopify-hmac-sha256',
    topic: 'x-shopify-topic',
    deliveryId: 'x-shopify-webhook-id',
    shop: 'x-shopify-shop-domain',
    test: 'x-shopify-test',
  },
  // WooCommerce sends no test deliveries (its ping, when a webhook is saved, is answered apart).
  woocommerce: { signature: 'x-wc-webhook-signature', topic: 'x-wc-webhook-topic', deliveryId: 'x-wc-webhook-delivery-id', shop: 'x-wc-webhook-source', test: null },
};

const SUMMARIES: Record<NativePlatform, string> = {
  shopify: 'A Shopify webhook (X-Shopify-Hmac-Sha256 over the raw body; X-Shopify-Topic chooses the mapping)',
  woocommerce: 'A WooCommerce webhook (X-WC-Webhook-Signature over the raw body; X-WC-Webhook-Topic chooses the mapping)',
};

const header = (request: FastifyRequest, name: string): string | null => {
  const value = request.headers[name];
  return typeof value === 'string' ? value : null;
};

/**
 * Shopify's and WooCommerce's own webhooks. The body is taken as bytes: the signature is over them exactly,
 * and is checked before they are read as JSON (docs/platforms/README.md).
 */
export function platformWebhookRoutes(services: Services) {
  return async (app: FastifyInstance) => {
    app.removeAllContentTypeParsers();
    app.addContentTypeParser('*', { parseAs: 'buffer' }, (_request, body, done) => done(null, body));

    for (const platform of ['shopify', 'woocommerce'] as const) {
      const names = HEADERS[platform];
      app.post<{ Params: { integrationId: string } }>(
        `/ecom/${platform}/:integrationId`,
        {
          schema: describeRoute({
            tag: 'Platform webhooks',
            credential: 'platformSignature',
            summary: SUMMARIES[platform],
            params: platformWebhookParams,
            body: describedOnly(platformBodySchema),
            replies: { 200: platformReplySchema },
            errors: [401, 404, 429],
          }),
        },
        async (request) => {
          const delivery: PlatformDelivery = {
            body: Buffer.isBuffer(request.body) ? request.body : Buffer.alloc(0),
            signature: header(request, names.signature),
            topic: header(request, names.topic),
            deliveryId: header(request, names.deliveryId),
            shop: header(request, names.shop),
            test: names.test !== null && header(request, names.test)?.trim().toLowerCase() === 'true',
          };
          return services.platformWebhooks.handle(platform, request.params.integrationId, delivery);
        },
      );
    }
  };
}
