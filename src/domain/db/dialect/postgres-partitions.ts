import type { Knex } from 'knex';
import type { Db } from '../types.js';

/**
 * PostgreSQL's declarative partitioning of a table by calendar month (UTC) of a bigint milliseconds column
 * (docs/scaling.md, Monthly partitions of events). A month's partition is `<table>_pYYYYMM`, holding
 * `[first instant of the month, first instant of the next)`; `<table>_default` takes whatever no month holds
 * (an event far in the past or the future), so an insert never fails for want of a partition.
 *
 * The conversion of a table is its migration's (migrations/202611290600_partition_events_by_month.ts).
 * SQLite has no such thing: its dialect has no `monthlyPartitions` and its tables stay as they are.
 */
export interface MonthPartition {
  name: string;
  /** First instant of the month (ms, inclusive). */
  from: number;
  /** First instant of the next month (ms, exclusive). */
  to: number;
}

export interface MonthlyPartitions {
  /** Creates the partitions of this month and the next `ahead` months that are missing; their names. */
  ensureAhead(knex: Knex, table: string, now: number, ahead: number): Promise<string[]>;
  /** The month partitions attached to the table, oldest first (the default partition is not one). */
  list(db: Db, table: string): Promise<MonthPartition[]>;
  /**
   * Detaches a month from the table, waiting at most `lockTimeoutMs` for the brief exclusive lock on the table
   * (false: not detached, try again later). Afterwards the month is a table of its own, no longer read through
   * the partitioned one.
   */
  detach(knex: Knex, table: string, month: MonthPartition, lockTimeoutMs: number): Promise<boolean>;
  /** Puts a detached month back (it keeps its rows; its CHECK constraint spares the re-attach a scan). */
  attach(knex: Knex, table: string, month: MonthPartition): Promise<void>;
}

const MONTH_NAME = /_p(\d{4})(\d{2})$/;

export function monthOf(at: number): { year: number; month: number } {
  const date = new Date(at);
  return { year: date.getUTCFullYear(), month: date.getUTCMonth() };
}

export function monthPartition(table: string, year: number, month: number): MonthPartition {
  const from = Date.UTC(year, month, 1);
  const start = new Date(from);
  const name = `${table}_p${start.getUTCFullYear()}${String(start.getUTCMonth() + 1).padStart(2, '0')}`;
  return { name, from, to: Date.UTC(start.getUTCFullYear(), start.getUTCMonth() + 1, 1) };
}

const rowsOf = <T>(result: unknown): T[] => (result as { rows: T[] }).rows;

/** A lock on partition changes of this table, held until the transaction ends (two workers create alike). */
const lockChanges = (trx: Knex.Transaction, table: string) => trx.raw('SELECT pg_advisory_xact_lock(hashtext(?))', [`emk:partitions:${table}`]);

async function createMonth(trx: Knex.Transaction, table: string, month: MonthPartition): Promise<void> {
  const [{ column }] = rowsOf<{ column: string }>(
    await trx.raw(
      `SELECT a.attname AS column FROM pg_partitioned_table p JOIN pg_attribute a ON a.attrelid = p.partrelid AND a.attnum = p.partattrs[0]
        WHERE p.partrelid = ?::regclass`,
      [table],
    ),
  ) as [{ column: string }];
  // Rows the default partition took for this month move into it: PostgreSQL refuses a month the default holds rows of.
  await trx.raw('CREATE TABLE ?? (LIKE ?? INCLUDING DEFAULTS)', [month.name, table]);
  await trx.raw(`ALTER TABLE ?? ADD CONSTRAINT ?? CHECK (?? >= ${month.from} AND ?? < ${month.to})`, [month.name, `${month.name}_month`, column, column]);
  await trx.raw(
    `WITH moved AS (DELETE FROM ?? WHERE ?? >= ${month.from} AND ?? < ${month.to} RETURNING *) INSERT INTO ?? SELECT * FROM moved`,
    [`${table}_default`, column, column, month.name],
  );
  await trx.raw(`ALTER TABLE ?? ATTACH PARTITION ?? FOR VALUES FROM (${month.from}) TO (${month.to})`, [table, month.name]);
}

export const postgresMonthlyPartitions: MonthlyPartitions = {
  async ensureAhead(knex, table, now, ahead) {
    const current = monthOf(now);
    const wanted = Array.from({ length: ahead + 1 }, (_, k) => monthPartition(table, current.year, current.month + k));
    const have = new Set((await this.list(knex, table)).map((month) => month.name));
    const missing = wanted.filter((month) => !have.has(month.name));
    if (missing.length === 0) return [];
    return knex.transaction(async (trx) => {
      await lockChanges(trx, table);
      const attached = new Set((await this.list(trx, table)).map((month) => month.name));
      const created: string[] = [];
      for (const month of missing) {
        if (attached.has(month.name)) continue;
        await createMonth(trx, table, month);
        created.push(month.name);
      }
      return created;
    });
  },

  async list(db, table) {
    const names = rowsOf<{ name: string }>(
      await db.raw(
        `SELECT c.relname AS name FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid
          WHERE i.inhparent = ?::regclass ORDER BY c.relname`,
        [table],
      ),
    );
    const months: MonthPartition[] = [];
    for (const { name } of names) {
      const match = MONTH_NAME.exec(name);
      if (match && name === `${table}${match[0]}`) months.push(monthPartition(table, Number(match[1]), Number(match[2]) - 1));
    }
    return months;
  },

  async detach(knex, table, month, lockTimeoutMs) {
    try {
      await knex.transaction(async (trx) => {
        await lockChanges(trx, table);
        await trx.raw(`SET LOCAL lock_timeout = ${Math.max(1, Math.round(lockTimeoutMs))}`);
        await trx.raw('ALTER TABLE ?? DETACH PARTITION ??', [table, month.name]);
      });
      return true;
    } catch (error) {
      if ((error as { code?: string }).code === '55P03') return false;
      throw error;
    }
  },

  async attach(knex, table, month) {
    await knex.transaction(async (trx) => {
      await lockChanges(trx, table);
      await trx.raw(`ALTER TABLE ?? ATTACH PARTITION ?? FOR VALUES FROM (${month.from}) TO (${month.to})`, [table, month.name]);
    });
  },
};
