import type { Knex } from 'knex';
import { WINDOW_MS, type WindowCounts } from './sliding-window.js';
import { compositeKey, pairOf } from '../shared/keys.js';

/** Counts requests per key and fixed window. */
export interface CounterStore {
  /**
   * Adds one request to each key's window; resolves with the counts including it. `limits` (per key, 0 for
   * none) lets a shared store reserve positions ahead while a budget is far from its limit.
   */
  increment(keys: string[], windowStart: number, limits?: number[]): Promise<WindowCounts[]>;
  /**
   * Takes back requests that were refused, so the window counts accepted requests only; `positions` are the
   * `current` counts `increment` gave them.
   */
  release(keys: string[], windowStart: number, positions: number[]): void;
  close(): Promise<void>;
}

const SWEEP_MS = WINDOW_MS;

/** One process's counters in memory: for the embedded SQLite deployment, which is one process. */
export function createMemoryCounterStore(): CounterStore {
  const windows = new Map<string, { start: number; current: number; previous: number }>();
  const sweep = setInterval(() => {
    const cutoff = Date.now() - 2 * WINDOW_MS;
    for (const [key, w] of windows) if (w.start < cutoff) windows.delete(key);
  }, SWEEP_MS);
  sweep.unref();

  const windowOf = (key: string, start: number) => {
    let w = windows.get(key);
    if (!w) {
      w = { start, current: 0, previous: 0 };
      windows.set(key, w);
    } else if (w.start !== start) {
      w.previous = w.start === start - WINDOW_MS ? w.current : 0;
      w.current = 0;
      w.start = start;
    }
    return w;
  };

  return {
    async increment(keys, start) {
      return keys.map((key) => {
        const w = windowOf(key, start);
        w.current += 1;
        return { previous: w.previous, current: w.current };
      });
    },
    release(keys, start) {
      for (const key of keys) {
        const w = windows.get(key);
        if (w && w.start === start && w.current > 0) w.current -= 1;
      }
    },
    async close() {
      clearInterval(sweep);
    },
  };
}

interface PendingIncrement {
  delta: number;
  waiters: Array<(counts: WindowCounts) => void>;
  failures: Array<(error: unknown) => void>;
  /** The tightest limit of the waiting requests (0: none known). */
  limit: number;
}

/** Positions of one key's window reserved in the database: first … end, of them next … end not handed out. */
interface Ahead {
  start: number;
  first: number;
  next: number;
  end: number;
}

/**
 * Positions reserved ahead per flush: at most this many, and at most this share of what is left below the
 * limit, so near the limit every request reserves its own position (exactly as without reservations).
 */
const MOST_AHEAD = 64;
const AHEAD_SHARE_OF_HEADROOM = 0.1;

/**
 * Counters in the shared database, so every process on one PostgreSQL database enforces one budget. The
 * increments of concurrent requests are summed per key and written in one upsert statement per flush
 * (flushing as soon as the previous one returns). Pass a pool whose commits do not wait for the disk: the
 * counters are not customer data. A previous window no longer changes, so its counts are read once.
 *
 * While a budget is far from its limit, a flush also reserves positions ahead (up to MOST_AHEAD, at most a
 * tenth of the headroom) and the process hands them out without a statement: under load the counters cost one
 * upsert per block instead of one per flush, because an upsert per flush made them the largest single cost of
 * PostgreSQL collect (docs/performance.md#fifth-pass-where-each-rows-cpu-goes-and-what-bounds-it). Every
 * position is still counted in the database before it is used, so the processes together never admit more than
 * the limit; another process sees a count that includes positions reserved here and not yet used, so near the
 * limit it refuses a little early, never late. Reserved positions left unused are given back when the window
 * rolls, when the store closes, and at once when a block reaches past the limit.
 */
