import { z } from 'zod';
import { storableString } from '../shared/validate.js';

/** A platform slug as it appears in the webhook path `/ecom/{platform}/{integrationId}`. */
const platformSchema = z
  .string()
  .trim()
  .toLowerCase()
  .regex(/^[a-z0-9][a-z0-9_-]{0,63}$/, 'must be a platform slug such as website');

const HOST = /^[a-z0-9]([a-z0-9-]*[a-z0-9])?(\.[a-z0-9]([a-z0-9-]*[a-z0-9])?)*(:\d{1,5})?$/;

/**
 * The shop's domain, kept as a bare host: `https://Shop.Example.com/` is stored as `shop.example.com`, since
 * it becomes the `website:<domain>` source of contacts and products.
 */
export const domainSchema = z
  .string()
  .trim()
  .toLowerCase()
  .transform((value) => value.replace(/^[a-z][a-z0-9+.-]*:\/\//, '').replace(/\/.*$/, ''))
  .pipe(z.string().min(1, 'must not be empty').max(255, 'must be at most 255 characters').regex(HOST, 'must be a domain such as shop.example.com'));

/** Platforms whose own webhooks emk reads natively (signed with a secret, docs/platforms/README.md). */
export const NATIVE_PLATFORMS = ['shopify', 'woocommerce'] as const;
export type NativePlatform = (typeof NATIVE_PLATFORMS)[number];
export const isNativePlatform = (platform: string): platform is NativePlatform => (NATIVE_PLATFORMS as readonly string[]).includes(platform);

/** A platform's webhook secret, kept as sent: every byte counts in the signatures it makes. */
const secretSchema = storableString().min(1, 'must not be empty').max(1000, 'must be at most 1000 characters');

/**
 * POST /api/v1/integrations (docs/api/settings-and-integrations.md): a Website integration (`domain`, answered
 * with its bearer key), or a Shopify or WooCommerce one (`secret`, `shop_domain` optional: learnt from the first
 * signed delivery when not given).
 */
export const createIntegrationSchema = z
  .object({
    platform: platformSchema.default('website'),
    domain: domainSchema.optional(),
    secret: secretSchema.optional(),
    shop_domain: domainSchema.optional(),
  })
  .superRefine((input, ctx) => {
    const required = isNativePlatform(input.platform) ? 'secret' : 'domain';
    if (input[required] === undefined) ctx.addIssue({ code: 'custom', path: [required], message: 'is required' });
  });
export type CreateIntegrationInput = z.infer<typeof createIntegrationSchema>;

/** PATCH /api/v1/integrations/{id}: `active:false` makes the webhook answer 404 at once. */
export const updateIntegrationSchema = z.object({
  active: z.boolean().optional(),
  domain: domainSchema.optional(),
});
export type UpdateIntegrationInput = z.infer<typeof updateIntegrationSchema>;

/** The integration record of the management API; the key and the secret are never part of it. */
export interface Integration {
  id: string;
  platform: string;
  /** The shop's host; empty for a platform integration until its first signed delivery names it. */
  domain: string;
  active: boolean;
  created_at: string;
  /** Shopify and WooCommerce: where the platform sends its webhooks. */
  webhook_url?: string;
  /** Shopify and WooCommerce, read one at a time: deliveries of topics emk does not use, by topic. */
  ignored_topics?: Record<string, number>;
}

export interface CreatedIntegration extends Integration {
  /** The webhook bearer key: shown once, stored only as a hash. */
  api_key: string;
}

/** A Shopify or WooCommerce integration as created (CONTRACT §8.3): no key, the URL to give the platform. */
export interface CreatedPlatformIntegration {
  id: string;
  platform: NativePlatform;
  webhook_url: string;
  active: boolean;
  created_at: string;
}

/** What an authenticated webhook request works with. */
export interface WebhookIntegration {
  id: string;
  workspaceId: string;
  platform: string;
  domain: string;
}

/** A Shopify or WooCommerce integration a delivery names, with the secret its signatures are checked with. */
export interface SignedIntegration extends WebhookIntegration {
  secret: string;
}

/** The integration record, as a schema: what the API documents for replies. */
export const integrationRecordSchema = z.object({
  id: z.string(),
  platform: z.string(),
  domain: z.string(),
  active: z.boolean(),
  created_at: z.string(),
  webhook_url: z.string().optional().describe('Shopify and WooCommerce: the URL to register with the platform'),
  ignored_topics: z
    .record(z.string(), z.number().int())
    .optional()
    .describe('Shopify and WooCommerce (GET of one integration): deliveries of topics emk does not use, by topic'),
}) satisfies z.ZodType<Integration>;

/** Created or rotated: the record with its webhook key, shown once. */
export const createdIntegrationSchema = integrationRecordSchema.extend({ api_key: z.string() }) satisfies z.ZodType<CreatedIntegration>;

export const createdPlatformIntegrationSchema = z.object({
  id: z.string(),
  platform: z.enum(NATIVE_PLATFORMS),
  webhook_url: z.string(),
  active: z.boolean(),
  created_at: z.string(),
}) satisfies z.ZodType<CreatedPlatformIntegration>;
