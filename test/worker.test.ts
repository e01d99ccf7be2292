import { expect, it } from 'vitest';
import { backoffMs, createJobQueue, PermanentJobError, RetryJobLater, type Job } from '../src/domain/jobs/job-queue.js';
import { openDatabase } from '../src/domain/db/database.js';
import { runDueJobs, startWorker } from '../src/worker/worker.js';
import { eventually } from './helpers/browser.js';
import { describeEachDatabase } from './helpers/harness.js';

describeEachDatabase('the durable worker', (h) => {
  const jobs = () => h().services.jobs;
  const knex = () => h().services.db.knex;
  let kindCount = 0;
  /** A job kind of its own per test, so tests sharing the database never run each other's jobs. */
  const kind = () => `test.kind${++kindCount}`;
  const enqueue = (k: string, payload: Record<string, unknown> = {}, extra: { runAt?: number; maxAttempts?: number } = {}) =>
    h().services.db.writeTransaction((trx) => jobs().enqueue(trx, [{ kind: k, payload, ...extra }]));
  const rowsOf = (k: string) => knex()('jobs').where({ kind: k });
  const onlyKinds = (kinds: string[], handler: (job: Job) => Promise<void>) =>
    Object.fromEntries(kinds.map((k) => [k, handler]));

  it('a job enqueued in a transaction exists only if it commits; run once, it is deleted', async () => {
    const k = kind();
    await h()
      .services.db.writeTransaction(async (trx) => {
        await jobs().enqueue(trx, [{ kind: k }]);
        throw new Error('rolled back');
      })
      .catch(() => {});
    expect(await rowsOf(k)).toHaveLength(0);
    await enqueue(k, { n: 1 });
    const seen: unknown[] = [];
    const result = await runDueJobs({ jobs: jobs(), handlers: onlyKinds([k], async (job) => void seen.push(job.payload)), concurrency: 2, pollMs: 50, leaseMs: 5_000 });
    expect(seen).toEqual([{ n: 1 }]);
    expect(result.ran).toBeGreaterThanOrEqual(1);
    expect(await rowsOf(k)).toHaveLength(0);
  });

  it('a failing job is retried later with back-off and its error kept; out of attempts it is kept as failed', async () => {
    const k = kind();
    await enqueue(k, {}, { maxAttempts: 2 });
    const worker = { jobs: jobs(), handlers: onlyKinds([k], async () => Promise.reject(new Error('relay down'))), concurrency: 1, pollMs: 50, leaseMs: 5_000 };
    await runDueJobs(worker);
    const [first] = await rowsOf(k);
    expect(first.attempts).toBe(1);
    expect(first.last_error).toBe('relay down');
    expect(first.failed_at).toBeNull();
    expect(Number(first.run_at)).toBeGreaterThan(Date.now() + 500);
    // Not due yet: --once leaves it alone.
    await runDueJobs(worker);
    expect((await rowsOf(k))[0].attempts).toBe(1);
    await knex()('jobs').where({ id: first.id }).update({ run_at: Date.now() - 1 });
    await runDueJobs(worker);
    const [second] = await rowsOf(k);
    expect(second.attempts).toBe(2);
    expect(second.failed_at).not.toBeNull();
    expect((await jobs().failed(100)).some((f) => f.id === Number(first.id) && f.last_error === 'relay down')).toBe(true);
  });

  it('a permanent failure gives up at once; RetryJobLater delays the next run at least as asked, backing off still', async () => {
    const permanent = kind();
    const later = kind();
    const soon = kind();
    await enqueue(permanent);
    await enqueue(later);
    await enqueue(soon);
    const before = Date.now();
    await runDueJobs({
      jobs: jobs(),
      handlers: {
        [permanent]: async () => Promise.reject(new PermanentJobError('bad payload')),
        [later]: async () => Promise.reject(new RetryJobLater('try in an hour', 3_600_000)),
        [soon]: async () => Promise.reject(new RetryJobLater('try in 10 ms', 10)),
      },
      concurrency: 3,
      pollMs: 50,
      leaseMs: 5_000,
    });
    expect((await rowsOf(permanent))[0].failed_at).not.toBeNull();
    const [row] = await rowsOf(later);
    expect(row.failed_at).toBeNull();
    expect(Number(row.run_at)).toBeGreaterThanOrEqual(before + 3_600_000);
    // The asked delay is a floor, not a bypass of back-off.
    expect(Number((await rowsOf(soon))[0].run_at)).toBeGreaterThanOrEqual(before + 1_000);
  });

  it('back-off doubles per attempt, with jitter, up to an hour', () => {
    expect(backoffMs(0, () => 0)).toBe(1_000);
    expect(backoffMs(3, () => 0)).toBe(8_000);
    expect(backoffMs(3, () => 1)).toBe(9_600);
    expect(backoffMs(40, () => 0)).toBe(3_600_000);
  });

  it('a job whose process died is taken up again once its lease lapses, and the dead owner cannot finish it', async () => {
    const k = kind();
    await enqueue(k);
    const [claimed] = await jobs().claim('dead-process', 10, 200).then((all) => all.filter((j) => j.kind === k));
    expect(claimed).toBeDefined();
    // Held: nobody else gets it.
    expect((await jobs().claim('other', 10, 200)).filter((j) => j.kind === k)).toHaveLength(0);
    await eventually(async () => Number((await rowsOf(k))[0].locked_until) < Date.now(), Boolean);
    const [again] = (await jobs().claim('survivor', 10, 5_000)).filter((j) => j.kind === k);
    expect(again?.id).toBe(claimed!.id);
    expect(again?.attempt).toBe(2);
    expect(await jobs().complete(claimed!, 'dead-process')).toBe(false);
    expect(await rowsOf(k)).toHaveLength(1);
    expect(await jobs().complete(again!, 'survivor')).toBe(true);
    expect(await rowsOf(k)).toHaveLength(0);
  });

  it('a running job keeps its lease while it works longer than the lease', async () => {
    const k = kind();
    await enqueue(k);
    let release!: () => void;
    let started = false;
    const worker = startWorker({
      jobs: jobs(),
      handlers: onlyKinds([k], () => {
        started = true;
        return new Promise<void>((resolve) => (release = resolve));
      }),
      concurrency: 1,
      pollMs: 50,
      leaseMs: 150,
    });
    await eventually(() => started, Boolean);
    // Three leases later the job is still this worker's: nobody else can claim it.
    await new Promise((resolve) => setTimeout(resolve, 450));
    expect((await jobs().claim('intruder', 10, 1_000)).filter((j) => j.kind === k)).toHaveLength(0);
    release();
    await eventually(async () => (await rowsOf(k)).length === 0, Boolean);
    await worker.stop();
  });

  it('wakes at once for a job enqueued in this process (no waiting for the poll)', async () => {
    const k = kind();
    const ran: number[] = [];
    const worker = startWorker({ jobs: jobs(), handlers: onlyKinds([k], async () => void ran.push(Date.now())), concurrency: 1, pollMs: 60_000, leaseMs: 5_000 });
    // Let the worker settle into its (one-minute) pause first.
    await new Promise((resolve) => setTimeout(resolve, 100));
    const enqueuedAt = Date.now();
    await enqueue(k);
    await eventually(() => ran.length === 1, Boolean);
    expect(ran[0]! - enqueuedAt).toBeLessThan(5_000);
    await worker.stop();
  });

  it("finds another process's job by its poll, and runs a delayed job when it falls due", async () => {
    const k = kind();
    const ran: string[] = [];
    const worker = startWorker({ jobs: jobs(), handlers: onlyKinds([k], async (job) => void ran.push(String(job.payload.name))), concurrency: 1, pollMs: 100, leaseMs: 5_000 });
    // Another process: its own connection and queue, so this process's worker gets no wake-up.
    const other = openDatabase(h().database.url);
    try {
      const otherQueue = createJobQueue({ db: other });
      await other.writeTransaction((trx) => otherQueue.enqueue(trx, [{ kind: k, payload: { name: 'now' } }, { kind: k, payload: { name: 'soon' }, runAt: Date.now() + 300 }]));
      await eventually(() => ran.length === 2, Boolean);
      expect(ran).toEqual(['now', 'soon']);
    } finally {
      await other.close();
      await worker.stop();
    }
  });

  it('stop lets the job in hand finish, then claims nothing more', async () => {
    const k = kind();
    await enqueue(k, { n: 1 });
    await enqueue(k, { n: 2 });
    let release!: () => void;
    const ran: unknown[] = [];
    const worker = startWorker({
      jobs: jobs(),
      handlers: onlyKinds([k], async (job) => {
        ran.push(job.payload.n);
        await new Promise<void>((resolve) => (release = resolve));
      }),
      concurrency: 1,
      pollMs: 50,
      leaseMs: 5_000,
    });
    await eventually(() => ran.length === 1, Boolean);
    const stopped = worker.stop();
    release();
    await stopped;
    expect(ran).toEqual([1]);
    const left = await rowsOf(k);
    expect(left).toHaveLength(1);
    expect(left[0].locked_by).toBeNull();
  });

  it('yields to a saturated request path: holds back, runs one bounded round per maxYieldMs, and catches up after', async () => {
    const k = kind();
    await enqueue(k, { n: 1 });
    const ran: unknown[] = [];
    const pumped: number[] = [];
    let backlog = 5;
    let pressed = true;
    let asked = 0;
    const yieldingWorker = (maxYieldMs: number, handlers: Parameters<typeof startWorker>[0]['handlers']) =>
      startWorker({
        jobs: jobs(),
        handlers,
        // One fact a call, as a drain of a long outbox does a batch a call.
        pumps: [async () => (backlog > 0 ? (backlog--, pumped.push(Date.now()), 1) : 0)],
        concurrency: 1,
        pollMs: 50,
        leaseMs: 5_000,
        maxYieldMs,
        yieldTo: () => {
          asked++;
          return pressed;
        },
      });
    const worker = yieldingWorker(60_000, onlyKinds([k], async (job) => void ran.push(job.payload.n)));
    try {
      // Barrier: the loop has gone round several times, asking each time; under pressure it did nothing.
      await eventually(() => asked >= 5, Boolean);
      expect(pumped).toHaveLength(0);
      expect(ran).toEqual([]);
      pressed = false;
      await eventually(() => ran.length === 1 && backlog === 0, Boolean);
      expect(pumped).toHaveLength(5);
    } finally {
      await worker.stop();
    }

    // With a short bound: under lasting pressure one round per bound, one batch of each drain per round.
    backlog = 5;
    pumped.length = 0;
    pressed = true;
    asked = 0;
    const bounded = yieldingWorker(150, {});
    try {
      await eventually(() => pumped.length >= 2, Boolean);
      // Rounds are at least the bound apart, and each took one batch.
      expect(pumped[1]! - pumped[0]!).toBeGreaterThanOrEqual(140);
      expect(backlog).toBeGreaterThan(0);
    } finally {
      await bounded.stop();
    }
  });

  it('a drain begun without pressure gives way after the batch in hand once the pressure comes', async () => {
    let pressed = false;
    let batches = 0;
    const worker = startWorker({
      jobs: jobs(),
      handlers: {},
      // An outbox that never empties (a stream of writes): each call drains a batch; the third brings pressure.
      pumps: [
        async () => {
          // A batch takes a turn of the event loop, as a database read does.
          await new Promise((resolve) => setImmediate(resolve));
          if (++batches === 3) pressed = true;
          return 1;
        },
      ],
      concurrency: 1,
      pollMs: 50,
      leaseMs: 5_000,
      maxYieldMs: 60_000,
      yieldTo: () => pressed,
    });
    try {
      await eventually(() => batches >= 3, Boolean);
      // Barrier: the worker is back at its yield check (it holds back: no job look, no drain) and stays there.
      const stopped = worker.stop();
      await stopped;
      expect(batches).toBe(3);
    } finally {
      await worker.stop();
    }
  });

  it('a trigger-fact wake-up runs the drains without looking for jobs; a job wake-up looks', async () => {
    const k = kind();
    const ran: unknown[] = [];
    let claims = 0;
    let drains = 0;
    const queue = jobs();
    const counted = { ...queue, claim: (...args: Parameters<typeof queue.claim>) => (claims++, queue.claim(...args)) };
    const worker = startWorker({
      jobs: counted,
      handlers: onlyKinds([k], async (job) => void ran.push(job.payload.n)),
      pumps: [async () => (drains++, 0)],
      concurrency: 1,
      pollMs: 60_000,
      leaseMs: 5_000,
    });
    try {
      await eventually(() => drains >= 1 && claims >= 1, Boolean);
      const claimsBefore = claims;
      for (let i = 0; i < 20; i++) {
        const seen = drains;
        queue.wake('facts');
        // Barrier: each wake-up has been acted on (its drain ran) before the next.
        await eventually(() => drains > seen, Boolean);
      }
      expect(claims).toBe(claimsBefore);
      await enqueue(k, { n: 1 });
      await eventually(() => ran.length === 1, Boolean);
      expect(claims).toBeGreaterThan(claimsBefore);
    } finally {
      await worker.stop();
    }
  });
});