export function createDatabaseCounterStore(knex: Knex): CounterStore {
  let pending = new Map<string, PendingIncrement>();
  let flushing: Promise<void> | null = null;
  let lastSweep = 0;
  /** slot(key, window) → the key's count in the window before. */
  const previousCounts = new Map<string, number>();
  /** key → positions reserved ahead for its current window. */
  const ahead = new Map<string, Ahead>();
  const slot = (key: string, start: number) => compositeKey(start, key);

  const add = (
    key: string,
    start: number,
    delta: number,
    waiter?: PendingIncrement['waiters'][0],
    failure?: PendingIncrement['failures'][0],
    limit = 0,
  ) => {
    const id = slot(key, start);
    const entry = pending.get(id) ?? { delta: 0, waiters: [], failures: [], limit: 0 };
    entry.delta += delta;
    if (waiter) entry.waiters.push(waiter);
    if (failure) entry.failures.push(failure);
    if (limit > 0) entry.limit = entry.limit > 0 ? Math.min(entry.limit, limit) : limit;
    pending.set(id, entry);
    if (!flushing) flushing = flushLoop();
  };

  /** Gives the database back the positions of `key` reserved ahead and not used. */
  const giveBack = (key: string) => {
    const held = ahead.get(key);
    if (!held) return;
    ahead.delete(key);
    if (held.next <= held.end) add(key, held.start, -(held.end - held.next + 1));
  };

  /**
   * Hands positions of a new block to the requests that queued for the next flush while it was on its way
   * (a burst), so they need no statement of their own; returns the block with what is left.
   */
  const serveQueued = (id: string, previous: number, block: Ahead): Ahead => {
    const queued = pending.get(id);
    // Requests taken back in the queue (delta below the requests) go to the database as they are.
    if (!queued || queued.delta !== queued.waiters.length) return block;
    const served = Math.min(queued.waiters.length, block.end - block.next + 1);
    for (const waiter of queued.waiters.splice(0, served)) waiter({ previous, current: block.next++ });
    queued.failures.splice(0, served);
    queued.delta -= served;
    if (queued.waiters.length === 0) pending.delete(id);
    return block;
  };

  /** Positions to reserve beyond the waiting requests' own: none near the limit, nor without one. */
  const aheadFor = (key: string, start: number, entry: PendingIncrement): number => {
    // Only a flush of new requests alone (no requests taken back in it) has its positions at the top of the count.
    if (entry.limit <= 0 || entry.delta !== entry.waiters.length) return 0;
    const held = ahead.get(key);
    const current = held && held.start === start;
    // Requests that queued while the last block was on its way: the block serves the ones after them.
    if (current && held.next <= held.end) return 0;
    const headroom = entry.limit - (current ? held.end : 0) - (previousCounts.get(slot(key, start)) ?? 0) - entry.waiters.length;
    return Math.max(0, Math.min(MOST_AHEAD, Math.floor(headroom * AHEAD_SHARE_OF_HEADROOM)));
  };

  async function flushLoop() {
    try {
      while (pending.size > 0) {
        const batch = pending;
        pending = new Map();
        await flush(batch).catch((error) => {
          for (const entry of batch.values()) for (const fail of entry.failures) fail(error);
        });
      }
    } finally {
      flushing = null;
    }
  }

  async function flush(batch: Map<string, PendingIncrement>) {
    const ids = [...batch.keys()].sort();
    const extra = new Map<string, number>();
    const rows = ids.map((id) => {
      const [start, key] = pairOf(id);
      const entry = batch.get(id)!;
      const reserved = aheadFor(key, Number(start), entry);
      if (reserved > 0) extra.set(id, reserved);
      return { key, window_start: Number(start), count: entry.delta + reserved };
    });
    const totals = (await knex('rate_limit_counters')
      .insert(rows)
      .onConflict(['key', 'window_start'])
      .merge({ count: knex.raw('?? + ??', ['rate_limit_counters.count', 'excluded.count']) })
      .returning(['key', 'window_start', 'count'])) as Array<{ key: string; window_start: number; count: number }>;
    const unknown = rows.filter((r) => !previousCounts.has(slot(r.key, r.window_start)));
    if (unknown.length > 0) {
      const previous = await knex('rate_limit_counters')
        .whereIn(
          ['key', 'window_start'],
          unknown.map((r) => [r.key, r.window_start - WINDOW_MS]),
        )
        .select('key', 'window_start', 'count');
      for (const r of unknown) previousCounts.set(slot(r.key, r.window_start), 0);
      for (const p of previous) previousCounts.set(slot(p.key, Number(p.window_start) + WINDOW_MS), Number(p.count));
    }
    for (const total of totals) {
      const start = Number(total.window_start);
      const id = slot(total.key, start);
      const entry = batch.get(id)!;
      const reserved = extra.get(id) ?? 0;
      // Hand out the positions this flush added, in arrival order; those reserved ahead are the top ones.
      let position = Number(total.count) - reserved - entry.waiters.length;
      for (const waiter of entry.waiters) waiter({ previous: previousCounts.get(id) ?? 0, current: ++position });
      if (reserved === 0) continue;
      // Reserved positions past the limit (other processes counted meanwhile) would only make them refuse early.
      const usable = Math.max(position, Math.min(Number(total.count), entry.limit));
      if (usable < Number(total.count)) add(total.key, start, usable - Number(total.count));
      giveBack(total.key);
      if (usable > position) ahead.set(total.key, serveQueued(id, previousCounts.get(id) ?? 0, { start, first: position + 1, next: position + 1, end: usable }));
    }
    const now = Date.now();
    if (now - lastSweep > WINDOW_MS) {
      lastSweep = now;
      const cutoff = now - 3 * WINDOW_MS;
      await knex('rate_limit_counters').where('window_start', '<', cutoff).delete();
      for (const id of previousCounts.keys()) if (Number(pairOf(id)[0]) < cutoff) previousCounts.delete(id);
    }
  }

  const take = (key: string, start: number, limit: number): Promise<WindowCounts> => {
    const held = ahead.get(key);
    if (held && held.start < start) giveBack(key);
    else if (held && held.start === start && held.next <= held.end) {
      const previous = previousCounts.get(slot(key, start));
      if (previous !== undefined) return Promise.resolve({ previous, current: held.next++ });
    }
    return new Promise<WindowCounts>((resolve, reject) => add(key, start, 1, resolve, reject, limit));
  };

  return {
    increment(keys, start, limits = []) {
      return Promise.all(keys.map((key, i) => take(key, start, limits[i] ?? 0)));
    },
    release(keys, start, positions) {
      keys.forEach((key, i) => {
        // The last position handed out from a block goes back to it (the next request gets it again, as it
        // would from the database); any other goes back to the database.
        const held = ahead.get(key);
        if (held && held.start === start && held.next > held.first && positions[i] === held.next - 1) held.next--;
        else add(key, start, -1);
      });
    },
    async close() {
      for (const key of [...ahead.keys()]) giveBack(key);
      while (flushing) await flushing;
    },
  };
}
