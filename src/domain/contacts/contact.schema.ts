import { z } from 'zod';
import { emailSchema, jsonObject, looseText, text } from '../shared/validate.js';
import { timestampSchema } from '../shared/time.js';

export const SUBSCRIPTION_STATUSES = ['subscribed', 'unsubscribed', 'non_subscribed'] as const;
export type SubscriptionStatus = (typeof SUBSCRIPTION_STATUSES)[number];
export const subscriptionStatusSchema = z.enum(SUBSCRIPTION_STATUSES, {
  error: `must be one of ${SUBSCRIPTION_STATUSES.join(', ')}`,
});

export const anonymousIdSchema = text(255);

/** POST /collect/identify (the spec's table). */
export const identifySchema = z.object({
  email: emailSchema,
  properties: jsonObject.optional(),
  anonymous_id: anonymousIdSchema.optional(),
});
export type IdentifyInput = z.infer<typeof identifySchema>;

/** POST /api/v1/contacts: reconcile by email (docs/api/collect-and-contacts.md). */
export const upsertContactSchema = z.object({
  email: emailSchema,
  properties: jsonObject.optional(),
  subscription_status: subscriptionStatusSchema.optional(),
  source: text(255).optional(),
});
export type UpsertContactInput = z.infer<typeof upsertContactSchema>;

/** PATCH /api/v1/contacts/{id}: merge properties, change consent. */
export const updateContactSchema = z.object({
  properties: jsonObject.optional(),
  subscription_status: subscriptionStatusSchema.optional(),
});
export type UpdateContactInput = z.infer<typeof updateContactSchema>;

/** `true`/`false` as JSON or as the text of a CSV cell (any case; `yes`/`no`, `1`/`0` too). */
const flagSchema = z.union([
  z.boolean(),
  z
    .string()
    .trim()
    .toLowerCase()
    .pipe(z.enum(['true', 'false', 'yes', 'no', '1', '0'], { error: 'must be true or false' }))
    .transform((v) => v === 'true' || v === 'yes' || v === '1'),
]);

/** One row of `emk contacts import` (docs/cli.md, Contact lists): POST /contacts per row, plus consent and suppression. */
export const importContactSchema = z.object({
  email: emailSchema,
  first_name: looseText(255).optional(),
  last_name: looseText(255).optional(),
  phone: looseText(64).optional(),
  properties: jsonObject.optional(),
  subscription_status: subscriptionStatusSchema.default('non_subscribed'),
  /** When the person originally consented (the consent history entry's time); now when absent. */
  consented_at: timestampSchema.optional(),
  /** `true` adds the address to the suppressions (reason `import`). */
  suppressed: flagSchema.default(false),
});
export type ImportContactInput = z.output<typeof importContactSchema>;

/**
 * What one chunk of a contact import did: `created` new contacts, `updated` existing ones whose properties
 * changed (a re-run counts neither), `errors` rows refused, by index.
 */
export interface ContactImportResult {
  created: number;
  updated: number;
  errors: Array<{ index: number; email: string | null; error: string }>;
}

export const contactListQuerySchema = z.object({ email: looseText(320).optional() });

/** The contact record of the management API (docs/api/collect-and-contacts.md). */
export interface Contact {
  id: string;
  email: string;
  properties: Record<string, unknown>;
  subscription_status: SubscriptionStatus;
  source: string | null;
  anonymous_ids: string[];
  lifetime_revenue: number;
  orders_count: number;
  created_at: string;
  updated_at: string;
}

/** The contact record, as a schema: what the API documents for replies. */
export const contactRecordSchema = z.object({
  id: z.string(),
  email: z.string(),
  properties: z.record(z.string(), z.unknown()),
  subscription_status: z.enum(SUBSCRIPTION_STATUSES),
  source: z.string().nullable(),
  anonymous_ids: z.array(z.string()),
  lifetime_revenue: z.number().describe('Net of cancellations and refunds'),
  orders_count: z.number().int(),
  created_at: z.string(),
  updated_at: z.string(),
}) satisfies z.ZodType<Contact>;

/** POST /collect/identify reply. */
export const identifyReplySchema = z.object({ contact_id: z.string(), email: z.string() });

/** One entry of a contact's consent history. */
export interface ConsentChange {
  status: SubscriptionStatus;
  previous_status: SubscriptionStatus | null;
  origin: string;
  at: string;
}

export const consentChangeSchema = z.object({
  status: subscriptionStatusSchema,
  previous_status: subscriptionStatusSchema.nullable(),
  origin: z.string(),
  at: z.string(),
}) satisfies z.ZodType<ConsentChange>;

export const consentHistorySchema = z.object({ data: z.array(consentChangeSchema) });
