import type { Knex } from 'knex';
import type { Database } from '../db/database.js';
import { systemClock, type Clock } from '../shared/time.js';
import { createJobStore, type DueJobs, type Job } from './job-store.js';

export type { Job } from './job-store.js';

/** One kind's jobs: due and waiting, running, given up; the oldest waiting job's run time (null: none waits). */
export interface JobBacklog extends DueJobs {
  failed: number;
}

/** What a noun's job does; throwing retries it with back-off (PermanentJobError: gives up at once). */
export type JobHandler = (job: Job) => Promise<void>;
export type JobHandlers = Record<string, JobHandler>;

export interface JobToEnqueue {
  kind: string;
  payload?: Record<string, unknown>;
  /** Epoch milliseconds; now when absent. */
  runAt?: number;
  maxAttempts?: number;
}

/** A failure that no retry can mend: the job is kept as failed at once. */
export class PermanentJobError extends Error {}

/** A failure worth trying again no sooner than the handler says (a relay's Retry-After), backing off from there. */
export class RetryJobLater extends Error {
  constructor(
    message: string,
    readonly delayMs: number,
  ) {
    super(message);
  }
}

/**
 * Thrown by a handler whose work must wait for something that is no failure (a recipient domain's rate): the
 * job runs again after `delayMs`, and the wait does not use one of its attempts.
 */
export class DeferJob extends Error {
  constructor(
    message: string,
    readonly delayMs: number,
  ) {
    super(message);
  }
}

export const DEFAULT_MAX_ATTEMPTS = 10;

/** 2^attempt seconds, at most an hour, with up to 20 % jitter so retries of one outage do not move in step. */
export function backoffMs(attempt: number, random = Math.random): number {
  const base = Math.min(3_600_000, 1000 * 2 ** Math.min(attempt, 22));
  return Math.round(base * (1 + 0.2 * random()));
}

/** Why a worker is woken: jobs were enqueued (look for due jobs), or trigger facts committed (drain them only). */
export type WakeReason = 'jobs' | 'facts';

/**
 * The durable queue every background task goes through (docs/worker.md). Jobs are enqueued inside the
 * caller's transaction, so a job exists exactly when the data that needs it was committed; a worker in this
 * process is woken once that commit lands, others find it by their short poll.
 */
export function createJobQueue(deps: { db: Database; clock?: Clock }) {
  const { db } = deps;
  const store = createJobStore(db.dialect);
  const clock = deps.clock ?? systemClock;
  const listeners = new Set<(reason: WakeReason) => void>();
  const wake = (reason: WakeReason = 'jobs') => {
    for (const listener of listeners) listener(reason);
  };

  return {
    async enqueue(trx: Knex.Transaction, jobs: JobToEnqueue[]): Promise<void> {
      if (jobs.length === 0) return;
      const now = clock();
      await store.insert(
        trx,
        jobs.map((job) => ({
          kind: job.kind,
          payload: job.payload ?? {},
          run_at: job.runAt ?? now,
          max_attempts: job.maxAttempts ?? DEFAULT_MAX_ATTEMPTS,
        })),
        now,
      );
      // Wake this process's worker once the rows are visible; a rolled-back transaction wakes nobody.
      trx.executionPromise.then(() => wake('jobs'), () => {});
    },

    /** Tells this process's worker to look now (for jobs written outside enqueue, e.g. by another module's test). */
    wake,

    onWake(listener: (reason: WakeReason) => void): () => void {
      listeners.add(listener);
      return () => listeners.delete(listener);
    },

    claim(owner: string, limit: number, leaseMs: number): Promise<Job[]> {
      const now = clock();
      return db.writeTransaction((trx) => store.claim(trx, owner, limit, now, now + leaseMs));
    },

    extendLease: (job: Job, owner: string, leaseMs: number) => store.extendLease(db.knex, job.id, owner, clock() + leaseMs),

    complete: (job: Job, owner: string) => store.complete(db.knex, job.id, owner),

    /** Runs the job again after the handler's delay, giving back the attempt its claim took (`DeferJob`). */
    async defer(job: Job, owner: string, deferral: DeferJob): Promise<void> {
      const now = clock();
      await store.release(db.knex, job.id, owner, deferral.message.slice(0, 2000), now + deferral.delayMs, now, { refundAttempt: true });
    },

    /** After a failure: again after back-off, or given up when the job is out of attempts or permanent. */
    async fail(job: Job, owner: string, error: unknown): Promise<'retried' | 'failed'> {
      const now = clock();
      const message = error instanceof Error ? error.message : String(error);
      const giveUp = error instanceof PermanentJobError || job.attempt >= job.maxAttempts;
      // A handler's own delay is a floor: repeated temporary failures still back off.
      const backoff = backoffMs(job.attempt - 1);
      const delay = error instanceof RetryJobLater ? Math.max(error.delayMs, backoff) : backoff;
      await store.release(db.knex, job.id, owner, message.slice(0, 2000), giveUp ? null : now + delay, now);
      return giveUp ? 'failed' : 'retried';
    },

    /** Milliseconds until the next waiting job is due (0: now; null: none). */
    async nextDueIn(): Promise<number | null> {
      const at = await store.nextRunAt(db.knex);
      return at === null ? null : Math.max(0, at - clock());
    },

    pendingCount: (kinds?: string[]) => store.pendingCount(db.knex, kinds),

    /** The smallest number waiting jobs of a kind carry in a payload field: what they will still read. */
    smallestInPayload: (kind: string, field: string) => store.smallestInPayload(db.knex, kind, field),

    /** Whether a job of this kind waits to run, read in the caller's transaction (a job that repeats itself keeps one). */
    hasWaiting: (trx: Knex.Transaction, kind: string) => store.hasWaiting(trx, kind),
    failed: (limit = 50) => store.failed(db.knex, limit),

    /**
     * The queue at a glance, per kind (every kind in `kinds`, and any other the table holds): due jobs waiting
     * for a worker and the oldest one's run time, jobs running, jobs given up. Read at every metrics scrape.
     */
    async backlog(kinds: readonly string[]): Promise<JobBacklog[]> {
      const due = await store.dueByKind(db.knex, clock());
      const failed = await store.failedByKind(db.knex);
      const byKind = new Map<string, JobBacklog>();
      for (const kind of [...kinds, ...failed.keys()]) byKind.set(kind, { kind, ready: 0, running: 0, oldestReadyAt: null, failed: failed.get(kind) ?? 0 });
      for (const row of due) byKind.set(row.kind, { ...row, failed: failed.get(row.kind) ?? 0 });
      return [...byKind.values()].sort((a, b) => a.kind.localeCompare(b.kind));
    },
  };
}

export type JobQueue = ReturnType<typeof createJobQueue>;
