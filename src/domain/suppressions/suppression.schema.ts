import { z } from 'zod';
import { emailSchema, text } from '../shared/validate.js';

/**
 * Why an address gets no email: given by the caller, `hard_bounce` when a relay rejected it for good (at the
 * hand-over or later by webhook), or `complaint` when its recipient marked a mail as spam (relay webhooks).
 */
export const suppressionReasonSchema = text(64);
export const HARD_BOUNCE = 'hard_bounce';
export const COMPLAINT = 'complaint';
export const MANUAL = 'manual';

/** POST /api/v1/suppressions. */
export const suppressSchema = z.object({
  emails: z.array(emailSchema).min(1, 'must name at least one address').max(1000, 'must hold at most 1000 addresses'),
  reason: suppressionReasonSchema.optional(),
});

export const suppressionEmailParams = z.object({ email: emailSchema });

export interface Suppression {
  email: string;
  reason: string;
  created_at: string;
}

export const suppressionRecordSchema = z.object({
  email: z.string(),
  reason: z.string(),
  created_at: z.string(),
}) satisfies z.ZodType<Suppression>;

export const suppressReplySchema = z.object({ suppressed: z.number().int() });
