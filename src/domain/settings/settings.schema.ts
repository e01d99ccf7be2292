import { z } from 'zod';
import { domainSchema } from '../integrations/integration.schema.js';
import { emailSchema, looseText, text } from '../shared/validate.js';

/** Longest attribution window a workspace may set, in days. */
export const MAX_WINDOW_DAYS = 365;
/** The column is a 32-bit integer on PostgreSQL. */
const MAX_CONTACT_LIMIT = 2_147_483_647;
/** The longest event retention a workspace may set, in days (a hundred years: longer is `null`, keep everything). */
export const MAX_EVENT_RETENTION_DAYS = 36_500;

const unknownFields = (issue: z.core.$ZodRawIssue) =>
  issue.code === 'unrecognized_keys' ? `unknown field ${(issue.keys as string[]).join(', ')}` : undefined;

/** How many domains `own_domains` may list. */
export const MAX_OWN_DOMAINS = 100;

/**
 * `own_domains`: the shop's other domains, whose links get `_ir_id` (docs/email.md, Tracking). Each is kept as
 * a bare lower-case host, as an integration's domain is; it needs a dot, so no one lists a whole top-level domain.
 */
const ownDomainsSchema = z
  .array(domainSchema.refine((domain) => domain.replace(/:\d+$/, '').includes('.'), 'must be a domain such as shop.example.com'))
  .max(MAX_OWN_DOMAINS, `must list at most ${MAX_OWN_DOMAINS} domains`)
  .transform((domains) => [...new Set(domains)]);

/** The longest footer template (`footer_html`, `footer_text`): a footer is a few lines. */
export const MAX_FOOTER_CHARS = 65_536;
/** The longest postal address. */
export const MAX_POSTAL_ADDRESS_CHARS = 500;

/** A footer template (Liquid, checked like a campaign's at PATCH); `null` goes back to the default footer. */
const footerTemplate = text(MAX_FOOTER_CHARS).nullable().optional();
/** How many domains `domain_rates` may list, and the highest rate one may set (messages per minute; the pacer keeps the last minute's hand-over times, so at most 100,000 numbers per workspace and domain). */
export const MAX_DOMAIN_RATES = 100;
export const MAX_DOMAIN_RATE = 100_000;

/**
 * `domain_rates`: at most so many messages a minute to a recipient domain (docs/email.md, Rates), beside the
 * relay-wide `EMK_SMTP_RATE`. Keys are kept as bare lower-case hosts with a dot; a later spelling of a repeated
 * domain wins.
 */
const domainRatesSchema = z
  .record(
    z.string(),
    z
      .number()
      .int('must be a whole number of messages per minute')
      .min(1, 'must be at least 1 message per minute')
      .max(MAX_DOMAIN_RATE, `must be at most ${MAX_DOMAIN_RATE} messages per minute`),
  )
  .transform((rates, ctx) => {
    const entries = Object.entries(rates);
    if (entries.length > MAX_DOMAIN_RATES) {
      ctx.addIssue({ code: 'custom', message: `must list at most ${MAX_DOMAIN_RATES} domains` });
      return z.NEVER;
    }
    const kept: Record<string, number> = {};
    for (const [key, rate] of entries) {
      const domain = domainSchema.safeParse(key);
      if (!domain.success || domain.data !== key.trim().toLowerCase() || !domain.data.includes('.') || domain.data.includes(':')) {
        ctx.addIssue({ code: 'custom', path: [key], message: 'must be a recipient domain such as gmail.com' });
        return z.NEVER;
      }
      kept[domain.data] = rate;
    }
    return kept;
  });

const windowDays = z
  .number()
  .min(0, 'must be at least 0')
  .max(MAX_WINDOW_DAYS, `must be at most ${MAX_WINDOW_DAYS}`)
  .int();

/**
 * PATCH /api/v1/settings (docs/api/settings-and-integrations.md): only the fields sent change; `null` clears a nullable one. Unknown
 * fields are refused, so a misspelt setting is not silently ignored.
 */
