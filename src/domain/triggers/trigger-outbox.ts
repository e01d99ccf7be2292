import type { Knex } from 'knex';
import type { Db } from '../db/database.js';
import { chunk, chunkSizeFor } from '../db/bulk.js';
import { bulkInsert } from '../db/bulk-insert.js';
import type { Dialect } from '../db/dialect/dialect.js';
import { EmkError } from '../errors.js';
import { CART_EVENT_NAMES } from '../events/event-names.js';

/**
 * Facts the automation engine consumes (docs/flows.md). The flow triggers of the spec's "Flow triggers and
 * effects" table: `event` carries the event name (standard or custom); `cart` feeds abandoned-cart flows.
 * `segment_entered` is written when a contact enters a segment; `contact_changed` (properties, status, order
 * totals) only re-evaluates segments and fires no flow.
 */
export type TriggerType =
  | 'event'
  | 'shipping_information'
  | 'order_placed'
  | 'order_updated'
  | 'cart'
  | 'segment_entered'
  | 'contact_changed';

export interface TriggerFact {
  workspaceId: string;
  triggerType: TriggerType;
  eventName?: string | null;
  contactId: string | null;
  subjectType: 'event' | 'order' | 'cart' | 'shipment' | 'segment' | 'contact';
  subjectId: string;
  source?: string | null;
  payload?: Record<string, unknown>;
  at: number;
}

/**
 * Facts that are never read by contact (docs/flows.md): every event but cart activity, and contact changes.
 * They are most of what ingest writes, and an index keyed by contact costs a page per contact in every group
 * commit (issue 16), so the outbox's contact index holds only the other facts. The erasure finds these through
 * their subject: the contact's own events, or the contact itself.
 */
const NOT_READ_BY_CONTACT: readonly TriggerType[] = ['event', 'shipping_information', 'contact_changed'];

const sqlList = (values: readonly string[]) => values.map((value) => `'${value}'`).join(', ');

/**
 * The contact index's predicate, word for word as migration 202611251100 wrote it: SQLite uses a partial index
 * only for a query that carries its condition as one of its terms, and compares literals, not bound values.
 */
const READ_BY_CONTACT_SQL = `(trigger_type NOT IN (${sqlList(NOT_READ_BY_CONTACT)}) OR event_name IN (${sqlList(CART_EVENT_NAMES)}))`;

/** Refuses a read by contact of facts the contact index leaves out (it would find none of them). */
function assertReadByContact(kinds: { triggerTypes: TriggerType[]; eventNames?: string[] }): void {
  const outside =
    kinds.triggerTypes.some((type) => NOT_READ_BY_CONTACT.includes(type)) || (kinds.eventNames ?? []).some((name) => !CART_EVENT_NAMES.includes(name));
  if (outside) throw new EmkError(`facts ${JSON.stringify(kinds)} are not indexed by contact`, 'internal', 500);
}

/** A fact as the outbox stored it: `id` orders facts and names the trigger fact of an enrolment. */
export interface OutboxFact extends TriggerFact {
  id: number;
}

/** The trigger an event fires: `shipping_information` has its own, every other name the event trigger. */
export function triggerTypeForEvent(eventName: string): TriggerType {
  return eventName === 'shipping_information' ? 'shipping_information' : 'event';
}

/**
 * Records fired triggers in the durable outbox. Callers pass their own transaction, so the trigger is stored
 * exactly when the fact that fires it is: nothing is lost if the process dies after replying, and nothing
 * fires for a write that rolled back. Once the transaction commits, `onCommit` is told how many facts it
 * added: this process's worker is woken, and the table's statistics follow its growth (the worker claims the
 * oldest pending facts by index; with an empty table's statistics PostgreSQL read every pending fact instead:
 * docs/performance.md#fifth-pass-where-each-rows-cpu-goes-and-what-bounds-it); workers of other processes find
 * the facts by their short poll.
 */
