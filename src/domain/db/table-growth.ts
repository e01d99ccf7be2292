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
 * A bulk load outgrows them within a minute; planned from the statistics of a nearly empty table, the writes'
 * lookups by key (events by dedupe key, orders by key, contacts by email) read every row of the workspace
 * instead of probing their index, so the import and the webhook slowed as the tables grew
 * (docs/performance.md#fourth-pass-the-nightly-jobs-on-postgresql,
 * docs/performance.md#fifth-pass-where-each-rows-cpu-goes-and-what-bounds-it,
 * docs/performance.md#eighth-pass-statistics-from-the-first-thousand-rows-the-outboxs-contact-index). The writers
 * report the rows they add (event batches and imports their events, the order sync, the webhook and the API their
 * orders, every path the contacts it creates, every commit its trigger facts), each looked up by key in the next
 * write; a table grown by half since its last analysis (and by at least MIN_GROWTH_ROWS) is analysed again in
 * the background, one table at a time, so a load of N rows analyses a table about log₁.₅(N / 1,000) times,
 * and a table already large never during an ordinary load. SQLite's queries are written not to need statistics:
 * there nothing happens.
 */
export function createTableGrowth(knex: Knex, dialect: Dialect) {
  const tables = new Map<string, { analysedRows: number | null; addedSince: number }>();
  let running: Promise<void> = Promise.resolve();
  let busy = false;

  /**
   * Passes over the tables until one analyses none: rows reported while an analysis ran were not looked at by the
   * pass under way, and the load that reported them may have ended (its last batches then stay unanalysed).
   */
  async function analyseGrown(): Promise<void> {
    for (let analysed = true; analysed; ) {
      analysed = false;
      for (const [table, state] of tables) {
        if (state.analysedRows === null) state.analysedRows = await dialect.analysedRows(knex, table);
        if (state.addedSince < Math.max(MIN_GROWTH_ROWS, state.analysedRows * GROWTH_SHARE)) continue;
        state.addedSince = 0;
        await dialect.analyzeAfterBulkLoad(knex, [table]);
        state.analysedRows = await dialect.analysedRows(knex, table);
        analysed = true;
      }
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
