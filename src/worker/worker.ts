import { hostname } from 'node:os';
import { randomBytes } from 'node:crypto';
import { DeferJob, PermanentJobError, type Job, type JobHandlers, type JobQueue, type WakeReason } from '../domain/jobs/job-queue.js';

export interface WorkerOptions {
  jobs: JobQueue;
  handlers: JobHandlers;
  /** Jobs run at once by this process. */
  concurrency: number;
  /** How often to look for jobs other processes enqueued (this process's own wake it at once). */
  pollMs: number;
  /** How long a claim holds; a running job renews it every third of that, a dead process's lapses. */
  leaseMs: number;
  /**
   * Drains run before each claim (the trigger outbox): each returns how much it did and is called again until
   * it does nothing. They are woken like jobs: by this process's commits and by the poll.
   */
  pumps?: Array<() => Promise<number>>;
  /**
   * The least time between two drains while running (not `--once`): under a stream of writes each commit wakes
   * the worker, and one drain of many facts costs about what a drain of one does (set-based statements per
   * segment and flow), so facts arriving together are consumed together.
   */
  pumpIntervalMs?: number;
  /**
   * While this says so (the request path of the same process is saturated: `emk serve`), the worker holds back
   * for at most `maxYieldMs` at a time, then does one bounded round (one batch per drain, the jobs it can take)
   * before holding back again: the outbox keeps the facts, so a burst of writes is consumed after it, not
   * during it.
   */
  yieldTo?: () => boolean;
  maxYieldMs?: number;
  /** Told of each job that failed (to log it). */
  onFailure?: (job: Job, error: unknown, outcome: 'retried' | 'failed') => void;
}

export interface RunningWorker {
  /** Stops claiming, lets the jobs in hand finish, resolves when they have. */
  stop(): Promise<void>;
}

export const DEFAULT_WORKER = { concurrency: 4, pollMs: 500, leaseMs: 60_000, pumpIntervalMs: 100, maxYieldMs: 5000 };

/** How often a yielding worker looks whether the pressure is over. */
const YIELD_RECHECK_MS = 50;

const newOwner = () => `${hostname()}:${process.pid}:${randomBytes(4).toString('hex')}`;

/**
 * The worker host: claims due jobs and runs each through the handler of its kind (docs/worker.md). It knows
 * job kinds, not rules. `untilIdle` (for `emk worker --once`) returns once nothing is due and nothing runs.
 */
