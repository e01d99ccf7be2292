import { z } from 'zod';
import { SUBSCRIPTION_STATUSES, type SubscriptionStatus } from '../contacts/contact.schema.js';
import { ValidationError } from '../errors.js';
import { canonicalEventName } from '../events/event-names.js';
import { MAX_INT, moneySchema } from '../shared/numbers.js';
import type { FieldPath } from '../shared/storable.js';
import { parseTimestamp } from '../shared/time.js';
import { checkValue, fieldName, jsonObject, storableString, text } from '../shared/validate.js';

export const PROPERTY_OPERATORS = ['equals', 'not_equals', 'contains', 'exists', 'not_exists', 'gt', 'lt'] as const;
export type PropertyOperator = (typeof PROPERTY_OPERATORS)[number];

/** Contact columns a property leaf may address besides the `properties` object (CONTRACT §7.5). */
export const CONTACT_FIELDS = ['email', 'source', 'subscription_status', 'created_at'] as const;
export type ContactField = (typeof CONTACT_FIELDS)[number];

/** Bounds of a count or an amount; either may be absent, not both. */
export interface Bounds {
  gte?: number;
  lte?: number;
}

export interface PropertyLeaf {
  property: string;
  operator: PropertyOperator;
  value?: string | number | boolean;
}
export interface EventLeaf {
  event: string;
  count: Bounds;
  within_days?: number;
}
export interface OrdersLeaf {
  orders: { count?: Bounds; revenue?: Bounds };
  within_days?: number;
}
export interface StatusLeaf {
  subscription_status: SubscriptionStatus;
}
export type ConditionLeaf = PropertyLeaf | EventLeaf | OrdersLeaf | StatusLeaf;
export type ConditionGroup = { all: Condition[] } | { any: Condition[] };
export type Condition = ConditionGroup | ConditionLeaf;
/** What a segment (or a flow's `filters`) holds: always a group at the top. */
export type SegmentConditions = ConditionGroup;

/** Groups inside groups: deep enough for any rule a person writes, shallow enough to keep the SQL small. */
export const MAX_CONDITION_DEPTH = 5;
/** Leaves in one set of conditions: each is a clause (some a subquery) evaluated per contact. */
export const MAX_CONDITION_LEAVES = 50;
/** A time window of up to ten years. */
const MAX_WITHIN_DAYS = 3650;

const withinDays = z.number().int().min(1).max(MAX_WITHIN_DAYS, `must be at most ${MAX_WITHIN_DAYS}`).optional();

function bounds<T extends z.ZodType<number>>(bound: T) {
  return z
    .strictObject({ gte: bound.optional(), lte: bound.optional() })
    .refine((b) => b.gte !== undefined || b.lte !== undefined, 'must have gte or lte')
    .refine((b) => b.gte === undefined || b.lte === undefined || b.gte <= b.lte, 'must have gte at most lte');
}
const countBounds = bounds(z.number().int().min(0, 'must not be negative').max(MAX_INT, `must be at most ${MAX_INT}`));
const revenueBounds = bounds(moneySchema({ numbersOnly: true }));

const propertyLeafSchema = z
  .strictObject({
    // One top-level key of `properties` (or a contact field); a double quote cannot be addressed in SQLite's JSON paths.
    property: text(255).refine((key) => !key.includes('"'), 'must not contain a double quote'),
    operator: z.enum(PROPERTY_OPERATORS),
    value: z.union([storableString().max(1000, 'must be at most 1000 characters'), z.number(), z.boolean()]).optional(),
  })
  .superRefine((leaf, ctx) => {
    const problem = propertyLeafProblem(leaf);
    if (problem) ctx.addIssue({ code: 'custom', path: [problem.field], message: problem.message });
  });

const eventLeafSchema = z.strictObject({
  event: text(255).transform(canonicalEventName),
  // Absent: did it at least once.
  count: countBounds.default({ gte: 1 }),
  within_days: withinDays,
});

const ordersLeafSchema = z.strictObject({
  orders: z
    .strictObject({ count: countBounds.optional(), revenue: revenueBounds.optional() })
    .refine((o) => o.count !== undefined || o.revenue !== undefined, 'must have count or revenue'),
  within_days: withinDays,
});

const statusLeafSchema = z.strictObject({ subscription_status: z.enum(SUBSCRIPTION_STATUSES) });

const OPERATORS_TAKING_NO_VALUE: readonly PropertyOperator[] = ['exists', 'not_exists'];

/** What each operator accepts, per field kind: the rules a zod shape cannot say alone. */
function propertyLeafProblem(leaf: { property: string; operator: PropertyOperator; value?: unknown }): { field: string; message: string } | null {
  const { property, operator, value } = leaf;
  if (OPERATORS_TAKING_NO_VALUE.includes(operator)) {
    return value === undefined ? null : { field: 'value', message: `must not be given with ${operator}` };
  }
  if (value === undefined) return { field: 'value', message: `is required with ${operator}` };
  const field = (CONTACT_FIELDS as readonly string[]).includes(property) ? (property as ContactField) : null;
  if (field === 'created_at') {
    if (operator === 'contains') return { field: 'operator', message: 'must be one of equals, not_equals, exists, not_exists, gt, lt for created_at' };
    return typeof value === 'string' && parseTimestamp(value) !== null ? null : { field: 'value', message: 'must be an RFC 3339 time for created_at' };
  }
  if (field !== null) {
    if (operator === 'gt' || operator === 'lt') return { field: 'operator', message: `must be one of equals, not_equals, contains, exists, not_exists for ${field}` };
    if (typeof value !== 'string') return { field: 'value', message: `must be a string for ${field}` };
    if (field === 'subscription_status' && operator !== 'contains' && !(SUBSCRIPTION_STATUSES as readonly string[]).includes(value)) {
      return { field: 'value', message: `must be one of ${SUBSCRIPTION_STATUSES.join(', ')}` };
    }
    return null;
  }
  if (operator === 'contains' && typeof value !== 'string') return { field: 'value', message: 'must be a string with contains' };
  if ((operator === 'gt' || operator === 'lt') && typeof value !== 'number') return { field: 'value', message: `must be a number with ${operator}` };
  return null;
}