export function createTriggerOutbox(dialect: Dialect, options: { onCommit?: (facts: number) => void } = {}) {
  const toFact = (row: Record<string, unknown>): OutboxFact => ({
    id: Number(row.id),
    workspaceId: row.workspace_id as string,
    triggerType: row.trigger_type as TriggerType,
    eventName: (row.event_name as string | null) ?? null,
    contactId: (row.contact_id as string | null) ?? null,
    subjectType: row.subject_type as TriggerFact['subjectType'],
    subjectId: row.subject_id as string,
    source: (row.source as string | null) ?? null,
    payload: dialect.readJson<Record<string, unknown>>(row.payload) ?? {},
    at: dialect.readNumber(row.created_at),
  });

  return {
    async record(trx: Knex.Transaction, facts: TriggerFact[]): Promise<void> {
      if (facts.length === 0) return;
      // Held until the transaction's next statement (its COMMIT, usually): one driver call for the group.
      await bulkInsert(
        trx,
        dialect,
        'trigger_outbox',
        facts.map((fact) => ({
          workspace_id: fact.workspaceId,
          trigger_type: fact.triggerType,
          event_name: fact.eventName ?? null,
          contact_id: fact.contactId,
          subject_type: fact.subjectType,
          subject_id: fact.subjectId,
          source: fact.source ?? null,
          payload: fact.payload ?? {},
          created_at: fact.at,
          processed_at: null,
        })),
        ['payload'],
        { hold: true },
      );
      const { onCommit } = options;
      if (onCommit) trx.executionPromise.then(() => onCommit(facts.length), () => {});
    },

    /**
     * The latest fact of these kinds recorded for a contact before or after fact `around` (null: none): a newer
     * cart event, an order since a cart. Facts keep the order writes committed in, whatever their clocks said.
     */
    async latestFactId(
      db: Db,
      contactId: string,
      around: { after: number } | { before: number },
      kinds: { triggerTypes: TriggerType[]; eventNames?: string[] },
    ): Promise<number | null> {
      assertReadByContact(kinds);
      const query = db('trigger_outbox')
        .where({ contact_id: contactId })
        .whereRaw(READ_BY_CONTACT_SQL)
        .where('id', 'after' in around ? '>' : '<', 'after' in around ? around.after : around.before)
        .where((q) => {
          q.whereIn('trigger_type', kinds.triggerTypes);
          if (kinds.eventNames?.length) q.orWhere((e) => e.where({ trigger_type: 'event' }).whereIn('event_name', kinds.eventNames!));
        })
        .max({ id: 'id' })
        .first();
      return dialect.readNullableNumber((await query)?.id);
    },

    /** The newest fact's id (0: none yet). */
    async lastFactId(db: Db): Promise<number> {
      const row = await db('trigger_outbox').max({ id: 'id' }).first();
      return dialect.readNullableNumber(row?.id) ?? 0;
    },

    async find(db: Db, id: number): Promise<OutboxFact | null> {
      const row = await db('trigger_outbox').where({ id }).first();
      return row ? toFact(row) : null;
    },

    /** For each of these contacts, its newest fact of these trigger types (contacts without one are absent). */
    async latestFactIds(db: Db, contactIds: string[], triggerTypes: TriggerType[]): Promise<Map<string, number>> {
      assertReadByContact({ triggerTypes });
      const latest = new Map<string, number>();
      for (const part of chunk([...new Set(contactIds)], chunkSizeFor(dialect, 1))) {
        const rows = await db('trigger_outbox')
          .whereIn('contact_id', part)
          .whereRaw(READ_BY_CONTACT_SQL)
          .whereIn('trigger_type', triggerTypes)
          .groupBy('contact_id')
          .select('contact_id', db.raw('MAX(id) AS id'));
        for (const row of rows as Array<{ contact_id: string; id: unknown }>) latest.set(row.contact_id, dialect.readNumber(row.id));
      }
      return latest;
    },

    /** Whether any fact waits (a read, so an idle worker's poll takes no write lock). */
    async hasPending(db: Db): Promise<boolean> {
      return (await db('trigger_outbox').whereNull('processed_at').first('id')) !== undefined;
    },

    /**
     * Takes the oldest unprocessed facts for this transaction: PostgreSQL passes over facts another process
     * is taking, so processes share the outbox without waiting; SQLite's one writer takes them in order.
     */
    async claim(trx: Knex.Transaction, limit: number): Promise<OutboxFact[]> {
      const rows = await dialect.forUpdateSkipLocked(trx('trigger_outbox').whereNull('processed_at').orderBy('id').limit(limit));
      return rows.map(toFact);
    },

    /**
     * Deletes every fact of the contacts (an erasure), before their events are deleted: those the contact index
     * holds, then the others by their subject: the contacts' events (a shipment's fact names its event too) or the
     * contacts themselves.
     */
    async deleteContactFacts(db: Db, workspaceId: string, contactIds: string[]): Promise<void> {
      const ofContacts = () => db('trigger_outbox').where({ workspace_id: workspaceId }).whereIn('contact_id', contactIds);
      await ofContacts().whereRaw(READ_BY_CONTACT_SQL).delete();
      await ofContacts()
        .whereIn('subject_id', db('events').where({ workspace_id: workspaceId }).whereIn('contact_id', contactIds).select('id'))
        .delete();
      await ofContacts().where({ subject_type: 'contact' }).whereIn('subject_id', contactIds).delete();
    },

    /** Marks facts consumed (with the error that made one be given up, if any), in the consuming transaction. */
    async markProcessed(db: Db, ids: number[], now: number, error: string | null = null): Promise<void> {
      for (const part of chunk(ids, chunkSizeFor(dialect, 1))) {
        await db('trigger_outbox').whereIn('id', part).update({ processed_at: now, ...(error === null ? {} : { error: error.slice(0, 2000) }) });
      }
    },
  };
}

export type TriggerOutbox = ReturnType<typeof createTriggerOutbox>;

/**
 * What a `contact_changed` fact says changed (its payload's `change`), so segments re-evaluate only the
 * conditions that read it: `profile` properties or status, `orders` the contact's orders (cancelled, refunded,
 * updated, synced), `events` earlier anonymous events now the contact's, `created` a new contact (any
 * condition may hold for it).
 */
export type ContactChange = 'created' | 'profile' | 'orders' | 'events';

export const contactChangedFact = (workspaceId: string, contactId: string, change: ContactChange, at: number): TriggerFact => ({
  workspaceId,
  triggerType: 'contact_changed',
  contactId,
  subjectType: 'contact',
  subjectId: contactId,
  payload: { change },
  at,
});
