import type { Knex } from 'knex';

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

/** The server went away or refused us (SQLSTATE classes 08 and 57: shutdown, crash), not a fault of the query. */
function isConnectionLoss(error: unknown): boolean {
  const { code, message } = (error ?? {}) as { code?: unknown; message?: unknown };
  if (typeof code === 'string' && /^(08|57P)|^ECONN|^EPIPE$/.test(code)) return true;
  return typeof message === 'string' && /Connection terminated/i.test(message);
}

export function openReadReplica(knex: Knex, options: ReplicaHealthOptions): ReadReplica {
  let current: ReplicaStatus = { status: 'unknown', lag_seconds: null };
  let checkedAt = -Infinity;
  let checking: Promise<void> | null = null;

  const markDown = () => {
    current = { status: 'down', lag_seconds: null };
    checkedAt = Date.now();
  };
  // A replica that stops between checks (a connection refused, or one it closed under a query) sends the next
  // reads to the primary at once.
  (knex.client.pool as { on?(event: string, listener: () => void): void } | undefined)?.on?.('createFail', markDown);
  knex.on('query-error', (error: unknown) => {
    if (isConnectionLoss(error)) markDown();
  });

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
