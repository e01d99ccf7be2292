import type { MappedDelivery, MappingContext } from '../platform-webhooks/store-change.js';

/** A WooCommerce webhook (`X-WC-Webhook-Topic` and its JSON body) in emk's terms (docs/platforms/woocommerce.md). */
export function mapWooCommerceDelivery(topic: string, body: unknown, context: MappingContext): MappedDelivery {
  void topic, body, context;
  return { status: 'ignored' };
}
