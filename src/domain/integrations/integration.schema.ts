import { z } from 'zod';

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

/** POST /api/v1/integrations (docs/api/settings-and-integrations.md). */
export const createIntegrationSchema = z.object({
  platform: platformSchema.default('website'),
  domain: domainSchema,
});
export type CreateIntegrationInput = z.infer<typeof createIntegrationSchema>;

/** PATCH /api/v1/integrations/{id}: `active:false` makes the webhook answer 404 at once. */
export const updateIntegrationSchema = z.object({
  active: z.boolean().optional(),
  domain: domainSchema.optional(),
});
export type UpdateIntegrationInput = z.infer<typeof updateIntegrationSchema>;

/** The integration record of the management API; the key is never part of it. */
export interface Integration {
  id: string;
  platform: string;
  domain: string;
  active: boolean;
  created_at: string;
}

export interface CreatedIntegration extends Integration {
  /** The webhook bearer key: shown once, stored only as a hash. */
  api_key: string;
}

/** What an authenticated webhook request works with. */
export interface WebhookIntegration {
  id: string;
  workspaceId: string;
  platform: string;
  domain: string;
}

/** The integration record, as a schema: what the API documents for replies. */
export const integrationRecordSchema = z.object({
  id: z.string(),
  platform: z.string(),
  domain: z.string(),
  active: z.boolean(),
  created_at: z.string(),
}) satisfies z.ZodType<Integration>;

/** Created or rotated: the record with its webhook key, shown once. */
export const createdIntegrationSchema = integrationRecordSchema.extend({ api_key: z.string() }) satisfies z.ZodType<CreatedIntegration>;
