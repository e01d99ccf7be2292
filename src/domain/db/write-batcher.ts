import type { Knex } from 'knex';
import { EmkError, UnavailableError } from '../errors.js';
import { createObservations } from '../shared/observations.js';
import type { Database } from './database.js';
import { domainErrorOf, isBusy } from './driver-errors.js';

/**
 * Writes a group of items in one transaction and returns one result per item, in order. A handler works
 * set-based (multi-row statements); if it throws, the batch is retried item by item so one bad item fails
 * alone. A handler may run more than once for the same items (that retry, or a lock conflict): it must only
 * write through `trx`.
 */
export type BatchHandler<I, O> = (trx: Knex.Transaction, items: I[]) => Promise<O[]>;

interface Pending {
  handler: BatchHandler<unknown, unknown>;
  item: unknown;
  /** Rows the item writes: 1, or a batch's row count (see run). */
  weight: number;
  resolve(value: unknown): void;
  reject(error: unknown): void;
}

type Unit<T> = (trx: Knex.Transaction) => Promise<T>;

class FailedUnit {
  constructor(readonly error: unknown) {}
}

/**
 * A second transaction starts beside a running one only for a backlog of this many rows: a few requests wait for
 * the running commit and join the next group instead of paying a commit of their own, while a batch of hundreds
 * of rows (an import's chunk) is a group's worth by itself and runs beside the first at once.
 */
const BACKLOG_FOR_SECOND_WRITER = 8;

/** Items a group takes at most. */
const GROUP_ITEMS = 1000;
/**
 * Rows a group takes where a second transaction can run beside it (its first item whatever its weight): one
 * import chunk, so the next runs on the other connection. A single writer (SQLite) takes everything queued: with
 * nothing to run beside, fewer commits are faster (docs/performance.md#fourth-pass-the-nightly-jobs-on-postgresql).
 */
const GROUP_WEIGHT = 1000;

/** Recent groups that tell whether the request path is saturated (see underPressure). */
const PRESSURE_GROUPS = 16;
/** A reading older than this is stale: the writer has gone quiet. */
const PRESSURE_FRESH_MS = 250;

/** A writer's and its database's counters: group commits, items they carried, driver calls and statements sent. */
export const writeCounters = (writer: WriteBatcher, db: Pick<Database, 'writeStats'>) => ({
  groups: writer.groupCommitStats.groups,
  items: writer.groupCommitStats.items,
  driver_calls: db.writeStats.driverCalls,
  statements: db.writeStats.statements,
});

/**
 * Group commit: concurrent requests hand their writes to one writer, which commits everything that arrived
 * while its transaction was running in the next single transaction. There is no timer: an idle writer
 * flushes on the next macrotask (after the requests parsed in the same turn of the event loop have joined),
 * a busy one as soon as a commit returns. Up to `concurrency` transactions run at once (one on SQLite,
 * which has one writer; a few on PostgreSQL). Every caller's promise settles only after its transaction has
 * committed, so an accepted write is durable before the reply.
 */
export class WriteBatcher {
  /** Groups committed and the items they carried, since the writer was made (the bench prints them). */
  readonly groupCommitStats = { groups: 0, items: 0 };
  /** Each committed group: its items and how long its transaction took (the server's metrics watch it). */
  readonly committedGroups = createObservations<{ items: number; seconds: number }>();
  private queue: Pending[] = [];
  private queuedWeight = 0;
  /** Transactions running now, a slot each (at most `concurrency`). */
  private readonly writing = new Set<object>();
  /** Every flush not yet settled: drain waits for these. */
  private readonly flushes = new Set<Promise<void>>();
  private closed = false;
  private flushScheduled = false;
  /** Sizes of the last PRESSURE_GROUPS groups, and when the last one committed. */
  private readonly recentSizes: number[] = [];
  private lastCommitAt = -Infinity;

  /** `db.writeTransaction` runs each group: lock conflicts are retried there, driver errors translated. */
  constructor(
    private readonly db: Pick<Database, 'dialect' | 'writeTransaction'>,
    private readonly options: { concurrency: number },
  ) {}

  /**
   * Runs ad-hoc units of work inside a savepoint each: a unit that throws (a domain error, usually) is undone
   * alone while the rest of the group commits. A lock conflict is not the unit's fault: it fails the group,
   * which runs again whole.
   */
  private readonly runUnits: BatchHandler<Unit<unknown>, unknown> = async (trx, units) => {
    const results: unknown[] = [];
    for (const unit of units) {
      try {
        results.push(await trx.transaction((savepoint) => unit(savepoint)));
      } catch (error) {
        if (isBusy(this.db.dialect, error)) throw error;
        results.push(new FailedUnit(domainErrorOf(this.db.dialect, error)));
      }
    }
    return results;
  };

  submit<I, O>(handler: BatchHandler<I, O>, item: I, weight = 1): Promise<O> {
    // After close the database is going away: fail at once instead of waiting for a connection.
    if (this.closed) return Promise.reject(new UnavailableError('server is shutting down', 5));
    return new Promise<O>((resolve, reject) => {
      this.queuedWeight += weight;
      this.queue.push({
        handler: handler as BatchHandler<unknown, unknown>,
        item,
        weight,
        resolve: resolve as (value: unknown) => void,
        reject,
      });
      this.scheduleFlushes();
    });
  }

