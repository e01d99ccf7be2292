import { chunk, chunkSizeFor } from '../db/bulk.js';
import type { Database } from '../db/database.js';
import { systemClock, type Clock } from '../shared/time.js';

/**
 * How long a consumed fact stays: past the longest wait a flow can set (91 days), so an abandoned-cart check
 * or an email step that looks back at a contact's history finds it.
 */
export const OUTBOX_RETENTION_MS = 120 * 86_400_000;

/** How often a process looks for facts to remove; a look costs a range read of the outbox's oldest ids. */
export const PRUNE_EVERY_MS = 3_600_000;

/** Facts looked at per call: the delete holds SQLite's one writer for a few milliseconds at a time. */
const PRUNE_BATCH = 1_000;

/** Trigger types kept for good: abandoned-cart flows compare a contact's newest order with its cart. */
export const KEPT_FOR_GOOD: ReadonlySet<string> = new Set(['order_placed']);

/**
 * Removes consumed trigger facts once nothing can read them again (docs/flows.md): consumed longer ago than
 * the retention, older than the oldest fact a pending job still names (`oldestFactInUse`, from the flow
 * engine: a cart check reads its cart fact and the facts after it), and not an order fact.
 *
 * It runs as one of the worker's drains: each call removes one batch, oldest ids first, and the worker calls it
 * again while it does something. The facts themselves say what is left to remove, so a restart forgets nothing;
 * what the process keeps in memory is where it stopped (below it every fact is removed or kept for good) and when
 * it last finished. Several processes may prune at once: a delete of removed rows removes nothing.
 */
export function createOutboxPruner(deps: {
  db: Database;
  oldestFactInUse: () => Promise<number | null>;
  clock?: Clock;
}) {
  const { db, oldestFactInUse } = deps;
  const { knex, dialect } = db;
  const clock = deps.clock ?? systemClock;
  let settledThrough = 0;
  let finishedAt = -Infinity;

  return {
    /** One batch: how many facts it went past, removed or kept for good (0: nothing to do until the next look). */
    async pruneOnce(): Promise<number> {
      const now = clock();
      if (now - finishedAt < PRUNE_EVERY_MS) return 0;
      const inUse = await oldestFactInUse();
      const rows: Array<{ id: unknown; trigger_type: string; processed_at: unknown }> = await knex('trigger_outbox')
        .where('id', '>', settledThrough)
        .orderBy('id')
        .limit(PRUNE_BATCH)
        .select('id', 'trigger_type', 'processed_at');
      const removable: number[] = [];
      let settled = settledThrough;
      let wentPast = 0;
      let reachedLive = rows.length < PRUNE_BATCH;
      for (const row of rows) {
        const id = dialect.readNumber(row.id);
        const processedAt = dialect.readNullableNumber(row.processed_at);
        // Facts are consumed in id order: the first one still live ends this look.
        if (processedAt === null || processedAt > now - OUTBOX_RETENTION_MS || (inUse !== null && id >= inUse)) {
          reachedLive = true;
          break;
        }
        if (!KEPT_FOR_GOOD.has(row.trigger_type)) removable.push(id);
        settled = id;
        wentPast++;
      }
      if (removable.length > 0) {
        await db.writeTransaction(async (trx) => {
          for (const part of chunk(removable, chunkSizeFor(dialect, 1))) await trx('trigger_outbox').whereIn('id', part).delete();
        });
      }
      settledThrough = settled;
      if (reachedLive) finishedAt = now;
      return wentPast;
    },
  };
}

export type OutboxPruner = ReturnType<typeof createOutboxPruner>;
