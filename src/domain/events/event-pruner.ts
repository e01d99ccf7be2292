import type { Knex } from 'knex';
import { chunk, chunkSizeFor } from '../db/bulk.js';
import type { Database } from '../db/database.js';
import type { SettingsService } from '../settings/settings-service.js';
import { systemClock, type Clock } from '../shared/time.js';

const DAY_MS = 86_400_000;

/** How often a process begins a look for events past their workspace's retention. */
export const EVENT_PRUNE_EVERY_MS = 3_600_000;

/** Events looked at per call: each batch's delete is its own short write transaction, so ingest waits little. */
export const EVENT_PRUNE_BATCH = 5_000;

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
 * called again while it does something, a look at most once an hour. An event a trigger fact still names is kept
 * (whatever the fact's type: a shipment's fact names its event too): the flow engine reads a fact's event while
 * the fact lives, and the outbox pruner keeps a fact as long as a waiting job names it. Nothing else reads old
 * events for totals: rankings' aggregates, orders, revenue, attribution and engagements are tables of their own.
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

  /** Events no trigger fact names (the fact's subject index answers each). */
  const unreferenced = (query: Knex.QueryBuilder, conn: Knex | Knex.Transaction) =>
    query.whereNotExists(conn('trigger_outbox').whereRaw('trigger_outbox.subject_id = events.id').select(conn.raw('1')));

  /**
   * The next batch of one workspace's events past its retention that no fact names, oldest first. The events a
   * fact keeps are skipped inside the database: a look walks past them in one range scan, not batch by batch.
   */
  async function nextBatch(cursor: WorkspaceCursor): Promise<Array<{ id: string; at: number }>> {
    const { after } = cursor;
    const rows: Array<{ id: string; created_at: unknown }> = await knex('events')
      .where({ workspace_id: cursor.workspaceId })
      .where('created_at', '<', cursor.before)
      .modify((query) => {
        if (after) query.where('created_at', '>=', after.at).where((past) => past.where('created_at', '>', after.at).orWhere('id', '>', after.id));
      })
      .modify((query) => unreferenced(query, knex))
      .orderBy([{ column: 'created_at' }, { column: 'id' }])
      .limit(batchSize)
      .select('id', 'created_at');
    return rows.map((row) => ({ id: row.id, at: dialect.readNumber(row.created_at) }));
  }

  /** Removes a batch, in one short write transaction; checked again there, so a fact written since keeps its event. */
  function remove(ids: string[]): Promise<number> {
    return db.writeTransaction(async (trx) => {
      let removed = 0;
      for (const part of chunk(ids, chunkSizeFor(dialect, 1))) removed += await unreferenced(trx('events').whereIn('id', part), trx).delete();
      return removed;
    });
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
    /** One batch: how many events it removed (0: nothing to do until the next look). */
    async pruneOnce(): Promise<number> {
      if (look === null) {
        const now = clock();
        if (now - lookBeganAt < EVENT_PRUNE_EVERY_MS) return 0;
        look = (await settings.eventRetentions()).map(({ workspaceId, days }) => ({ workspaceId, before: now - days * DAY_MS, after: null }));
        lookBeganAt = now;
        removedThisLook = 0;
      }
      for (let cursor = look[0]; cursor; cursor = look[0]) {
        const batch = await nextBatch(cursor);
        if (batch.length < batchSize) look.shift();
        const last = batch.at(-1);
        if (!last) continue;
        cursor.after = last;
        removedThisLook += await remove(batch.map((event) => event.id));
        return batch.length;
      }
      look = null;
      if (removedThisLook > 0) await reclaimSpace();
      return 0;
    },
  };
}

export type EventPruner = ReturnType<typeof createEventPruner>;
