import type { Knex } from 'knex';
import type { Dialect, SqlFragment } from '../db/dialect/dialect.js';
import { NET_REVENUE_SQL } from '../orders/net-revenue.js';
import { parseTimestamp } from '../shared/time.js';
import type { Bounds, Condition, ContactField, EventLeaf, OrdersLeaf, PropertyLeaf } from './segment.schema.js';
import { CONTACT_FIELDS } from './segment.schema.js';

const DAY_MS = 86_400_000;

/** Joins fragments with an operator, each and the whole in parentheses (knex's whereRaw adds none). */
function join(parts: SqlFragment[], operator: 'AND' | 'OR'): SqlFragment {
  return { sql: `(${parts.map((p) => `(${p.sql})`).join(` ${operator} `)})`, bindings: parts.flatMap((p) => p.bindings) };
}

/** NOT that stays true when the condition is NULL (an absent property is "not equal" to anything). */
const not = (inner: SqlFragment): SqlFragment => ({ sql: `(CASE WHEN ${inner.sql} THEN 1 ELSE 0 END) = 0`, bindings: inner.bindings });

/** `a LIKE` pattern matching the text anywhere, the text's own `%` and `_` taken literally. */
const likePattern = (value: string) => `%${value.toLowerCase().replace(/[\\%_]/g, (ch) => `\\${ch}`)}%`;
const containsText = (expression: string, bindings: Knex.Value[], value: string): SqlFragment => ({
  sql: `lower(${expression}) LIKE ? ESCAPE '\\'`,
  bindings: [...bindings, likePattern(value)],
});

/**
 * A count of matching rows in the bounds that reads no more rows than the bounds need: "at least 3" stops at the
 * third, "at most 5" at the sixth (a contact with 4,000 views costs what one with 6 does).
 */
function countInBounds(rows: SqlFragment, bounds: Bounds): SqlFragment {
  const cap = bounds.lte === undefined ? bounds.gte! : bounds.lte + 1;
  return inBounds({ sql: `SELECT COUNT(*) FROM (${rows.sql} LIMIT ?) capped`, bindings: [...rows.bindings, cap] }, bounds);
}

/** A count (or sum) in the bounds: one subquery evaluated once. */
function inBounds(subquery: SqlFragment, { gte, lte }: Bounds): SqlFragment {
  if (lte === undefined) return { sql: `(${subquery.sql}) >= ?`, bindings: [...subquery.bindings, gte!] };
  if (gte === undefined) return { sql: `(${subquery.sql}) <= ?`, bindings: [...subquery.bindings, lte] };
  return { sql: `(${subquery.sql}) BETWEEN ? AND ?`, bindings: [...subquery.bindings, gte, lte] };
}

/** A contact column (email, source, subscription status, created_at) compared as the leaf says. */
function contactField(field: ContactField, leaf: PropertyLeaf): SqlFragment {
  const { operator, value } = leaf;
  const column = `c.${field}`;
  if (operator === 'exists') return { sql: `${column} IS NOT NULL`, bindings: [] };
  if (operator === 'not_exists') return { sql: `${column} IS NULL`, bindings: [] };
  if (field === 'created_at') {
    const at = parseTimestamp(String(value));
    const comparison = { equals: '=', not_equals: '<>', gt: '>', lt: '<' }[operator as 'equals' | 'not_equals' | 'gt' | 'lt'];
    return { sql: `${column} ${comparison} ?`, bindings: [at] };
  }
  if (operator === 'contains') return containsText(column, [], String(value));
  // Emails compare case-insensitively, through the column that keeps them lower-cased.
  const equals: SqlFragment = field === 'email' ? { sql: 'c.email_key = ?', bindings: [String(value).toLowerCase()] } : { sql: `${column} = ?`, bindings: [value!] };
  return operator === 'equals' ? equals : not(equals);
}

