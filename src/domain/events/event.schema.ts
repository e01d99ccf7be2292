import { z } from 'zod';
import { timestampSchema } from '../shared/time.js';
import { anonymousIdSchema } from '../contacts/contact.schema.js';
import { emailSchema, jsonObject, text } from '../shared/validate.js';
import { canonicalEventName } from './event-names.js';

export const eventNameSchema = text(255).transform(canonicalEventName);
export const sourceSchema = text(255);
const contactIdSchema = text(64);

/** POST /collect/event (the spec's table; `source` is what the SDK's `config.platform` sends). */
export const collectEventSchema = z.object({
  event_name: eventNameSchema,
  email: emailSchema.optional(),
  contact_id: contactIdSchema.optional(),
  anonymous_id: anonymousIdSchema.optional(),
  properties: jsonObject.optional(),
  source: sourceSchema.optional(),
});
export type CollectEventInput = z.infer<typeof collectEventSchema>;

/** POST /api/v1/events (the spec's table). */
export const createEventSchema = z.object({
  contact_id: contactIdSchema,
  event_name: eventNameSchema,
  properties: jsonObject.optional(),
  source: sourceSchema.optional(),
});
export type CreateEventInput = z.infer<typeof createEventSchema>;

export const eventListQuerySchema = z.object({
  contact_id: contactIdSchema.optional(),
  event_name: eventNameSchema.optional(),
});

/** The spec's event record. */
export interface EventRecord {
  id: string;
  contact_id: string | null;
  event_name: string;
  properties: Record<string, unknown>;
  source: string | null;
  created_at: string;
}

/** Most events one batch call (POST or PUT /api/v1/events/batch) may carry: the spec's Limits. */
export const MAX_BATCH_EVENTS = 1000;

/** One row of POST /api/v1/events/batch (the spec's table). */
export const batchEventSchema = z.object({
  email: emailSchema,
  event_name: eventNameSchema,
  properties: jsonObject.optional(),
  source: sourceSchema.optional(),
  timestamp: timestampSchema.optional(),
});
export type BatchEventInput = z.infer<typeof batchEventSchema>;

/** `dedupe_key` as sent: text, or a number (CSV and JSON senders differ), at most 255 characters. */
const dedupeKeySchema = z.preprocess((v) => (typeof v === 'number' && Number.isFinite(v) ? String(v) : v), text(255));

/** One row of PUT /api/v1/events/batch (the spec's table). */
export const correctEventSchema = z.object({
  email: emailSchema,
  event_name: eventNameSchema,
  dedupe_key: dedupeKeySchema,
  timestamp: timestampSchema.optional(),
  source: sourceSchema.optional(),
  properties: jsonObject.optional(),
});
export type CorrectEventInput = z.infer<typeof correctEventSchema>;

/** The event record, as a schema: what the API documents for replies. */
export const eventRecordSchema = z.object({
  id: z.string(),
  contact_id: z.string().nullable(),
  event_name: z.string(),
  properties: z.record(z.string(), z.unknown()),
  source: z.string().nullable(),
  created_at: z.string(),
}) satisfies z.ZodType<EventRecord>;

const rowError = z.object({ index: z.number().int(), email: z.string(), error: z.string() });

/** POST /api/v1/events/batch as documented (the batch checks each row alone: a bad row is an `errors` entry). */
export const batchBodySchema = z.object({ events: z.array(batchEventSchema).max(MAX_BATCH_EVENTS) });
/** PUT /api/v1/events/batch as documented. */
export const correctBodySchema = z.object({ events: z.array(correctEventSchema).max(MAX_BATCH_EVENTS), upsert: z.boolean().optional() });
export const batchReplySchema = z.object({ processed: z.number().int(), skipped: z.number().int(), errors: z.array(rowError) });
export const correctReplySchema = z.object({
  updated: z.number().int(),
  inserted: z.number().int(),
  skipped: z.number().int(),
  errors: z.array(rowError),
});
