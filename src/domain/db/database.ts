import knexFactory, { type Knex } from 'knex';
import { UsageError } from '../errors.js';
import type { Dialect } from './dialect/dialect.js';
import { postgresDialect } from './dialect/postgres.js';
import { sqliteDialect } from './dialect/sqlite.js';
import { prepareSqliteFile } from './sqlite-path.js';
import { DEFAULT_RETRY, runTranslated, type RetryPolicy } from './driver-errors.js';
import {
  DEFAULT_MAX_READ_LAG_SECONDS,
  DEFAULT_REPLICA_CHECK_INTERVAL_MS,
  openReadReplica,
  type ReadReplica,
  type ReplicaStatus,
} from './read-replica.js';
import type { WriteStats } from './types.js';

// Declared below the dialects, which need it too; stores and services import it from here.
export type { Db, Reader } from './types.js';

export interface Database {
  knex: Knex;
  dialect: Dialect;
  /** Driver calls of both pools and the statements they carried (held writes travel several to a call). */
  readonly writeStats: WriteStats;
  /**
   * A second, small pool whose commits do not wait for the disk (PostgreSQL), for data that may be lost in a
   * crash: shared rate-limit counters. Opened on first use, closed with the database.
   */
  relaxedKnex(): Knex;
  /**
   * Every write transaction starts here (on SQLite it begins IMMEDIATE: see dialect/sqlite.ts). `work` may
   * run more than once: a lock conflict rolls the attempt back and runs it again (see driver-errors.ts). Driver
   * errors come out as domain errors: ConflictError, ValidationError, UnavailableError.
   */
  writeTransaction<T>(work: (trx: Knex.Transaction) => Promise<T>): Promise<T>;
  /**
   * Where reads that tolerate a little lag go (rankings, segment members, reports, exports, GET lists): the read
   * replica's pool while it is up and close enough, else the primary's. Never inside a write transaction.
   */
  reader(): Knex;
  /** The read replica's state (checked when the cached one is stale); null when none is configured. */
  readReplicaStatus(): Promise<ReplicaStatus | null>;
  /** What each open pool's connections are doing now (the server's metrics read it at every scrape). */
  poolUse(): PoolUse[];
  close(): Promise<void>;
}

/**
 * A connection pool at one moment: `main` (every statement), once opened `relaxed` (rate-limit counters), and
 * `replica` when a read replica is configured.
 */
export interface PoolUse {
  pool: 'main' | 'relaxed' | 'replica';
  /** Connections lent out, idle in the pool, and requests waiting for one; `max` is the pool's size. */
  used: number;
  free: number;
  pending: number;
  max: number;
}

/** What `poolUse` reads of knex's pool (tarn's). */
interface TarnCounts {
  numUsed(): number;
  numFree(): number;
  numPendingAcquires(): number;
  max: number;
}

/** A pool's counts; zeros while knex has none (before its first query, after destroy). */
function poolUseOf(pool: PoolUse['pool'], knex: Knex): PoolUse {
  const tarn = knex.client.pool as unknown as TarnCounts | undefined;
  if (!tarn) return { pool, used: 0, free: 0, pending: 0, max: 0 };
  return { pool, used: tarn.numUsed(), free: tarn.numFree(), pending: tarn.numPendingAcquires(), max: tarn.max };
}

export interface DatabaseOptions {
  /** How long a statement waits for another connection's lock (see ConnectionOptions in dialect/dialect.ts). */
  lockTimeoutMs?: number;
  retry?: Partial<RetryPolicy>;
  /** EMK_DATABASE_READ_URL: a PostgreSQL streaming replica of the primary, for lag-tolerant reads. */
  readUrl?: string | undefined;
  /** EMK_READ_MAX_LAG_SECONDS: a replica further behind is skipped (default 10). */
  maxReadLagSeconds?: number;
  /** How long a replica check's answer is trusted (default 2 s). */
  replicaCheckIntervalMs?: number;
  /**
   * A SQLite file that is missing is created, with its folders (the default); false for commands that only use
   * a database that is set up: they fail with `no database at <path>: run emk init` instead.
   */
  create?: boolean;
}

