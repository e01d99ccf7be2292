import { z } from 'zod';
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