export const updateSettingsSchema = z.strictObject(
  {
    click_window_days: windowDays.optional(),
    open_window_days: windowDays.optional(),
    contact_limit: z.number().min(0, 'must be at least 0').max(MAX_CONTACT_LIMIT, `must be at most ${MAX_CONTACT_LIMIT}`).int().nullable().optional(),
    sender: z
      .strictObject(
        {
          from_email: emailSchema.nullable().optional(),
          from_name: looseText(200).nullable().optional(),
        },
        { error: unknownFields },
      )
      .optional(),
    own_domains: ownDomainsSchema.nullable().optional(),
    footer_html: footerTemplate,
    footer_text: footerTemplate,
    /** Empty or `null` clears it. */
    postal_address: looseText(MAX_POSTAL_ADDRESS_CHARS)
      .nullable()
      .optional()
      .transform((address) => (address === '' ? null : address)),
    domain_rates: domainRatesSchema.nullable().optional(),
    /** The shop's currency (ISO 4217); `null` forgets it, so the next platform delivery that names one sets it again. */
    currency: z
      .string()
      .trim()
      .regex(/^[A-Za-z]{3}$/, 'must be a three-letter ISO 4217 code such as EUR')
      .transform((code) => code.toUpperCase())
      .nullable()
      .optional(),
    /** Events older than so many days are pruned (docs/operations.md, Retention); `null` keeps everything. */
    event_retention_days: z
      .number()
      .int('must be a whole number of days')
      .min(1, 'must be at least 1 day')
      .max(MAX_EVENT_RETENTION_DAYS, `must be at most ${MAX_EVENT_RETENTION_DAYS} days`)
      .nullable()
      .optional(),
  },
  { error: unknownFields },
);
export type UpdateSettingsInput = z.infer<typeof updateSettingsSchema>;

export interface Sender {
  from_email: string | null;
  from_name: string | null;
}

/** How the sender is stored (a JSON column): re-checked on the way out. */
export const storedSenderSchema = z
  .object({ from_email: z.string().nullable().catch(null), from_name: z.string().nullable().catch(null) })
  .partial()
  .catch({});

/** How `own_domains` is stored (a JSON column): re-checked on the way out. */
export const storedOwnDomainsSchema = z.array(z.string()).catch([]);

/** How `domain_rates` is stored (a JSON column): re-checked on the way out. */
export const storedDomainRatesSchema = z.record(z.string(), z.number().int().positive()).catch({});

/**
 * A workspace's settings: attribution windows, the contact limit (null = unlimited), the sender, its own domains,
 * the footer of its marketing mail (null: the default), its postal address and its per-domain send rates.
 */
export interface Settings {
  click_window_days: number;
  open_window_days: number;
  contact_limit: number | null;
  sender: Sender;
  own_domains: string[];
  footer_html: string | null;
  footer_text: string | null;
  postal_address: string | null;
  /** Messages per minute at most, by recipient domain; none by default. */
  domain_rates: Record<string, number>;
  /** Events older than so many days are pruned; null (the default) keeps everything. */
  event_retention_days: number | null;
  /** The shop's currency: prices and orders that arrive without one are in it; reports state it. */
  currency: string;
}

/** The settings record, as a schema: what the API documents for replies. */
export const settingsRecordSchema = z.object({
  click_window_days: z.number().int(),
  open_window_days: z.number().int(),
  contact_limit: z.number().int().nullable(),
  sender: z.object({ from_email: z.string().nullable(), from_name: z.string().nullable() }),
  own_domains: z.array(z.string()).describe('Domains whose links get `_ir_id`, besides those of the website integrations'),
  footer_html: z.string().nullable().describe('Liquid footer of marketing mail whose HTML lacks its unsubscribe link (null: the default footer)'),
  footer_text: z.string().nullable().describe('Liquid footer of the text part, when a template has one that lacks the link (null: the default)'),
  postal_address: z.string().nullable().describe('The postal address commercial mail carries (`workspace.postal_address`)'),
  domain_rates: z.record(z.string(), z.number().int()).describe('At most so many messages a minute per recipient domain'),
  event_retention_days: z.number().int().nullable().describe('Events older than so many days are pruned (null: kept for good)'),
  currency: z.string().describe("The shop's currency (ISO 4217): prices and orders that arrive without one are in it (default USD, or learnt from the first Shopify or WooCommerce order)"),
}) satisfies z.ZodType<Settings>;
