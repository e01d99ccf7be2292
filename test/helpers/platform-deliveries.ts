import { createHmac, randomUUID } from 'node:crypto';
import type { Harness } from './harness.js';

/** The shops the platform tests connect: what a delivery names as its source. */
export const SHOPIFY_SHOP = 'emk-demo.myshopify.com';
export const WOO_SHOP = 'shop.example.com';

export interface PlatformPost {
  platform: 'shopify' | 'woocommerce';
  integrationId: string;
  /** `X-Shopify-Topic` or `X-WC-Webhook-Topic` (WooCommerce's resource and event headers follow from it). */
  topic: string;
  /** A fixture's exact bytes, or JSON to serialise. */
  body: Buffer | object;
  /** The integration's secret: the bytes are signed with it as the platform signs them. */
  secret: string;
  /** The retry key; a fresh one by default. */
  deliveryId?: string;
  /** Further headers (`x-shopify-api-version`, `x-shopify-test`…), written last. */
  headers?: Record<string, string>;
}

/**
 * A delivery as Shopify or WooCommerce posts it to `/ecom/{platform}/{id}`: the body's exact bytes signed (base64
 * HMAC-SHA256), its topic, a delivery id of its own and the shop it comes from.
 */
export function postPlatformDelivery(h: () => Harness, post: PlatformPost) {
  const body = Buffer.isBuffer(post.body) ? post.body : Buffer.from(JSON.stringify(post.body));
  const signature = createHmac('sha256', post.secret).update(body).digest('base64');
  const deliveryId = post.deliveryId ?? `delivery-${randomUUID()}`;
  const [resource = '', event = ''] = post.topic.split('.');
  const platformHeaders: Record<string, string> =
    post.platform === 'shopify'
      ? { 'x-shopify-topic': post.topic, 'x-shopify-hmac-sha256': signature, 'x-shopify-webhook-id': deliveryId, 'x-shopify-shop-domain': SHOPIFY_SHOP }
      : {
          'x-wc-webhook-topic': post.topic,
          'x-wc-webhook-resource': resource,
          'x-wc-webhook-event': event,
          'x-wc-webhook-signature': signature,
          'x-wc-webhook-delivery-id': deliveryId,
          'x-wc-webhook-source': `https://${WOO_SHOP}/`,
        };
  return h().request({
    method: 'POST',
    url: `/ecom/${post.platform}/${post.integrationId}`,
    headers: { 'content-type': 'application/json', ...platformHeaders, ...post.headers },
    payload: body,
  });
}
