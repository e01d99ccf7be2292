import { z } from 'zod';
import { emailSchema, text } from '../shared/validate.js';
import { parseTimestamp } from '../shared/time.js';
import { CONTENT_FORMATS, type ContentFormat } from '../templates/content-formats.js';

export const CAMPAIGN_STATUSES = ['draft', 'scheduled', 'sending', 'sent'] as const;
export type CampaignStatus = (typeof CAMPAIGN_STATUSES)[number];

/** Templates are Liquid; at most 1 MiB each (a newsletter with inline styles stays far below). */
const template = text(1_048_576);

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

export const campaignPreviewSchema = z.object({ contact_id: text(36) });

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
  created_at: z.string(),
  updated_at: z.string(),
}) satisfies z.ZodType<Campaign>;

export const campaignSendReplySchema = z.object({
  id: z.string(),
  status: z.enum(CAMPAIGN_STATUSES),
  recipients: z.number().int().nullable(),
});

export const campaignPreviewReplySchema = z.object({ to: z.string(), subject: z.string(), html: z.string(), text: z.string() });
