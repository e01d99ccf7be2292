import type { Knex } from 'knex';
import type { Dialect } from './dialect/dialect.js';

/** A table is analysed again once it has grown by this share of the rows it held when last analysed… */
const GROWTH_SHARE = 0.5;
/**
 * …and by at least this many rows: a few thousand rows are enough to be planned badly from the statistics of a
 * nearly empty table (below), and analysing a table that small reads it whole in milliseconds.
 */
const MIN_GROWTH_ROWS = 1_000;

/**
 * Keeps PostgreSQL's statistics in step with bulk loads. PostgreSQL plans from its statistics of a table, which
 * autovacuum refreshes only after a tenth of the table has changed, later under load, and never where it is off.
 * A bulk load outgrows them within a minute: with the statistics of an empty `events` table, a chunk's
 * dedupe-key lookup read every event of the workspace (152 ms at 340,000 events; the import fell from 8,200 to
 * 4,800 rows/s) where the (workspace, dedupe key) index takes 1.8 ms; likewise every webhook order's lookup by
 * key read every order of the workspace (4.2 ms at 13,000 orders, 0.12 ms analysed), and with the statistics of
 * 50 contacts each webhook group's lookup of its customers by email read every contact of the workspace
 * (4.5–6.5 ms at 2,000–4,000 contacts) instead of probing the (workspace, email) key. The writers report the
 * rows they add (event batches and imports their events, the order sync, the webhook and the API their orders,
 * every path the contacts it creates, every commit its trigger facts), each looked up by key in the next
 * write; a table grown by half since its last analysis (and by at least MIN_GROWTH_ROWS) is analysed again in
 * the background, one table at a time, so a load of N rows analyses a table about log₁.₅(N / 1,000) times,
 * and a table already large never during an ordinary load. SQLite's queries are written not to need statistics:
 * there nothing happens.
 */
export function createTableGrowth(knex: Knex, dialect: Dialect) {
  const tables = new Map<string, { analysedRows: number | null; addedSince: number }>();
  let running: Promise<void> = Promise.resolve();
  let busy = false;

  async function analyseGrown(): Promise<void> {
    for (const [table, state] of tables) {
      if (state.analysedRows === null) state.analysedRows = await dialect.analysedRows(knex, table);
      if (state.addedSince < Math.max(MIN_GROWTH_ROWS, state.analysedRows * GROWTH_SHARE)) continue;
      state.addedSince = 0;
      await dialect.analyzeAfterBulkLoad(knex, [table]);
      state.analysedRows = await dialect.analysedRows(knex, table);
    }
  }

  return {
    /** `rows` were committed to `table` by a bulk write. Never waits: an analysis runs behind. */
    added(table: string, rows: number): void {
      if (!dialect.plansFromStatistics || rows === 0) return;
      const state = tables.get(table) ?? { analysedRows: null, addedSince: 0 };
      state.addedSince += rows;
      tables.set(table, state);
      if (busy) return;
      busy = true;
      // Statistics only steer plans: a failed analysis (the pool closing under it) is retried on the next growth.
      running = analyseGrown()
        .catch(() => {})
        .finally(() => (busy = false));
    },

    /** Resolves once the analysis under way, if any, is over (before the database closes). */
    settled: (): Promise<void> => running,
  };
}

export type TableGrowth = ReturnType<typeof createTableGrowth>;
