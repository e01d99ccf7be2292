import { z } from 'zod';
import { text } from '../shared/validate.js';

/**
 * `queued`: written when the recipients were fixed, nothing rendered yet; `sending`: rendered and being handed
 * to the relay; then `captured` (no SMTP configured), `sent` or `failed` (with `error`). After the hand-over a
 * relay's webhook may report a sent message `bounced` (a permanent failure) or `complained` (marked as spam).
 */
export const MESSAGE_STATUSES = ['queued', 'sending', 'captured', 'sent', 'failed', 'bounced', 'complained'] as const;
export type MessageStatus = (typeof MESSAGE_STATUSES)[number];
export type MessageType = 'marketing' | 'transactional';

export const messageListQuerySchema = z.object({
  contact_id: text(36).optional(),
  campaign_id: text(36).optional(),
  flow_id: text(36).optional(),
});

export interface MessageRecord {
  id: string;
  contact_id: string;
  campaign_id: string | null;
  flow_id: string | null;
  enrollment_id: string | null;
  /** The A/B variant's index this message got (a campaign's A/B test), or null. */
  variant: number | null;
  to: string;
  subject: string | null;
  html: string | null;
  text: string | null;
  status: MessageStatus;
  error: string | null;
  sent_at: string | null;
  /** When the relay reported the receiving server took it (relay webhooks). */
  delivered_at: string | null;
  /** Temporary failures relays reported for it after the hand-over. */
  soft_bounces: number;
  opened_at: string | null;
  clicked_at: string | null;
  created_at: string;
}

export const messageRecordSchema = z.object({
  id: z.string(),
  contact_id: z.string(),
  campaign_id: z.string().nullable(),
  flow_id: z.string().nullable(),
  enrollment_id: z.string().nullable(),
  variant: z.number().int().nullable(),
  to: z.string(),
  subject: z.string().nullable(),
  html: z.string().nullable(),
  text: z.string().nullable(),
  status: z.enum(MESSAGE_STATUSES),
  error: z.string().nullable(),
  sent_at: z.string().nullable(),
  delivered_at: z.string().nullable(),
  soft_bounces: z.number().int(),
  opened_at: z.string().nullable(),
  clicked_at: z.string().nullable(),
  created_at: z.string(),
}) satisfies z.ZodType<MessageRecord>;