/** A key of the contact's `properties`. */
function propertyField(dialect: Dialect, leaf: PropertyLeaf): SqlFragment {
  const { property: key, operator, value } = leaf;
  switch (operator) {
    case 'exists':
      return dialect.jsonFieldPresent('c.properties', key);
    case 'not_exists':
      return not(dialect.jsonFieldPresent('c.properties', key));
    case 'equals':
      return dialect.jsonFieldEquals('c.properties', key, value!);
    case 'not_equals':
      return not(dialect.jsonFieldEquals('c.properties', key, value!));
    case 'contains': {
      // A text that holds the value (any case), or a list that has it as an element (tags).
      const text = dialect.jsonFieldString('c.properties', key);
      return join([containsText(text.sql, text.bindings, String(value)), dialect.jsonFieldHasElement('c.properties', key, String(value))], 'OR');
    }
    case 'gt':
    case 'lt': {
      const number = dialect.jsonFieldNumber('c.properties', key);
      return { sql: `(${number.sql}) ${operator === 'gt' ? '>' : '<'} ?`, bindings: [...number.bindings, value!] };
    }
  }
}

/** How many of the contact's events of that name (in the window): index (workspace_id, contact_id, event_name, created_at). */
function eventLeaf(leaf: EventLeaf, now: number): SqlFragment {
  const window = leaf.within_days === undefined ? null : now - leaf.within_days * DAY_MS;
  const filter = {
    sql: `SELECT 1 FROM events e WHERE e.workspace_id = c.workspace_id AND e.contact_id = c.id AND e.event_name = ?${window === null ? '' : ' AND e.created_at >= ?'}`,
    bindings: window === null ? [leaf.event] : [leaf.event, window],
  };
  const { gte, lte } = leaf.count;
  // The common shapes "did it" and "never did it" stop at the first row.
  if (gte === 1 && lte === undefined) return { sql: `EXISTS (${filter.sql})`, bindings: filter.bindings };
  if ((gte ?? 0) === 0 && lte === 0) return { sql: `NOT EXISTS (${filter.sql})`, bindings: filter.bindings };
  return countInBounds(filter, leaf.count);
}

/** The contact's orders (in the window by ordered_at): cancelled ones count for nothing, revenue is net of refunds. */
function ordersLeaf(leaf: OrdersLeaf, now: number): SqlFragment {
  const window = leaf.within_days === undefined ? null : now - leaf.within_days * DAY_MS;
  const from = `FROM orders o WHERE o.workspace_id = c.workspace_id AND o.contact_id = c.id${window === null ? '' : ' AND o.ordered_at >= ?'}`;
  const bindings = window === null ? [] : [window];
  const parts: SqlFragment[] = [];
  const { count } = leaf.orders;
  if (count) {
    const kept = { sql: `SELECT 1 ${from} AND o.cancelled_at IS NULL`, bindings };
    parts.push(count.gte === 1 && count.lte === undefined ? { sql: `EXISTS (${kept.sql})`, bindings } : countInBounds(kept, count));
  }
  if (leaf.orders.revenue) {
    parts.push(inBounds({ sql: `SELECT COALESCE(ROUND(SUM(${NET_REVENUE_SQL}), 4), 0) ${from}`, bindings }, leaf.orders.revenue));
  }
  return join(parts, 'AND');
}

/**
 * A node of the conditions as one boolean SQL expression over a `contacts` row aliased `c`: event and order
 * leaves are correlated subqueries on indexed columns; time windows end at `now` (the process's clock).
 */
function nodeSql(dialect: Dialect, node: Condition, now: number): SqlFragment {
  if ('all' in node) return join(node.all.map((child) => nodeSql(dialect, child, now)), 'AND');
  if ('any' in node) return join(node.any.map((child) => nodeSql(dialect, child, now)), 'OR');
  if ('event' in node) return eventLeaf(node, now);
  if ('orders' in node) return ordersLeaf(node, now);
  if ('property' in node) {
    const field = (CONTACT_FIELDS as readonly string[]).includes(node.property) ? (node.property as ContactField) : null;
    return field ? contactField(field, node) : propertyField(dialect, node);
  }
  return { sql: 'c.subscription_status = ?', bindings: [node.subscription_status] };
}

/** Conditions as SQL over `c` that no erased contact (a tombstone kept for its orders) meets. */
export const conditionsSql = (dialect: Dialect, conditions: Condition, now: number): SqlFragment =>
  join([{ sql: 'c.erased_at IS NULL', bindings: [] }, nodeSql(dialect, conditions, now)], 'AND');
