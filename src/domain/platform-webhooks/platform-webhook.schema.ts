import { z } from 'zod';

/** A delivery as the platform sent it: its exact bytes (the signature is over them) and what its headers say. */
export interface PlatformDelivery {
  body: Buffer;
  /** Base64 HMAC-SHA256 of the body with the integration's secret (`X-Shopify-Hmac-Sha256`, `X-WC-Webhook-Signature`). */
  signature: string | null;
  /** `X-Shopify-Topic` (`orders/create`), `X-WC-Webhook-Topic` (`order.created`). */
  topic: string | null;
  /** The retry key: `X-Shopify-Webhook-Id`, `X-WC-Webhook-Delivery-ID`. */
  deliveryId: string | null;
  /** The shop: `X-Shopify-Shop-Domain`, `X-WC-Webhook-Source` (a URL; its host is taken). */
  shop: string | null;
  /** `X-Shopify-Test: true`: Shopify's "Send test notification", a sample that is not the shop's data. */
  test?: boolean;
}

/** The replies of `POST /ecom/shopify/{id}` and `/ecom/woocommerce/{id}` (CONTRACT §8.3). */
export interface PlatformReply {
  status: 'processed' | 'duplicate' | 'ignored';
  topic: string;
  /** Fields of the payload that could not be used (the rest was applied). */
  warnings?: string[];
}

export const platformReplySchema = z.object({
  status: z.enum(['processed', 'duplicate', 'ignored']),
  topic: z.string(),
  warnings: z.array(z.string()).optional(),
}) satisfies z.ZodType<PlatformReply>;

/** The route's path parameter. */
export const platformWebhookParams = z.object({ integrationId: z.string().describe('The integration id (its `webhook_url` ends with it)') });

/** The body is the platform's own payload for the topic, read as its documentation describes (docs/platforms/). */
export const platformBodySchema = z.record(z.string(), z.unknown()).describe("The platform's payload for the topic (docs/platforms/shopify.md, docs/platforms/woocommerce.md)");
