import { z } from 'zod';
import { sendReportSchema } from '../shared/send-report.js';
import { canonicalEventName } from '../events/event-names.js';
import { subscriptionStatusSchema } from '../contacts/contact.schema.js';
import { emailSchema, jsonObject, text } from '../shared/validate.js';
import { CONTENT_FORMATS } from '../templates/content-formats.js';

export const FLOW_STATUSES = ['draft', 'live', 'paused'] as const;
export type FlowStatus = (typeof FLOW_STATUSES)[number];

export const ENROLLMENT_STATUSES = ['active', 'waiting', 'completed', 'exited', 'failed'] as const;
export type EnrollmentStatus = (typeof ENROLLMENT_STATUSES)[number];

export const EXIT_REASONS = ['order_placed', 'filters', 'flow_deleted'] as const;
export type ExitReason = (typeof EXIT_REASONS)[number];

/** The longest wait: a delay step or an abandoned-cart wait (a quarter of a year, in minutes). */
export const MAX_DELAY_MINUTES = 131_400;
/** Abandoned-cart flows wait an hour unless told (Klaviyo's and Omnisend's default is of that order). */
export const DEFAULT_CART_DELAY_MINUTES = 60;

const minutes = z.number().min(0, 'must be at least 0').max(MAX_DELAY_MINUTES, `must be at most ${MAX_DELAY_MINUTES}`);

/** What starts a flow (docs/flows.md, Triggers). Event names are normalised as events are. */
export const flowTriggerSchema = z.discriminatedUnion('type', [
  z.object({ type: z.literal('event'), event_name: text(255).transform(canonicalEventName) }),
  z.object({ type: z.literal('order_placed') }),
  z.object({ type: z.literal('order_updated') }),
  z.object({ type: z.literal('shipping_information'), source_filter: text(255).default('all') }),
  z.object({ type: z.literal('abandoned_cart'), delay_minutes: minutes.positive('must be greater than 0').default(DEFAULT_CART_DELAY_MINUTES) }),
  z.object({ type: z.literal('browse_abandonment'), delay_minutes: minutes.positive('must be greater than 0').default(DEFAULT_CART_DELAY_MINUTES) }),
  z.object({ type: z.literal('segment_entered'), segment_id: text(36) }),
]);
export type FlowTrigger = z.output<typeof flowTriggerSchema>;
export type FlowTriggerType = FlowTrigger['type'];

/** Templates are Liquid, like a campaign's. */
const template = text(1_048_576);

/** How deep branches nest, and how many steps a flow holds in all (every path's steps counted). */
export const MAX_BRANCH_DEPTH = 5;
export const MAX_TOTAL_STEPS = 100;

const delayStep = z.object({ type: z.literal('delay'), minutes });
const emailStep = z.object({
  type: z.literal('email'),
  subject: text(2_000),
  html: template,
  /** How `html` is written (docs/email.md, Formats). */
  format: z.enum(CONTENT_FORMATS, { error: `must be one of ${CONTENT_FORMATS.join(', ')}` }).default('html'),
  text: template.nullable().optional(),
  from_email: emailSchema.nullable().optional(),
  from_name: text(255).nullable().optional(),
});
/** Merges properties and/or sets the subscription status (consent history origin `flow`). */
const updateContactStep = z.object({
  type: z.literal('update_contact'),
  properties: jsonObject.optional(),
  subscription_status: subscriptionStatusSchema.optional(),
});
/**
 * Headers a webhook step may not set: those of the message's framing and connection, and emk's own (the
 * signature, the idempotency key), which a receiver must be able to trust.
 */