  /** One ad-hoc unit of work, committed with the current group; `rows`: how many it writes, for a batch's unit. */
  async run<T>(unit: Unit<T>, rows = 1): Promise<T> {
    const result = await this.submit(this.runUnits, unit as Unit<unknown>, rows);
    if (result instanceof FailedUnit) throw result.error;
    return result as T;
  }

  /**
   * True while writes arrive faster than one commit at a time takes them: recent groups carry a backlog's worth
   * of items on average (a steady trickle commits in groups of one or two). Background work in the same
   * process (the in-process worker of `emk serve`) yields while this holds: the request path comes first.
   */
  underPressure(): boolean {
    if (this.recentSizes.length < PRESSURE_GROUPS || Date.now() - this.lastCommitAt > PRESSURE_FRESH_MS) return false;
    const mean = this.recentSizes.reduce((sum, n) => sum + n, 0) / this.recentSizes.length;
    return mean >= BACKLOG_FOR_SECOND_WRITER;
  }

  /** Resolves once everything submitted so far has been committed (or failed). */
  async drain(): Promise<void> {
    while (this.flushes.size > 0 || this.queue.length > 0) {
      if (this.flushes.size > 0) await Promise.all(this.flushes);
      else await new Promise((resolve) => setImmediate(resolve));
    }
  }

  /** Refuses new work, then waits for what was submitted. */
  async close(): Promise<void> {
    this.closed = true;
    await this.drain();
  }

  private scheduleFlushes(): void {
    if (this.flushScheduled) return;
    this.flushScheduled = true;
    setImmediate(() => {
      this.flushScheduled = false;
      this.startFlushes();
    });
  }

  private startFlushes(): void {
    while (this.queue.length > 0 && this.writing.size < this.options.concurrency) {
      if (this.writing.size > 0 && this.queuedWeight < BACKLOG_FOR_SECOND_WRITER) return;
      const slot = {};
      this.writing.add(slot);
      const release = () => {
        if (this.writing.delete(slot)) this.startFlushes();
      };
      const flush: Promise<void> = this.flush(this.takeGroup(), release).finally(() => {
        this.flushes.delete(flush);
        release();
      });
      this.flushes.add(flush);
    }
  }

  /** The queue's head: up to GROUP_ITEMS items, and up to GROUP_WEIGHT rows where transactions run side by side. */
  private takeGroup(): Pending[] {
    const weightLimit = this.options.concurrency > 1 ? GROUP_WEIGHT : Infinity;
    let count = 0;
    let weight = 0;
    while (count < Math.min(this.queue.length, GROUP_ITEMS) && (count === 0 || weight + this.queue[count]!.weight <= weightLimit)) {
      weight += this.queue[count]!.weight;
      count++;
    }
    this.queuedWeight -= weight;
    return this.queue.splice(0, count);
  }

  /**
   * `committed` frees the writer's slot as soon as the group's transaction has ended, and the callers resume on
   * the next macrotask: the next group's transaction first runs up to its call into the driver, so the database
   * works on it while this group's callers are answered (their replies no longer delay its commit).
   */
  private async flush(batch: Pending[], committed: () => void = () => {}): Promise<void> {
    try {
      const startedAt = performance.now();
      const results = await this.db.writeTransaction((trx) => this.apply(trx, batch));
      committed();
      this.committedGroups.report({ items: batch.length, seconds: (performance.now() - startedAt) / 1000 });
      this.groupCommitStats.groups++;
      this.groupCommitStats.items += batch.length;
      this.recentSizes.push(batch.length);
      if (this.recentSizes.length > PRESSURE_GROUPS) this.recentSizes.shift();
      this.lastCommitAt = Date.now();
      setImmediate(() => batch.forEach((pending, i) => pending.resolve(results[i])));
    } catch (error) {
      // Still locked after every attempt: no item is to blame, and alone each would wait as long again.
      if (batch.length === 1 || error instanceof UnavailableError) return batch.forEach((pending) => pending.reject(error));
      // Find the culprit: each item again in its own transaction.
      for (const pending of batch) await this.flush([pending]);
    }
  }

  /** Groups the batch by handler, keeping each handler's items in arrival order. */
  private async apply(trx: Knex.Transaction, batch: Pending[]): Promise<unknown[]> {
    const groups = new Map<BatchHandler<unknown, unknown>, number[]>();
    batch.forEach((pending, i) => {
      const positions = groups.get(pending.handler);
      if (positions) positions.push(i);
      else groups.set(pending.handler, [i]);
    });
    const results: unknown[] = new Array(batch.length);
    for (const [handler, positions] of groups) {
      const out = await handler(
        trx,
        positions.map((i) => batch[i]!.item),
      );
      if (out.length !== positions.length) throw new EmkError('batch handler returned a wrong count', 'internal', 500);
      positions.forEach((position, k) => (results[position] = out[k]));
    }
    return results;
  }
}
