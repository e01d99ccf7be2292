import type { Knex } from 'knex';
import { chunk, chunkSizeFor } from '../db/bulk.js';
import type { Database } from '../db/database.js';
import type { MonthlyPartitions } from '../db/dialect/postgres-partitions.js';
import { KEPT_FOR_GOOD } from '../triggers/outbox-pruner.js';
import type { SettingsService } from '../settings/settings-service.js';
import { systemClock, type Clock } from '../shared/time.js';

const DAY_MS = 86_400_000;

/** How often a process begins a look for events past their workspace's retention. */
export const EVENT_PRUNE_EVERY_MS = 3_600_000;

/** Events looked at per call: each batch's delete is its own short write transaction, so ingest waits little. */
export const EVENT_PRUNE_BATCH = 5_000;

/** Months of partitions kept ready past the current one (PostgreSQL). */
export const MONTHS_AHEAD = 2;

/** How long a month's detach waits for its lock on `events` before it gives up until the next look. */
const DETACH_LOCK_WAIT_MS = 2_000;

interface WorkspaceCursor {
  workspaceId: string;
  /** Events created before this are past the retention (fixed when the look began). */
  before: number;
  /** The last event looked at, in (created_at, id) order; null: none yet. */
  after: { at: number; id: string } | null;
}

/**
 * Deletes events older than their workspace's `event_retention_days` (docs/operations.md, Retention), like the
 * outbox pruner: one of the worker's drains, each call one batch through the (workspace_id, created_at) index,
 * called again while it does something, a look at most once an hour. An event a live trigger fact names is kept
 * (not yet consumed, kept for good, or read again by a waiting flow job); the consumed facts naming an event go
 * with it. The flow engine copies what it reads of a fact's event into the enrolment when it consumes the fact,
 * so nothing reads a consumed fact's event again. Nothing reads old events for totals either: rankings'
 * aggregates, orders, revenue, attribution and engagements are tables of their own.
 *
 * On PostgreSQL `events` is partitioned by month (postgres-partitions.ts): each look first creates the months
 * ahead, then drops the months wholly past the retention, and batches go through what is left (the month the
 * cut-off falls in, the default partition, a month a kept event holds back).
 *
 * What the process keeps in memory is the look in hand (where it stopped in each workspace); a restart begins a
 * new look, and several processes may prune at once: a delete of removed rows removes nothing.
 */