function runLoop(options: WorkerOptions, untilIdle: boolean) {
  const { jobs, handlers, concurrency, pollMs, leaseMs } = options;
  const pumps = options.pumps ?? [];
  const pumpIntervalMs = untilIdle ? 0 : (options.pumpIntervalMs ?? 0);
  const yieldTo = untilIdle ? undefined : options.yieldTo;
  let lastPumpAt = -Infinity;
  let lastRoundAt = Date.now();
  const owner = newOwner();
  const running = new Set<Promise<void>>();
  let stopping = false;
  let poked = false;
  /**
   * Whether to look for due jobs on this round: a job was enqueued here or a slot freed, or the poll (or the
   * nearest `run_at`) says so. Trigger facts wake the worker for its drains only: under a stream of writes a
   * claim per commit would be a write transaction per commit for nothing.
   */
  let jobsDue = true;
  let lookAgainAt = 0;
  let wakeWaiter: (() => void) | null = null;
  const poke = (reason: WakeReason = 'jobs') => {
    poked = true;
    if (reason === 'jobs') jobsDue = true;
    wakeWaiter?.();
  };
  const unsubscribe = jobs.onWake(poke);
  let ran = 0;
  let failed = 0;

  async function runJob(job: Job): Promise<void> {
    const renew = setInterval(() => void jobs.extendLease(job, owner, leaseMs).catch(() => {}), Math.max(50, leaseMs / 3));
    try {
      const handler = handlers[job.kind];
      if (!handler) throw new PermanentJobError(`no handler for job kind "${job.kind}"`);
      await handler(job);
      await jobs.complete(job, owner);
      ran += 1;
    } catch (error) {
      // A job waiting its turn (a domain's rate) is neither done nor failed.
      if (error instanceof DeferJob) {
        await jobs.defer(job, owner, error).catch(() => {});
        return;
      }
      failed += 1;
      const outcome = await jobs.fail(job, owner, error).catch(() => 'retried' as const);
      options.onFailure?.(job, error, outcome);
    } finally {
      clearInterval(renew);
    }
  }

  /**
   * Runs every pump until it has nothing left (or once each, for a bounded round); how much they did. A drain
   * that began unpressed stops after the batch in hand once the request path comes under pressure: under a
   * stream of writes the outbox is never empty, and the drain would otherwise never give way.
   */
  async function pumpAll(bounded: boolean): Promise<number> {
    let total = 0;
    for (const pump of pumps) {
      for (let n = await pump(); n > 0 && !stopping; n = await pump()) {
        total += n;
        if (bounded || yieldTo?.()) break;
      }
    }
    return total;
  }

  /**
   * Until poked, a job finishes, or `ms` pass; with `ignorePokes` (holding back) only stopping cuts it short,
   * since under a stream of writes each commit pokes the worker.
   */
  function pause(ms: number, { ignorePokes = false } = {}): Promise<void> {
    if ((poked && !ignorePokes) || stopping) return Promise.resolve();
    return new Promise((resolve) => {
      const timer = setTimeout(done, ms);
      function done() {
        clearTimeout(timer);
        wakeWaiter = null;
        resolve();
      }
      wakeWaiter = ignorePokes ? () => void (stopping && done()) : done;
    });
  }

  const loop = (async () => {
    try {
      while (!stopping) {
        const pressed = yieldTo?.() ?? false;
        if (pressed && Date.now() - lastRoundAt < (options.maxYieldMs ?? 0)) {
          await pause(YIELD_RECHECK_MS, { ignorePokes: true });
          continue;
        }
        lastRoundAt = Date.now();
        poked = false;
        let pumped = 0;
        const pumpIn = lastPumpAt + pumpIntervalMs - Date.now();
        if (pumpIn <= 0) {
          lastPumpAt = Date.now();
          try {
            pumped = await pumpAll(pressed);
          } catch (error) {
            if (untilIdle) throw error;
          }
        }
        const lookForJobs = untilIdle || jobsDue || Date.now() >= lookAgainAt;
        jobsDue = false;
        const free = concurrency - running.size;
        let claimed: Job[] = [];
        if (free > 0 && lookForJobs) {
          try {
            claimed = await jobs.claim(owner, free, leaseMs);
          } catch (error) {
            // The database is away (a restart, a lock storm): look again after a poll.
            if (untilIdle) throw error;
          }
        }
        for (const job of claimed) {
          const run: Promise<void> = runJob(job).finally(() => {
            running.delete(run);
            poke();
          });
          running.add(run);
        }
        if (claimed.length > 0 && claimed.length === free) {
          // Every slot taken: more may be due as soon as one frees.
          jobsDue = true;
          if (!pressed) continue;
        }
        if (untilIdle && claimed.length === 0) {
          if (pumped > 0) continue;
          if (running.size === 0) break;
          await Promise.race(running);
          continue;
        }
        if (lookForJobs) {
          const dueIn = running.size >= concurrency ? pollMs : await jobs.nextDueIn().catch(() => null);
          lookAgainAt = Date.now() + Math.min(pollMs, dueIn ?? pollMs);
        }
        // A drain put off (see pumpIntervalMs) runs when its interval is over, woken or not.
        await pause(Math.max(0, Math.min(pollMs, lookAgainAt - Date.now(), pumpIn > 0 ? pumpIn : pollMs)));
      }
      await Promise.all(running);
    } finally {
      unsubscribe();
    }
    return { ran, failed };
  })();

  return {
    loop,
    stop: async () => {
      stopping = true;
      wakeWaiter?.();
      await loop.catch(() => {});
    },
  };
}

export function startWorker(options: WorkerOptions): RunningWorker {
  const { stop } = runLoop(options, false);
  return { stop };
}

/** `emk worker --once`: runs every job due now (and those they enqueue for now), then returns. */
export function runDueJobs(options: WorkerOptions): Promise<{ ran: number; failed: number }> {
  return runLoop(options, true).loop;
}

/** The worker options for a process's services: every noun's handlers and drains, this process's concurrency. */
export function workerOptionsFor(
  services: { jobs: JobQueue; jobHandlers: JobHandlers; workerPumps: Array<() => Promise<number>> },
  overrides: Partial<Omit<WorkerOptions, 'jobs' | 'handlers'>> = {},
): WorkerOptions {
  return {
    jobs: services.jobs,
    handlers: services.jobHandlers,
    pumps: services.workerPumps,
    ...DEFAULT_WORKER,
    onFailure: (job, error, outcome) =>
      process.stderr.write(`emk worker: job ${job.id} (${job.kind}) attempt ${job.attempt} ${outcome}: ${error instanceof Error ? error.message : String(error)}\n`),
    ...overrides,
  };
}