/** The key that tells a leaf's kind, in the order they are recognised. */
const LEAF_SCHEMAS: Array<[string, z.ZodType<ConditionLeaf>]> = [
  ['property', propertyLeafSchema as z.ZodType<ConditionLeaf>],
  ['event', eventLeafSchema as z.ZodType<ConditionLeaf>],
  ['orders', ordersLeafSchema as z.ZodType<ConditionLeaf>],
  ['subscription_status', statusLeafSchema as z.ZodType<ConditionLeaf>],
];

const GROUP_KEYS = ['all', 'any'] as const;

const fail = (path: FieldPath, problem: string): never => {
  throw new ValidationError(`invalid request: ${fieldName(path)} ${problem}`);
};

/**
 * Parses segment conditions (and a flow's `filters`, which are the same language): `field` names the input
 * in messages (`conditions.all[2].operator must be one of …`). Event names come out canonical.
 */
export function parseConditions(value: unknown, field: string): SegmentConditions {
  let leaves = 0;
  const parseNode = (node: unknown, path: FieldPath, depth: number): Condition => {
    if (!node || typeof node !== 'object' || Array.isArray(node)) return fail(path, 'must be an object');
    const keys = Object.keys(node);
    const group = GROUP_KEYS.find((key) => key in node);
    if (group) {
      if (keys.length !== 1) fail(path, `must have only the key ${group}`);
      if (depth >= MAX_CONDITION_DEPTH) fail(path, `nests groups more than ${MAX_CONDITION_DEPTH} deep`);
      const items = (node as Record<string, unknown>)[group];
      if (!Array.isArray(items)) return fail([...path, group], 'must be an array');
      if (items.length === 0) fail([...path, group], 'must not be empty');
      const children = items.map((item, index) => parseNode(item, [...path, group, index], depth + 1));
      return (group === 'all' ? { all: children } : { any: children }) as ConditionGroup;
    }
    const kind = LEAF_SCHEMAS.find(([key]) => key in node);
    if (!kind) return fail(path, 'must be a condition: all, any, property, event, orders or subscription_status');
    if (++leaves > MAX_CONDITION_LEAVES) fail(path, `is past the limit of ${MAX_CONDITION_LEAVES} conditions`);
    const result = checkValue(kind[1], node, path);
    if (!result.success) throw new ValidationError(`invalid request: ${result.problem}`);
    return result.data;
  };

  if (!value || typeof value !== 'object' || Array.isArray(value) || !GROUP_KEYS.some((key) => key in value)) {
    return fail([field], 'must be an object with all or any');
  }
  return parseNode(value, [field], 0) as SegmentConditions;
}

/** What a set of conditions reads, so a change re-evaluates only the segments it can affect. */
export interface ConditionDependencies {
  /** Canonical names of the events counted. */
  events: Set<string>;
  orders: boolean;
  /** Properties, the contact fields or the subscription status. */
  contact: boolean;
  /** Some leaf counts within a moving time window. */
  timeWindow: boolean;
}

export function dependenciesOf(conditions: SegmentConditions): ConditionDependencies {
  const found: ConditionDependencies = { events: new Set(), orders: false, contact: false, timeWindow: false };
  const visit = (node: Condition) => {
    if ('all' in node) return node.all.forEach(visit);
    if ('any' in node) return node.any.forEach(visit);
    if ('event' in node) found.events.add(node.event);
    else if ('orders' in node) found.orders = true;
    else found.contact = true;
    if ('within_days' in node && node.within_days !== undefined) found.timeWindow = true;
  };
  visit(conditions);
  return found;
}

/** POST /api/v1/segments; `conditions` is checked by parseConditions (the route documents it as an object). */
export const segmentCreateSchema = z.object({ name: text(255), conditions: jsonObject });
/** PATCH /api/v1/segments/{id}: the fields sent change. */
export const segmentUpdateSchema = segmentCreateSchema.partial();

export interface Segment {
  id: string;
  name: string;
  conditions: SegmentConditions;
  member_count: number;
  created_at: string;
  updated_at: string;
}

export const segmentRecordSchema = z.object({
  id: z.string(),
  name: z.string(),
  conditions: z.record(z.string(), z.unknown()),
  member_count: z.number().int(),
  created_at: z.string(),
  updated_at: z.string(),
});

export interface SegmentMember {
  contact_id: string;
  email: string;
  entered_at: string;
}

export const segmentMemberSchema = z.object({
  contact_id: z.string(),
  email: z.string(),
  entered_at: z.string(),
}) satisfies z.ZodType<SegmentMember>;