export const DEFAULT_DATABASE_URL = 'sqlite:./data/emk.db';

/** `sqlite:<path>` or `postgres://user:pass@host:port/db` (README, configuration). */
export function dialectFor(url: string): Dialect {
  const path = sqlitePathOf(url);
  if (path !== null) return sqliteDialect(path);
  if (/^postgres(ql)?:\/\//.test(url)) return postgresDialect(url);
  throw new UsageError(`unsupported database url "${url}": use sqlite:<path> or postgres://…`);
}

/** The file of a `sqlite:<path>` url (`sqlite:///abs` and `sqlite:/abs` alike); null for any other url. */
export function sqlitePathOf(url: string): string | null {
  if (!url.startsWith('sqlite:')) return null;
  const path = url.slice('sqlite:'.length).replace(/^\/\/(?=\/)/, '');
  if (!path) throw new UsageError('database url sqlite:<path> needs a path');
  return path;
}

/** The dialect of an open connection (for migrations, which receive only a knex). */
export function dialectOf(knex: Knex): Dialect {
  return knex.client.dialect === 'postgresql' ? postgresDialect('') : sqliteDialect('');
}

/**
 * knex would print its pool's failures (a database that does not exist, with the driver's stack) before the
 * caller hears of them; every such failure also rejects the query that needed the connection, and the caller
 * reports it in its own words, so knex's own log stays silent.
 */
const SILENT_LOG = { warn() {}, error() {}, deprecate() {}, debug() {} };

export function openDatabase(url: string, options: DatabaseOptions = {}): Database {
  const dialect = dialectFor(url);
  const sqlitePath = sqlitePathOf(url);
  if (sqlitePath !== null) prepareSqliteFile(sqlitePath, options.create ?? true);
  if (options.readUrl !== undefined && dialect.name !== 'postgres') throw new UsageError('a read replica needs a PostgreSQL primary');
  const { lockTimeoutMs } = options;
  const retry = { ...DEFAULT_RETRY, ...options.retry };
  const writeStats: WriteStats = { driverCalls: 0, statements: 0 };
  const connect = (config: Knex.Config) => knexFactory({ ...config, log: SILENT_LOG });
  const knex = connect(dialect.knexConfig({ lockTimeoutMs, writeStats }));
  let relaxed: Knex | null = null;
  const replica = options.readUrl === undefined ? null : openReplicaOf(options.readUrl, options, connect);
  return {
    knex,
    dialect,
    writeStats,
    relaxedKnex: () => (relaxed ??= connect(dialect.knexConfig({ asynchronousCommit: true, poolMax: 2, lockTimeoutMs, writeStats }))),
    writeTransaction: (work) => runTranslated(dialect, retry, () => knex.transaction(work)),
    reader: () => replica?.ifHealthy() ?? knex,
    readReplicaStatus: async () => (replica ? replica.status() : null),
    poolUse: () => [
      poolUseOf('main', knex),
      ...(relaxed ? [poolUseOf('relaxed', relaxed)] : []),
      ...(replica ? [poolUseOf('replica', replica.knex)] : []),
    ],
    async close() {
      await replica?.close();
      await relaxed?.destroy();
      await knex.destroy();
    },
  };
}

function openReplicaOf(readUrl: string, options: DatabaseOptions, connect: (config: Knex.Config) => Knex): ReadReplica {
  if (!/^postgres(ql)?:\/\//.test(readUrl)) throw new UsageError('the read replica url must be postgres://… (a PostgreSQL streaming replica)');
  return openReadReplica(postgresDialect(readUrl).knexConfig(), connect, {
    maxLagSeconds: options.maxReadLagSeconds ?? DEFAULT_MAX_READ_LAG_SECONDS,
    checkIntervalMs: options.replicaCheckIntervalMs ?? DEFAULT_REPLICA_CHECK_INTERVAL_MS,
  });
}
