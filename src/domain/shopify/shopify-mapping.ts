import type { MappedDelivery, MappingContext } from '../platform-webhooks/store-change.js';

/** A Shopify webhook (`X-Shopify-Topic` and its JSON body) in emk's terms (docs/platforms/shopify.md). */
export function mapShopifyDelivery(topic: string, body: unknown, context: MappingContext): MappedDelivery {
  void topic, body, context;
  return { status: 'ignored' };
}
