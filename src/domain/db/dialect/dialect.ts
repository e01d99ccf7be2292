import type { Knex } from 'knex';
import { postgresDialect } from './postgres.js';
import { sqliteDialect } from './sqlite.js';

/**
 * Everything that differs between SQLite and PostgreSQL lives behind this interface; the rest of the domain
 * never asks which database it is on.
 */
export interface Dialect {
  readonly name: 'sqlite' | 'postgres';
  /** Several processes may share this database (PostgreSQL): shared state such as rate limits must live in it. */
  readonly sharedByProcesses: boolean;
  /** Most bind parameters one statement may carry; bulk writes are chunked below it. */
  readonly maxBindings: number;
  /** Most rows one multi-row INSERT may carry (knex writes SQLite's as a compound SELECT, capped at 500). */
  readonly maxRowsPerInsert: number;
  /**
   * Connection settings. `asynchronousCommit`: commits do not wait for the disk — only for a pool that holds
   * data that may be lost in a crash (rate-limit counters), never customer data.
   */
  knexConfig(options?: { asynchronousCommit?: boolean; poolMax?: number }): Knex.Config;
  /** Encodes a value for a JSON column (text on SQLite, jsonb on PostgreSQL). */
  writeJson(value: unknown): string;
  readJson<T = unknown>(value: unknown): T;
  /** SQL for the text of a top-level field of a JSON column (null when absent); `field` is a trusted name. */
  jsonText(column: string, field: string): string;
  readBoolean(value: unknown): boolean;
  /** Numeric and decimal columns come back as strings from pg. */
  readNumber(value: unknown): number;
  isUniqueViolation(error: unknown): boolean;
  /** Locks the selected rows until the transaction ends where the database has row locks. */
  forUpdate<Q extends Knex.QueryBuilder>(query: Q): Q;
  /** An ORDER BY expression comparing a text column byte by byte (SQLite's default; PostgreSQL: COLLATE "C"). */
  bytewise(column: string): string;
  /** Shares a lock on the selected rows (others may share it; forUpdate waits for them) where there are row locks. */
  forShare<Q extends Knex.QueryBuilder>(query: Q): Q;
  /**
   * After a bulk load of these tables, refreshes the planner's statistics: PostgreSQL plans from them (a
   * freshly rebuilt table looks empty until autovacuum analyses it); our SQLite queries are written not to need any.
   */
  analyzeAfterBulkLoad(knex: Knex, tables: string[]): Promise<void>;
  /** Group commits that may run at once: one writer on SQLite, several connections on PostgreSQL. */
  readonly writeConcurrency: number;
}

/** The dialect of an open connection (for migrations, which receive only a knex). */
export function dialectOf(knex: Knex): Dialect {
  return knex.client.dialect === 'postgresql' ? postgresDialect('') : sqliteDialect('');
}
