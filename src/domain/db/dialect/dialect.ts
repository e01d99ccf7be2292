import type { Knex } from 'knex';
import type { Db, WriteStats } from '../types.js';
import type { MonthlyPartitions } from './postgres-partitions.js';
import type { SchemaCatalog } from './schema-catalog.js';

/**
 * What a driver error means for the caller, in the database's own codes (see driver-errors.ts for what each
 * becomes): a unique key said no; a value the column cannot hold (`column` when the driver names it); another
 * transaction holds a lock we need (worth running the transaction again).
 */
export type DriverFault = { kind: 'unique' } | { kind: 'invalid_value'; reason: InvalidValueReason; column?: string } | { kind: 'busy' };

export type InvalidValueReason = 'text' | 'range' | 'length' | 'format';

/** In the error of a failed `failUnlessCount` statement: what `driverFault` knows it by. */
export const STALE_READ = 'emk: stale read';

/** A piece of SQL and the values bound to its `?` placeholders, in order. */
export interface SqlFragment {
  sql: string;
  bindings: Knex.Value[];
}

/** A JSON scalar a condition compares with. */
export type JsonScalar = string | number | boolean;

export interface ConnectionOptions {
  /**
   * Commits do not wait for the disk — only for a pool that holds data that may be lost in a crash
   * (rate-limit counters), never customer data.
   */
  asynchronousCommit?: boolean;
  poolMax?: number;
  /**
   * How long a statement waits for a lock held by another connection before failing as busy. SQLite waits
   * 10 s unless told (its busy timeout); PostgreSQL waits without limit unless told (its lock_timeout).
   */
  lockTimeoutMs?: number;
  /** Where the connections count their driver calls and statements: their Database's (a count of their own if absent). */
  writeStats?: WriteStats;
}

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
  /** Connection settings. */
  knexConfig(options?: ConnectionOptions): Knex.Config;
  /** Encodes a value for a JSON column (text on SQLite, jsonb on PostgreSQL). */
  writeJson(value: unknown): string;
  readJson<T = unknown>(value: unknown): T;
  /** SQL for the text of a top-level field of a JSON column (null when absent); `field` is a trusted name. */
  jsonText(column: string, field: string): string;
  /*
   * A top-level field of a JSON column addressed by a key that comes from a user (segment conditions): the key
   * is bound, never spliced into the SQL. Keys may hold any character but a double quote (SQLite's JSON paths
   * cannot quote one).
   */
  /** The field's value when it is a JSON string, else NULL. */
  jsonFieldString(column: string, key: string): SqlFragment;
  /** The field's value when it is a JSON number, else NULL. */
  jsonFieldNumber(column: string, key: string): SqlFragment;
  /** True when the field is present and not JSON null. */
  jsonFieldPresent(column: string, key: string): SqlFragment;
  /** True when the field equals the value with its JSON type (the string "1" is not the number 1). */
  jsonFieldEquals(column: string, key: string, value: JsonScalar): SqlFragment;
  /** True when the field is an array holding this string. */
  jsonFieldHasElement(column: string, key: string, value: string): SqlFragment;
  readBoolean(value: unknown): boolean;
  /** Numeric and decimal columns come back as strings from pg. */
  readNumber(value: unknown): number;
  /** readNumber for a nullable column: null (or absent) stays null. */
  readNullableNumber(value: unknown): number | null;
  /** The rows a `raw` statement returned: pg gives a result holding them, node-sqlite3 the rows themselves. */
  rowsOf<T = Record<string, unknown>>(result: unknown): T[];
  /** What a driver error means, or null for anything else (a bug: it stays a 500). */
  driverFault(error: unknown): DriverFault | null;
  /**
   * A statement that fails, as a lock conflict (`driverFault` kind `busy`: the transaction runs again), unless
   * `count` (`SELECT count(*) AS n FROM …`) counts `expected`: a read made before the transaction, checked
   * inside it (contacts/known-contacts.ts). The error names STALE_READ.
   */
  failUnlessCount(count: SqlFragment, expected: number): SqlFragment;
  /**
   * Runs `statement`, there only to take row locks until the transaction ends (a `forUpdate` read, an upsert that
   * creates the rows it locks), where the database locks rows (PostgreSQL); SQLite's one writer holds the whole
   * database already, so there it is not sent.
   */
  lockRows(statement: Knex.QueryBuilder | Knex.Raw): Promise<void>;
  /** Locks the selected rows until the transaction ends where the database has row locks. */
  forUpdate<Q extends Knex.QueryBuilder>(query: Q): Q;
  /**
   * forUpdate, passing over rows another transaction holds (a queue's claim: workers never wait for each
   * other). SQLite has one writer at a time, so its claim needs neither.
   */
  forUpdateSkipLocked<Q extends Knex.QueryBuilder>(query: Q): Q;
  /** SQL for a fresh random UUID per row (v4), for rows an INSERT … SELECT creates in the database. */
  readonly newIdSql: string;
  /** An ORDER BY expression comparing a text column byte by byte (SQLite's default; PostgreSQL: COLLATE "C"). */
  bytewise(column: string): string;
  /** Shares a lock on the selected rows (others may share it; forUpdate waits for them) where there are row locks. */
  forShare<Q extends Knex.QueryBuilder>(query: Q): Q;
  /**
   * After a bulk load of these tables, refreshes the planner's statistics: PostgreSQL plans from them (a
   * freshly rebuilt table looks empty until autovacuum analyses it); our SQLite queries are written not to need any.
   */
  analyzeAfterBulkLoad(knex: Knex, tables: string[]): Promise<void>;
  /**
   * A statement of every group commit whose planning costs more than its run, in the form the database plans
   * once per connection (PostgreSQL: prepared, sent as EXECUTE; see postgres-planned-once.ts); `label` names it.
   */
  plannedOnce(label: string, fragment: SqlFragment): SqlFragment;
  /** Whether query plans follow the planner's statistics of a table (see table-growth.ts): PostgreSQL's do. */
  readonly plansFromStatistics: boolean;
  /** The rows a table held when its statistics were last taken (0 if never); only where plansFromStatistics. */
  analysedRows(knex: Knex, table: string): Promise<number>;
  /** Group commits that may run at once: one writer on SQLite, several connections on PostgreSQL. */
  readonly writeConcurrency: number;
  /**
   * A bound value written as an SQL literal, for writes sent in one script (see deferred-writes.ts); null when
   * the value has no safe literal form here (the write is then sent on its own, with bindings).
   */
  literal(value: unknown): string | null;
  /**
   * A FROM source reading rows typed by the table named by a `??` binding from one JSON array bound at `?`
   * (PostgreSQL's json_populate_recordset: far cheaper to parse than thousands of parameters); null where a
   * multi-row VALUES insert costs the same (SQLite).
   */
  readonly jsonRecordset: string | null;
  /** Our tables, their columns, keys and references, and their sequences (whole-database copies: data-copy/). */
  readonly catalog: SchemaCatalog;
  /**
   * Writes a consistent copy of the whole database into a new file while others keep writing (SQLite's
   * `VACUUM INTO`); null where the database has tools of its own for that (PostgreSQL: pg_dump, base backups).
   */
  readonly backupInto: ((db: Db, file: string) => Promise<void>) | null;
  /** Tables partitioned by month (PostgreSQL's declarative partitioning: events); null where there is none (SQLite). */
  readonly monthlyPartitions: MonthlyPartitions | null;
}

/** Number columns read alike on both databases (pg returns numeric columns as strings). */
export const readNumber = (value: unknown): number => Number(value ?? 0);
export const readNullableNumber = (value: unknown): number | null =>
  value === null || value === undefined ? null : Number(value);
