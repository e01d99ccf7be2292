import type { Knex } from 'knex';
import type { Db } from '../db/database.js';
import { insertRows } from '../db/bulk.js';
import type { Dialect } from '../db/dialect/dialect.js';

/** A claimed job: what a handler receives. */
export interface Job {
  id: number;
  kind: string;
  payload: Record<string, unknown>;
  /** 1 on the first run. */
  attempt: number;
  maxAttempts: number;
}

export interface JobRow {
  kind: string;
  payload: Record<string, unknown>;
  run_at: number;
  max_attempts: number;
}

/** The failed jobs an operator looks at. */
export interface FailedJob {
  id: number;
  kind: string;
  attempts: number;
  last_error: string | null;
  failed_at: number;
}

/** The jobs of one kind that are due (`run_at` has come): waiting for a worker, or held by one now. */
export interface DueJobs {
  kind: string;
  ready: number;
  running: number;
  /** The run time of the oldest job waiting for a worker (null: none waits). */
  oldestReadyAt: number | null;
}

/** The jobs table: enqueue, claim by lease, finish guarded by the owner. */
export function createJobStore(dialect: Dialect) {
  const toJob = (row: Record<string, unknown>): Job => ({
    id: Number(row.id),
    kind: row.kind as string,
    payload: dialect.readJson<Record<string, unknown>>(row.payload),
    attempt: Number(row.attempts),
    maxAttempts: Number(row.max_attempts),
  });

  return {
    async insert(db: Db, rows: JobRow[], now: number): Promise<void> {
      await insertRows(
        db,
        dialect,
        'jobs',
        rows.map((row) => ({ ...row, payload: dialect.writeJson(row.payload), attempts: 0, created_at: now })),
      );
    },

    /**
     * Leases up to `limit` due jobs to `owner` until `until`: jobs whose run time has come and that nobody
     * holds, or whose holder's lease ran out (a process that died mid-job). PostgreSQL skips rows another
     * claim is taking; SQLite's claim runs inside its single write transaction.
     */
    async claim(trx: Knex.Transaction, owner: string, limit: number, now: number, until: number): Promise<Job[]> {
      const due = dialect.forUpdateSkipLocked(
        trx('jobs')
          .select('id')
          .whereNull('failed_at')
          .where('run_at', '<=', now)
          .where((q) => q.whereNull('locked_until').orWhere('locked_until', '<=', now))
          .orderBy([
            { column: 'run_at', order: 'asc' },
            { column: 'id', order: 'asc' },
          ])
          .limit(limit),
      );
      const rows = await trx('jobs')
        .whereIn('id', due)
        .update({ locked_by: owner, locked_until: until, attempts: trx.raw('attempts + 1') })
        .returning(['id', 'kind', 'payload', 'attempts', 'max_attempts']);
      return (rows as Record<string, unknown>[]).map(toJob).sort((a, b) => a.id - b.id);
    },

    /** Keeps a running job's lease; false when the job is no longer this owner's. */
    async extendLease(db: Db, id: number, owner: string, until: number): Promise<boolean> {
      return (await db('jobs').where({ id, locked_by: owner }).update({ locked_until: until })) > 0;
    },

    /** Done: the row goes. Only the lease holder may finish a job. */
    async complete(db: Db, id: number, owner: string): Promise<boolean> {
      return (await db('jobs').where({ id, locked_by: owner }).delete()) > 0;
    },

    /** Runs the job again at `runAt`, or gives up (`failed_at`) when `runAt` is null. */
    async release(db: Db, id: number, owner: string, error: string, runAt: number | null, now: number, options: { refundAttempt?: boolean } = {}): Promise<boolean> {
      const changed = await db('jobs')
        .where({ id, locked_by: owner })
        .update({
          locked_by: null,
          locked_until: null,
          last_error: error,
          ...(runAt === null ? { failed_at: now } : { run_at: runAt }),
          ...(options.refundAttempt ? { attempts: db.raw('attempts - 1') } : {}),
        });
      return changed > 0;
    },

    /** Whether a job of this kind waits to run (not running, not given up). */
    async hasWaiting(db: Db, kind: string): Promise<boolean> {
      return (await db('jobs').where({ kind }).whereNull('failed_at').whereNull('locked_by').first('id')) !== undefined;
    },

    /** When the next job that is not running falls due (null: none waiting). */
    async nextRunAt(db: Db): Promise<number | null> {
      const row = await db('jobs').whereNull('failed_at').whereNull('locked_by').min({ at: 'run_at' }).first();
      return dialect.readNullableNumber(row?.at);
    },

    /** The smallest number the jobs of this kind that have not given up carry in a payload field (null: none). */
    async smallestInPayload(db: Db, kind: string, field: string): Promise<number | null> {
      const value = dialect.jsonFieldNumber('payload', field);
      const row = await db('jobs').where({ kind }).whereNull('failed_at').first(db.raw(`MIN(${value.sql}) AS n`, value.bindings));
      return dialect.readNullableNumber(row?.n);
    },

    async pendingCount(db: Db, kinds?: string[]): Promise<number> {
      const query = db('jobs').whereNull('failed_at');
      if (kinds) query.whereIn('kind', kinds);
      const [{ n }] = (await query.count({ n: '*' })) as [{ n: number | string }];
      return Number(n);
    },

    /**
     * Due jobs by kind, as the claim sees them: one range of the claim's index (failed_at, run_at), so it reads
     * the jobs that are due, never those scheduled later (a flow's delayed steps).
     */
    async dueByKind(db: Db, now: number): Promise<DueJobs[]> {
      const rows: Array<{ kind: string; due: unknown; running: unknown; oldest_ready_at: unknown }> = await db('jobs')
        .whereNull('failed_at')
        .where('run_at', '<=', now)
        .groupBy('kind')
        .select(
          'kind',
          db.raw('COUNT(*) AS due'),
          db.raw('SUM(CASE WHEN locked_until > ? THEN 1 ELSE 0 END) AS running', [now]),
          db.raw('MIN(CASE WHEN locked_until IS NULL OR locked_until <= ? THEN run_at END) AS oldest_ready_at', [now]),
        );
      return rows.map((row) => {
        const running = dialect.readNumber(row.running);
        return { kind: row.kind, ready: dialect.readNumber(row.due) - running, running, oldestReadyAt: dialect.readNullableNumber(row.oldest_ready_at) };
      });
    },

    /**
     * Jobs kept as given up, by kind: the other range of the claim's index. Written as a range of times, which
     * both databases seek (SQLite reads the whole table for `IS NOT NULL`).
     */
    async failedByKind(db: Db): Promise<Map<string, number>> {
      const rows: Array<{ kind: string; n: unknown }> = await db('jobs').where('failed_at', '>=', 0).groupBy('kind').select('kind', db.raw('COUNT(*) AS n'));
      return new Map(rows.map((row) => [row.kind, dialect.readNumber(row.n)]));
    },

    async failed(db: Db, limit: number): Promise<FailedJob[]> {
      const rows = await db('jobs').whereNotNull('failed_at').orderBy('failed_at', 'desc').limit(limit);
      return rows.map((row: Record<string, unknown>) => ({
        id: Number(row.id),
        kind: row.kind as string,
        attempts: Number(row.attempts),
        last_error: (row.last_error as string | null) ?? null,
        failed_at: dialect.readNumber(row.failed_at),
      }));
    },
  };
}

export type JobStore = ReturnType<typeof createJobStore>;
