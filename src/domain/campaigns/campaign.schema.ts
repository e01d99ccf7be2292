import { z } from 'zod';
import { emailSchema, text } from '../shared/validate.js';
import { parseTimestamp } from '../shared/time.js';
import { sendReportSchema, type SendReport } from '../shared/send-report.js';
import { CONTENT_FORMATS, type ContentFormat } from '../templates/content-formats.js';

/**
 * `testing`: an A/B campaign's test group is being sent, or sent and waiting for the test to end; then `sending`
 * (the winner to the rest) and `sent`. A campaign without variants never is `testing`.
 */
export const CAMPAIGN_STATUSES = ['draft', 'scheduled', 'testing', 'sending', 'sent'] as const;
export type CampaignStatus = (typeof CAMPAIGN_STATUSES)[number];

/** Templates are Liquid; at most 1 MiB each (a newsletter with inline styles stays far below). */
const template = text(1_048_576);

/** How a test's winner is chosen: its test messages' unique opens, unique clicks or attributed revenue (net). */
export const AB_METRICS = ['unique_opens', 'unique_clicks', 'revenue'] as const;
export type AbMetric = (typeof AB_METRICS)[number];
/** The longest wait between the test group's send and the winner's: 30 days. */
export const MAX_AB_WAIT_MINUTES = 43_200;

/** One variant: the campaign's subject, html and/or text part in its place (at least one of them). */
export const variantSchema = z
  .object({ subject: text(2_000).optional(), html: template.optional(), text: template.optional() })
  .refine((v) => v.subject !== undefined || v.html !== undefined || v.text !== undefined, 'must set subject, html or text');
export type Variant = z.output<typeof variantSchema>;

export const abTestSchema = z
  .object({
    test_share: z.number().gt(0, 'must be more than 0').max(1, 'must be at most 1'),
    metric: z.enum(AB_METRICS),
    wait_minutes: z.number().int().min(1, 'must be at least 1').max(MAX_AB_WAIT_MINUTES, `must be at most ${MAX_AB_WAIT_MINUTES}`),
  });
export type AbTest = z.output<typeof abTestSchema>;

const campaignFields = {
  name: text(255),
  subject: text(2_000),
  html: template,
  /** How `html` is written (docs/email.md, Formats). */
  format: z.enum(CONTENT_FORMATS, { error: `must be one of ${CONTENT_FORMATS.join(', ')}` }).optional(),
  text: template.nullable().optional(),
  segment_id: text(36).nullable().optional(),
  from_email: emailSchema.nullable().optional(),
  from_name: text(255).nullable().optional(),
  /** 2 to 4 variants; with `ab_test`, never one without the other. */
  variants: z.array(variantSchema).min(2, 'must have at least 2 entries').max(4, 'must have at most 4 entries').nullable().optional(),
  ab_test: abTestSchema.nullable().optional(),
};

/** POST /api/v1/campaigns. */
export const campaignCreateSchema = z.object(campaignFields);
export type CampaignCreate = z.output<typeof campaignCreateSchema>;

/** PATCH /api/v1/campaigns/{id}: the fields sent change, while the campaign is a draft. */
export const campaignUpdateSchema = z.object(campaignFields).partial();
export type CampaignUpdate = z.output<typeof campaignUpdateSchema>;

/** POST /api/v1/campaigns/{id}/send: now, or at `send_at` (RFC 3339). */
export const campaignSendSchema = z.object({
  send_at: text(64)
    .refine((value) => parseTimestamp(value) !== null, 'must be an RFC 3339 time')
    .transform((value) => parseTimestamp(value)!)
    .optional(),
});

/** `variant`: an A/B campaign's variant (its index) instead of the campaign's own content. */
export const campaignPreviewSchema = z.object({ contact_id: text(36), variant: z.coerce.number().int().min(0).optional() });

export interface Campaign {
  id: string;
  name: string;
  subject: string;
  html: string;
  format: ContentFormat;
  text: string | null;
  segment_id: string | null;
  from_email: string | null;
  from_name: string | null;
  status: CampaignStatus;
  send_at: string | null;
  sent_at: string | null;
  recipients: number | null;
  /** The A/B test's variants, or null. */
  variants: Variant[] | null;
  /** The test's settings, the winner's index once chosen and when the test ends once the test group is sent. */
  ab_test: (AbTest & { winner: number | null; test_ends_at: string | null }) | null;
  created_at: string;
  updated_at: string;
}

export const campaignRecordSchema = z.object({
  id: z.string(),
  name: z.string(),
  subject: z.string(),
  html: z.string(),
  format: z.enum(CONTENT_FORMATS),
  text: z.string().nullable(),
  segment_id: z.string().nullable(),
  from_email: z.string().nullable(),
  from_name: z.string().nullable(),
  status: z.enum(CAMPAIGN_STATUSES),
  send_at: z.string().nullable(),
  sent_at: z.string().nullable(),
  recipients: z.number().int().nullable(),
  variants: z.array(z.object({ subject: z.string().optional(), html: z.string().optional(), text: z.string().optional() })).nullable(),
  ab_test: z
    .object({
      test_share: z.number(),
      metric: z.enum(AB_METRICS),
      wait_minutes: z.number().int(),
      winner: z.number().int().nullable(),
      test_ends_at: z.string().nullable(),
    })
    .nullable(),
  created_at: z.string(),
  updated_at: z.string(),
}) satisfies z.ZodType<Campaign>;

export const campaignSendReplySchema = z.object({
  id: z.string(),
  status: z.enum(CAMPAIGN_STATUSES),
  recipients: z.number().int().nullable(),
});

export const campaignPreviewReplySchema = z.object({ to: z.string(), subject: z.string(), html: z.string(), text: z.string() });

/** One variant's line of an A/B campaign's report; the winner-phase messages count under the winner's index. */
export interface VariantReport {
  index: number;
  sent: number;
  unique_opens: number;
  unique_clicks: number;
  revenue: number;
  winner: boolean;
}

/** GET /campaigns/{id}/report: the send report, and for an A/B campaign its variants. */
export type CampaignReport = SendReport & { variants?: VariantReport[] };

export const campaignReportSchema = sendReportSchema.extend({
  variants: z
    .array(
      z.object({
        index: z.number().int(),
        sent: z.number().int(),
        unique_opens: z.number().int(),
        unique_clicks: z.number().int(),
        revenue: z.number(),
        winner: z.boolean(),
      }),
    )
    .optional(),
}) satisfies z.ZodType<CampaignReport>;