const RESERVED_WEBHOOK_HEADERS = new Set(['host', 'content-type', 'content-length', 'transfer-encoding', 'connection', 'keep-alive', 'upgrade', 'te', 'trailer', 'expect', 'user-agent']);
export const MAX_WEBHOOK_HEADERS = 10;
const webhookHeaderName = z
  .string()
  .regex(/^[!#$%&'*+.^_`|~0-9A-Za-z-]{1,100}$/, 'must be a header name (letters, digits and !#$%&\'*+.^_`|~-, at most 100)')
  .refine((name) => !RESERVED_WEBHOOK_HEADERS.has(name.toLowerCase()) && !/^(x-emk-|proxy-)/i.test(name), 'is set by emk, not by the step');
/** A value of visible characters, spaces and tabs: no line break can start a header of its own. */
const webhookHeaderValue = z.string().max(1_000, 'must be at most 1000 characters').regex(/^[\t\x20-\x7e\x80-\uffff]*$/, 'must hold no line break or control character');

/**
 * POSTs the contact and trigger, signed; `secret` is generated at save when not given; `headers` (a partner's
 * API key, say) are sent with each call (docs/flows.md, Webhook steps).
 */
const webhookStep = z.object({
  type: z.literal('webhook'),
  url: text(2_048),
  secret: z.string().min(16, 'must be at least 16 characters').max(255, 'must be at most 255 characters').optional(),
  headers: z
    .record(webhookHeaderName, webhookHeaderValue)
    .refine((headers) => Object.keys(headers).length <= MAX_WEBHOOK_HEADERS, `must have at most ${MAX_WEBHOOK_HEADERS} entries`)
    .refine((headers) => new Set(Object.keys(headers).map((name) => name.toLowerCase())).size === Object.keys(headers).length, 'must not name a header twice')
    .optional(),
});

export type DelayStep = z.output<typeof delayStep>;
export type EmailStep = z.output<typeof emailStep>;
export type UpdateContactStep = z.output<typeof updateContactStep>;
export type WebhookStep = z.output<typeof webhookStep>;
/** Segment conditions (checked by the segments' parser at save), then the steps of each path. */
export interface BranchStep {
  type: 'branch';
  conditions: Record<string, unknown>;
  yes: FlowStep[];
  no: FlowStep[];
}
export type FlowStep = DelayStep | EmailStep | UpdateContactStep | WebhookStep | BranchStep;

/** The step union, its branch paths lists of `path` (a list of steps; see the two uses below). */
const stepUnion = (path: z.ZodType) =>
  z.discriminatedUnion('type', [delayStep, emailStep, updateContactStep, webhookStep, z.object({ type: z.literal('branch'), conditions: jsonObject, yes: path, no: path })]);
const pathOf = (step: z.ZodType) => z.array(step).max(50, 'must have at most 50 entries').default([]);

export const flowStepSchema: z.ZodType<FlowStep> = stepUnion(pathOf(z.lazy(() => flowStepSchema))) as unknown as z.ZodType<FlowStep>;

/**
 * What the OpenAPI document shows of a step: the same, but a branch's paths as lists of objects (the generator
 * cannot write a schema that refers to itself). The routes check with it ahead; the domain's parse checks every
 * nested step with flowStepSchema and names its place.
 */
const documentedFlowStepSchema = stepUnion(pathOf(z.record(z.string(), z.unknown()).describe('A step, as in `steps`')));

const flowFields = {
  name: text(255),
  status: z.enum(FLOW_STATUSES).default('draft'),
  trigger: flowTriggerSchema,
  steps: z.array(flowStepSchema).max(50, 'must have at most 50 entries').default([]),
  message_type: z.enum(['marketing', 'transactional']).default('marketing'),
  reentry: z.enum(['always', 'once']).default('always'),
  /** Segment conditions (docs/segments.md); checked by the segments' own parser, which names the place. */
  filters: jsonObject.nullable().optional(),
  smart_sending_hours: z.number().min(0, 'must be at least 0').max(8_760, 'must be at most 8760').default(0),
};

/** POST /api/v1/flows. */
export const flowCreateSchema = z.object(flowFields);

/** POST /api/v1/flows as the OpenAPI document shows it (documentedFlowStepSchema). */
export const flowCreateDocSchema = flowCreateSchema.extend({ steps: z.array(documentedFlowStepSchema).max(50, 'must have at most 50 entries').default([]) });

/** PATCH /api/v1/flows/{id}: only the fields sent change. */
export const flowUpdateSchema = z.object({
  name: flowFields.name,
  status: z.enum(FLOW_STATUSES),
  trigger: flowTriggerSchema,
  steps: z.array(flowStepSchema).max(50, 'must have at most 50 entries'),
  message_type: z.enum(['marketing', 'transactional']),
  reentry: z.enum(['always', 'once']),
  filters: flowFields.filters,
  smart_sending_hours: z.number().min(0, 'must be at least 0').max(8_760, 'must be at most 8760'),
}).partial();

export const flowUpdateDocSchema = flowUpdateSchema.extend({ steps: z.array(documentedFlowStepSchema).max(50, 'must have at most 50 entries').optional() });

export interface Flow {
  id: string;
  name: string;
  status: FlowStatus;
  trigger: FlowTrigger;
  steps: FlowStep[];
  message_type: 'marketing' | 'transactional';
  reentry: 'always' | 'once';
  filters: Record<string, unknown> | null;
  smart_sending_hours: number;
  created_at: string;
  updated_at: string;
}

export const flowRecordSchema = z.object({
  id: z.string(),
  name: z.string(),
  status: z.enum(FLOW_STATUSES),
  trigger: z.record(z.string(), z.unknown()).describe('`{type, …}`: event_name, source_filter, delay_minutes or segment_id by type'),
  steps: z.array(z.record(z.string(), z.unknown())),
  message_type: z.enum(['marketing', 'transactional']),
  reentry: z.enum(['always', 'once']),
  filters: z.record(z.string(), z.unknown()).nullable(),
  smart_sending_hours: z.number(),
  created_at: z.string(),
  updated_at: z.string(),
});

export interface Enrollment {
  id: string;
  flow_id: string;
  contact_id: string;
  trigger_event_id: string | null;
  status: EnrollmentStatus;
  current_step: number;
  step_path: string | null;
  next_run_at: string | null;
  exit_reason: ExitReason | null;
  created_at: string;
  updated_at: string;
}

export const enrollmentRecordSchema = z.object({
  id: z.string(),
  flow_id: z.string(),
  contact_id: z.string(),
  trigger_event_id: z.string().nullable().describe('The event, order, cart or segment that started it'),
  status: z.enum(ENROLLMENT_STATUSES),
  current_step: z.number().int().describe('Position of the next step in the flow\'s steps flattened (a branch, then its `yes` steps, then its `no` steps)'),
  step_path: z.string().nullable().describe('The next step as a path in the flow\'s steps (`2.yes.0`); null past the end'),
  next_run_at: z.string().nullable(),
  exit_reason: z.enum(EXIT_REASONS).nullable(),
  created_at: z.string(),
  updated_at: z.string(),
}) satisfies z.ZodType<Enrollment>;

/**
 * Where a step is in a flow (GET /flows/{id}/steps/{path}/preview.html): its index in `steps` (`2`), and inside a
 * step holding lists of steps, the list's name and the index in it (`2.yes.0`).
 */
export const stepPathSchema = z.object({
  path: text(200).regex(/^\d{1,3}(\.[a-z_]{1,32}\.\d{1,3})*$/, 'must be a step index such as 2, or a nested path such as 2.yes.0'),
});
/** `enrollment_id`: render with what that enrolment saw of its trigger (and for its contact); else the contact's latest. */
export const stepPreviewQuerySchema = z
  .object({ contact_id: text(36).optional(), enrollment_id: text(36).optional() })
  .refine((q) => q.contact_id !== undefined || q.enrollment_id !== undefined, { message: 'is required (or enrollment_id)', path: ['contact_id'] });

export const enrollmentListQuerySchema = z.object({ status: z.enum(ENROLLMENT_STATUSES).optional() });

export const webhookAttemptQuerySchema = z.object({ enrollment_id: text(36).optional() });

export const webhookAttemptRecordSchema = z.object({
  id: z.string(),
  enrollment_id: z.string(),
  step: z.number().int().describe('The webhook step\'s position (as `current_step` counts)'),
  attempt: z.number().int().describe('1 for the first call, up to 5'),
  status_code: z.number().int().nullable().describe('The answer\'s HTTP status; null when none came'),
  error: z.string().nullable().describe('Why the call failed; null for a 2xx answer'),
  duration_ms: z.number().int(),
  created_at: z.string(),
});

/** GET /flows/{id}/report: the campaign report's counts plus what became of the enrolments. */
export const flowReportSchema = sendReportSchema.extend({
  enrolled: z.number().int(),
  completed: z.number().int(),
  exited: z.number().int(),
});
export type FlowReport = z.output<typeof flowReportSchema>;