export function createEventPruner(deps: {
  db: Database;
  settings: Pick<SettingsService, 'eventRetentions'>;
  clock?: Clock;
  /** Events per batch (tests make it small). */
  batchSize?: number;
}) {
  const { db, settings } = deps;
  const { knex, dialect } = db;
  const clock = deps.clock ?? systemClock;
  const batchSize = deps.batchSize ?? EVENT_PRUNE_BATCH;
  let look: WorkspaceCursor[] | null = null;
  let lookBeganAt = -Infinity;
  let removedThisLook = 0;
  let droppedThisLook: string[] = [];

  /**
   * Facts that keep the event they name (the outbox pruner's live facts): not yet consumed, kept for good, or read
   * again by a waiting flow job (ids from `inUse` on). A consumed fact nothing will read again keeps nothing: it
   * goes with its event, so the retention is honoured down to a day and an erasure, which finds a contact's
   * facts through their events, still finds every fact left.
   */
  const pinning = (facts: Knex.QueryBuilder, inUse: number | null) =>
    facts.where((pin) => {
      pin.whereNull('trigger_outbox.processed_at').orWhereIn('trigger_outbox.trigger_type', [...KEPT_FOR_GOOD]);
      if (inUse !== null) pin.orWhere('trigger_outbox.id', '>=', inUse);
    });

  /** Events no pinning fact names (the facts' subject index answers each). */
  const unpinned = (query: Knex.QueryBuilder, conn: Knex | Knex.Transaction, table: string, inUse: number | null) =>
    query.whereNotExists(pinning(conn('trigger_outbox').whereRaw(`trigger_outbox.subject_id = ${table}.id`), inUse).select(conn.raw('1')));

  /**
   * The next batch of one workspace's events past its retention that no fact pins, oldest first. The events a
   * fact keeps are skipped inside the database: a look walks past them in one range scan, not batch by batch.
   */
  async function nextBatch(cursor: WorkspaceCursor, inUse: number | null): Promise<Array<{ id: string; at: number }>> {
    const { after } = cursor;
    const rows: Array<{ id: string; created_at: unknown }> = await knex('events')
      .where({ workspace_id: cursor.workspaceId })
      .where('created_at', '<', cursor.before)
      .modify((query) => {
        if (after) query.where('created_at', '>=', after.at).where((past) => past.where('created_at', '>', after.at).orWhere('id', '>', after.id));
      })
      .modify((query) => unpinned(query, knex, 'events', inUse))
      .orderBy([{ column: 'created_at' }, { column: 'id' }])
      .limit(batchSize)
      .select('id', 'created_at');
    return rows.map((row) => ({ id: row.id, at: dialect.readNumber(row.created_at) }));
  }

  /**
   * Removes a batch and the consumed facts that named it, in one short write transaction; checked again there,
   * so a fact written since keeps its event.
   */
  function remove(ids: string[], inUse: number | null): Promise<number> {
    return db.writeTransaction(async (trx) => {
      let removed = 0;
      for (const part of chunk(ids, chunkSizeFor(dialect, 1))) {
        removed += await unpinned(trx('events').whereIn('id', part), trx, 'events', inUse).delete();
        await trx('trigger_outbox')
          .whereIn('subject_id', part)
          .whereNotExists(trx('events').whereRaw('events.id = trigger_outbox.subject_id').select(trx.raw('1')))
          .delete();
      }
      return removed;
    });
  }

  /**
   * PostgreSQL: drops each month partition wholly past the retention of every workspace holding rows in it, when
   * no fact pins one of its events (otherwise its rows go by batches like any other). The month is detached first
   * (a brief exclusive lock on `events`, given up after DETACH_LOCK_WAIT_MS: ingest never queues long behind it),
   * looked at again once detached (a row that came in meanwhile puts it back), its facts deleted, then dropped.
   */
  async function dropPastMonths(partitions: MonthlyPartitions, retentions: Array<{ workspaceId: string; days: number }>, now: number, inUse: () => Promise<number | null>) {
    for (const month of await partitions.list(knex, 'events')) {
      const covering = retentions.filter(({ days }) => now - days * DAY_MS >= month.to).map(({ workspaceId }) => workspaceId);
      // Months are in order: one no workspace's retention covers is followed by none that is covered.
      if (covering.length === 0) break;
      if (await holdsKept(month.name, covering, await inUse())) continue;
      if (!(await partitions.detach(knex, 'events', month, DETACH_LOCK_WAIT_MS))) continue;
      if (await holdsKept(month.name, covering, await inUse())) {
        await partitions.attach(knex, 'events', month);
        continue;
      }
      await knex.transaction(async (trx) => {
        await trx('trigger_outbox').whereIn('subject_id', trx(month.name).select('id')).delete();
        await trx.schema.dropTable(month.name);
      });
      droppedThisLook.push(month.name);
    }
  }

  /** Whether a month holds an event of a workspace that keeps it, or one a fact pins. */
  async function holdsKept(table: string, covering: string[], inUse: number | null): Promise<boolean> {
    const keeping: string[] = (await knex('workspaces').whereNotIn('id', covering).select('id')).map((row: { id: string }) => row.id);
    for (const part of chunk(keeping, 1_000)) {
      if (await knex(table).whereIn('workspace_id', part).first(knex.raw('1'))) return true;
    }
    const pinned = await pinning(knex('trigger_outbox').join(table, `${table}.id`, 'trigger_outbox.subject_id'), inUse).first(knex.raw('1'));
    return pinned !== undefined;
  }

  /**
   * SQLite keeps a deleted row's pages in the file for later writes; only a file made with incremental
   * auto-vacuum can give them back without rewriting the whole file (emk's files are not: space is reused).
   */
  async function reclaimSpace(): Promise<void> {
    if (dialect.name !== 'sqlite') return;
    const [mode] = (await knex.raw('PRAGMA auto_vacuum')) as Array<{ auto_vacuum: number }>;
    if (Number(mode?.auto_vacuum) === 2) await knex.raw('PRAGMA incremental_vacuum');
  }

  return {
    /**
     * One batch: how many events it removed (0: nothing to do until the next look). A look begins at most once an
     * hour; on PostgreSQL it first creates the months ahead and drops the months wholly past the retention.
     * `oldestFactInUse` (the flow engine's): facts from it on are read again by a waiting job, and keep their events.
     */
    async pruneOnce(oldestFactInUse: () => Promise<number | null>): Promise<number> {
      if (look === null) {
        const now = clock();
        if (now - lookBeganAt < EVENT_PRUNE_EVERY_MS) return 0;
        const retentions = await settings.eventRetentions();
        lookBeganAt = now;
        removedThisLook = 0;
        droppedThisLook = [];
        const partitions = dialect.monthlyPartitions;
        if (partitions) {
          await partitions.ensureAhead(knex, 'events', now, MONTHS_AHEAD);
          await dropPastMonths(partitions, retentions, now, oldestFactInUse);
        }
        look = retentions.map(({ workspaceId, days }) => ({ workspaceId, before: now - days * DAY_MS, after: null }));
        if (droppedThisLook.length > 0) return droppedThisLook.length;
      }
      for (let cursor = look[0]; cursor; cursor = look[0]) {
        const inUse = await oldestFactInUse();
        const batch = await nextBatch(cursor, inUse);
        if (batch.length < batchSize) look.shift();
        const last = batch.at(-1);
        if (!last) continue;
        cursor.after = last;
        removedThisLook += await remove(
          batch.map((event) => event.id),
          inUse,
        );
        return batch.length;
      }
      look = null;
      if (removedThisLook > 0) await reclaimSpace();
      return 0;
    },

    /** The month partitions the current (or last) look dropped (PostgreSQL). */
    droppedMonths: (): readonly string[] => droppedThisLook,
  };
}

export type EventPruner = ReturnType<typeof createEventPruner>;
