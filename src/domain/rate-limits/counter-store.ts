import type { Knex } from 'knex';
import { WINDOW_MS, type WindowCounts } from './sliding-window.js';
import { compositeKey, pairOf } from '../shared/keys.js';

/** Counts requests per key and fixed window. */
export interface CounterStore {
  /** Adds one request to each key's window; resolves with the counts including it. */
  increment(keys: string[], windowStart: number): Promise<WindowCounts[]>;
  /** Takes back requests that were refused, so the window counts accepted requests only. */
  release(keys: string[], windowStart: number): void;
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
}

/**
 * Counters in the shared database, so every process on one PostgreSQL database enforces one budget. The
 * increments of concurrent requests are summed per key and written in one upsert statement per flush
 * (flushing as soon as the previous one returns). Pass a pool whose commits do not wait for the disk: the
 * counters are not customer data. A previous window no longer changes, so its counts are read once.
 */
export function createDatabaseCounterStore(knex: Knex): CounterStore {
  let pending = new Map<string, PendingIncrement>();
  let flushing: Promise<void> | null = null;
  let lastSweep = 0;
  /** slot(key, window) → the key's count in the window before. */
  const previousCounts = new Map<string, number>();
  const slot = (key: string, start: number) => compositeKey(start, key);

  const add = (key: string, start: number, delta: number, waiter?: PendingIncrement['waiters'][0], failure?: PendingIncrement['failures'][0]) => {
    const id = slot(key, start);
    const entry = pending.get(id) ?? { delta: 0, waiters: [], failures: [] };
    entry.delta += delta;
    if (waiter) entry.waiters.push(waiter);
    if (failure) entry.failures.push(failure);
    pending.set(id, entry);
    if (!flushing) flushing = flushLoop();
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
    const rows = ids.map((id) => {
      const [start, key] = pairOf(id);
      return { key, window_start: Number(start), count: batch.get(id)!.delta };
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
      const id = slot(total.key, Number(total.window_start));
      const entry = batch.get(id)!;
      // Hand out the positions this flush added, in arrival order.
      let position = Number(total.count) - entry.waiters.length;
      for (const waiter of entry.waiters) waiter({ previous: previousCounts.get(id) ?? 0, current: ++position });
    }
    const now = Date.now();
    if (now - lastSweep > WINDOW_MS) {
      lastSweep = now;
      const cutoff = now - 3 * WINDOW_MS;
      await knex('rate_limit_counters').where('window_start', '<', cutoff).delete();
      for (const id of previousCounts.keys()) if (Number(pairOf(id)[0]) < cutoff) previousCounts.delete(id);
    }
  }

  return {
    increment(keys, start) {
      return Promise.all(keys.map((key) => new Promise<WindowCounts>((resolve, reject) => add(key, start, 1, resolve, reject))));
    },
    release(keys, start) {
      for (const key of keys) add(key, start, -1);
    },
    async close() {
      while (flushing) await flushing;
    },
  };
}
