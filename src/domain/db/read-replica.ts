import type { Knex } from 'knex';
import { UnavailableError } from '../errors.js';

/**
 * A PostgreSQL streaming replica for reads that tolerate a little lag (docs/operations.md, Read replicas). Its
 * health is checked at most once per interval, when someone reads, and cached: a read never waits for a check.
 */
export interface ReadReplica {
  knex: Knex;
  /** The replica's knex while its last check found it up and close enough; null otherwise (the primary answers). */
  ifHealthy(): Knex | null;
  /** The replica's state, checked afresh first when the cached one is older than the interval. */
  status(): Promise<ReplicaStatus>;
  close(): Promise<void>;
}

/** `unknown` until the first check has answered; `lag_seconds` is null while the replica cannot be asked. */
export interface ReplicaStatus {
  status: 'up' | 'lagging' | 'down' | 'unknown';
  lag_seconds: number | null;
}

export interface ReplicaHealthOptions {
  /** A replica whose replay is further behind than this is skipped. */
  maxLagSeconds: number;
  /** How long a check's answer is trusted. */
  checkIntervalMs: number;
}

export const DEFAULT_MAX_READ_LAG_SECONDS = 10;
export const DEFAULT_REPLICA_CHECK_INTERVAL_MS = 2_000;
/** A replica that does not answer a check this fast counts as down (a host that drops packets never refuses). */
const CHECK_TIMEOUT_MS = 2_000;
/**
 * How long a read waits for a replica connection before it fails (knex's default is a minute: a read sent just as
 * the replica stopped would hang that long while the pool retries).
 */
const ACQUIRE_TIMEOUT_MS = 2_000;
/** SQLSTATE of a standby's read cancelled because replay needed what it held (`max_standby_streaming_delay`). */
const CONFLICT_WITH_RECOVERY = '40001';

/*
 * Replay lag in seconds. A replica that has replayed all it received is not behind, however old its last replayed
 * commit (an idle primary sends nothing); otherwise the lag is the age of the last commit it replayed. A server not
 * in recovery (a promoted replica, or the primary itself) has no lag.
 */
const LAG_SQL = `SELECT CASE
  WHEN NOT pg_is_in_recovery() THEN 0
  WHEN pg_last_wal_receive_lsn() = pg_last_wal_replay_lsn() THEN 0
  ELSE COALESCE(EXTRACT(EPOCH FROM now() - pg_last_xact_replay_timestamp()), 0)
END::float8 AS lag_seconds`;

function withTimeout<T>(work: Promise<T>, ms: number): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => (timer = setTimeout(() => reject(new Error('replica check timed out')), ms)));
  return Promise.race([work, timeout]).finally(() => clearTimeout(timer));
}

/**
 * The server went away or never answered (SQLSTATE classes 08 and 57P: shutdown, crash; no connection in time),
 * not a fault of the query.
 */
function isConnectionLoss(error: unknown): boolean {
  const { code, message, name } = (error ?? {}) as { code?: unknown; message?: unknown; name?: unknown };
  if (typeof code === 'string' && /^(08|57P)|^ECONN|^EPIPE$/.test(code)) return true;
  return name === 'KnexTimeoutError' || (typeof message === 'string' && /Connection terminated/i.test(message));
}

/**
 * Opens the replica's pool from its connection settings. A read that loses the replica under it marks it down (the
 * next reads go to the primary) and fails as 503 with Retry-After, never 500: its retry reaches the primary.
 */
export function openReadReplica(config: Knex.Config, connect: (config: Knex.Config) => Knex, options: ReplicaHealthOptions): ReadReplica {
  let current: ReplicaStatus = { status: 'unknown', lag_seconds: null };
  let checkedAt = -Infinity;
  let checking: Promise<void> | null = null;

  const markDown = () => {
    current = { status: 'down', lag_seconds: null };
    checkedAt = Date.now();
  };
  const lost = (error: unknown) => {
    // Replay cancelled the read (a conflict with recovery): the replica is fine, the retry may land there again.
    if ((error as { code?: unknown } | null)?.code === CONFLICT_WITH_RECOVERY) return new UnavailableError('read replica busy, try again', 1);
    if (!isConnectionLoss(error)) return error;
    markDown();
    return new UnavailableError('read replica unavailable, try again', 1);
  };
  class ReplicaClient extends (config.client as typeof Knex.Client) {
    override async acquireConnection() {
      try {
        return await super.acquireConnection();
      } catch (error) {
        throw lost(error);
      }
    }
    override async query(connection: unknown, queryParam: unknown) {
      try {
        return await super.query(connection, queryParam);
      } catch (error) {
        throw lost(error);
      }
    }
  }
  const knex = connect({ ...config, client: ReplicaClient, acquireConnectionTimeout: ACQUIRE_TIMEOUT_MS });
  // A connection the replica refuses between checks (it stopped) sends the next reads to the primary at once.
  (knex.client.pool as { on?(event: string, listener: () => void): void } | undefined)?.on?.('createFail', markDown);

  const check = async () => {
    try {
      const result = (await withTimeout(knex.raw(LAG_SQL), CHECK_TIMEOUT_MS)) as { rows: Array<{ lag_seconds: number }> };
      const lag = Number(result.rows[0]!.lag_seconds);
      current = { status: lag > options.maxLagSeconds ? 'lagging' : 'up', lag_seconds: Math.round(lag * 1000) / 1000 };
      checkedAt = Date.now();
    } catch {
      markDown();
    }
  };
  const refresh = (): Promise<void> => {
    if (Date.now() - checkedAt < options.checkIntervalMs) return Promise.resolve();
    return (checking ??= check().finally(() => (checking = null)));
  };

  return {
    knex,
    ifHealthy() {
      void refresh();
      return current.status === 'up' ? knex : null;
    },
    async status() {
      await refresh();
      return current;
    },
    async close() {
      await checking;
      await knex.destroy();
    },
  };
}
