import { z } from 'zod';
import { timestampSchema } from '../shared/time.js';
import { emailSchema, jsonObject, looseText, storableString, text } from '../shared/validate.js';

/** Segment's HTTP Tracking API limits: one message, and one batch request. */
export const MAX_MESSAGE_BYTES = 32 * 1024;
export const MAX_BATCH_BYTES = 500 * 1024;

/** The message types stored; `screen` and `group` are accepted and not stored (docs/api/segment.md). */
export const MESSAGE_TYPES = ['identify', 'track', 'page', 'alias', 'screen', 'group'] as const;
export type MessageType = (typeof MESSAGE_TYPES)[number];

/**
 * Ids as clients send them: text, or a number (some servers send numeric user ids). At most 240 characters,
 * so that `user_id:<id>`, the key of events waiting for their user to be identified, fits the 255 of the
 * events' `anonymous_id` column.
 */
const idSchema = z.preprocess((v) => (typeof v === 'number' && Number.isFinite(v) ? String(v) : v), text(240));

/** An email trait: `null` or empty means none (analytics.js sends what the page had). */
const emailTrait = z.preprocess((v) => (v === null || v === '' ? undefined : v), emailSchema.optional());

/** Traits (identify's, or `context.traits`): any storable JSON object; `email` must be an email when present. */
const traitsSchema = jsonObject.pipe(z.looseObject({ email: emailTrait }));

const pageText = storableString().max(MAX_MESSAGE_BYTES).optional();

const contextSchema = z.looseObject({
  traits: traitsSchema.optional(),
  page: z.looseObject({ url: pageText, title: pageText, referrer: pageText, path: pageText, search: pageText }).optional(),
});

/** What every message may carry (Segment's common fields); unknown fields are ignored. */
const common = {
  messageId: text(255).optional(),
  timestamp: timestampSchema.optional(),
  userId: idSchema.optional(),
  anonymousId: idSchema.optional(),
  context: contextSchema.optional(),
};

export const identifyMessageSchema = z.looseObject({ type: z.literal('identify'), ...common, traits: traitsSchema.optional() });
export const trackMessageSchema = z.looseObject({
  type: z.literal('track'),
  ...common,
  event: text(255),
  properties: jsonObject.optional(),
});
export const pageMessageSchema = z.looseObject({
  type: z.literal('page'),
  ...common,
  name: looseText(255).optional(),
  category: looseText(255).optional(),
  properties: jsonObject.optional(),
});
export const aliasMessageSchema = z.looseObject({ type: z.literal('alias'), ...common, previousId: idSchema, userId: idSchema });
/** Accepted so that a client's batch is not refused over them; nothing is stored. */
export const ignoredMessageSchema = z.looseObject({ type: z.enum(['screen', 'group']), ...common });

export const MESSAGE_SCHEMAS = {
  identify: identifyMessageSchema,
  track: trackMessageSchema,
  page: pageMessageSchema,
  alias: aliasMessageSchema,
  screen: ignoredMessageSchema,
  group: ignoredMessageSchema,
} as const;

export type IdentifyMessage = z.output<typeof identifyMessageSchema>;
export type TrackMessage = z.output<typeof trackMessageSchema>;
export type PageMessage = z.output<typeof pageMessageSchema>;
export type AliasMessage = z.output<typeof aliasMessageSchema>;
export type SegmentMessage = IdentifyMessage | TrackMessage | PageMessage | AliasMessage;

export const messageTypeSchema = z.enum(MESSAGE_TYPES);

/** The write key in the body (the other place for it is the HTTP Basic user). */
const writeKey = { writeKey: z.string().optional().describe('The workspace site id, when not sent as the HTTP Basic user') };

/** The single-message routes' bodies as documented (`type` is implied by the path). */
export const singleBodySchemas = {
  identify: identifyMessageSchema.omit({ type: true }).extend(writeKey),
  track: trackMessageSchema.omit({ type: true }).extend(writeKey),
  page: pageMessageSchema.omit({ type: true }).extend(writeKey),
  alias: aliasMessageSchema.omit({ type: true }).extend(writeKey),
  screen: ignoredMessageSchema.omit({ type: true }).extend(writeKey),
  group: ignoredMessageSchema.omit({ type: true }).extend(writeKey),
};

/** POST /v1/batch and /v1/import as documented: each message checked alone, a refused one named `batch[i]`. */
export const batchBodySchema = z.looseObject({
  ...writeKey,
  batch: z.array(z.discriminatedUnion('type', [identifyMessageSchema, trackMessageSchema, pageMessageSchema, aliasMessageSchema, ignoredMessageSchema])),
  context: contextSchema.optional().describe("Merged into each message that has no `context` of its own"),
});

export const successReplySchema = z.object({ success: z.literal(true) });
