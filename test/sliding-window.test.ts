import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openDatabase, type Database } from '../src/domain/db/database.js';
import {
  createDatabaseCounterStore,
  createMemoryCounterStore,
  type CounterStore,
} from '../src/domain/rate-limits/counter-store.js';
import { createRateLimiter, type RateLimitBudget, type RateLimiter } from '../src/domain/rate-limits/rate-limiter.js';
import { decide, WINDOW_MS, windowStartOf, type WindowCounts } from '../src/domain/rate-limits/sliding-window.js';
import { createTestDatabase, type TestDatabase } from './helpers/test-databases.js';

const W = WINDOW_MS;
/** A window start in the future, so nothing that sweeps by the real clock touches the test's windows. */
const T0 = windowStartOf(Date.now()) + 10 * W;

describe('decide() — the sliding-window counter', () => {
  it('uses one-minute windows aligned on the minute', () => {
    expect(W).toBe(60_000);
    expect(windowStartOf(T0 + 59_999)).toBe(T0);
    expect(windowStartOf(T0 + 60_000)).toBe(T0 + W);
    expect(T0 % 60_000).toBe(0);
  });

  it('a burst crossing a window boundary within 6 s is decided exactly as inside one window (limit 10)', () => {
    // The first k requests fall before the boundary, the rest e ms after it.
    for (let k = 1; k <= 10; k++) {
      for (const e of [0, 1, 999, Math.floor(W / k) - 1]) {
        for (let n = 1; n <= 12; n++) {
          const inside = decide(10, { previous: 0, current: n }, T0 + 30_000);
          const counts: WindowCounts = n <= k ? { previous: 0, current: n } : { previous: k, current: n - k };
          const crossing = decide(10, counts, n <= k ? T0 + W - 1 : T0 + W + e);
          expect([crossing.allowed, crossing.remaining], `k=${k} e=${e} n=${n}`).toEqual([inside.allowed, inside.remaining]);
        }
      }
    }
  });

  it('allows up to the limit within a window and refuses the 11th of 10', () => {
    for (let n = 1; n <= 10; n++) {
      const d = decide(10, { previous: 0, current: n }, T0 + 5_000);
      expect(d).toMatchObject({ allowed: true, limit: 10, remaining: 10 - n, retryAfterSeconds: 0 });
    }
    const refused = decide(10, { previous: 0, current: 11 }, T0 + 5_000);
    expect(refused.allowed).toBe(false);
    expect(refused.remaining).toBe(0);
    expect(refused.limit).toBe(10);
  });

  it("weighs the previous window's share by the part of it still inside the rolling minute", () => {
    // 10 requests in the previous window; 1 second into the new one, 59/60 of them still count.
    expect(decide(10, { previous: 10, current: 1 }, T0 + 1_000).allowed).toBe(false);
    // Exactly 0.1 into the window, 9 of them count: 9 + 1 = 10 fits.
    expect(decide(10, { previous: 10, current: 1 }, T0 + 5_999).allowed).toBe(false);
    expect(decide(10, { previous: 10, current: 1 }, T0 + 6_500).allowed).toBe(true);
    // Half-way through, half of the previous window counts.
    const half = decide(10, { previous: 10, current: 3 }, T0 + 30_000);
    expect(half).toMatchObject({ allowed: true, remaining: 2 });
    expect(decide(10, { previous: 10, current: 6 }, T0 + 30_000).allowed).toBe(false);
    // A previous window far over the limit still blocks most of the next one.
    expect(decide(10, { previous: 40, current: 1 }, T0 + 44_000).allowed).toBe(false);
    expect(decide(10, { previous: 40, current: 1 }, T0 + 47_000).allowed).toBe(true);
  });

  it('remaining is the whole number of requests left in the rolling minute', () => {
    expect(decide(10, { previous: 0, current: 1 }, T0).remaining).toBe(9);
    // 10 * (1 - 0.25) + 1 = 8.5 -> 1.5 left -> 1 whole request.
    expect(decide(10, { previous: 10, current: 1 }, T0 + 15_000).remaining).toBe(1);
    // 4 * (1 - 0.5) + 2 = 4 -> 6 left.
    expect(decide(10, { previous: 4, current: 2 }, T0 + 30_000).remaining).toBe(6);
    expect(decide(200, { previous: 0, current: 200 }, T0 + 1).remaining).toBe(0);
  });

  it('resetSeconds counts the whole seconds to the end of the current window, at least 1', () => {
    expect(decide(10, { previous: 0, current: 1 }, T0).resetSeconds).toBe(60);
    expect(decide(10, { previous: 0, current: 1 }, T0 + 15_500).resetSeconds).toBe(45);
    expect(decide(10, { previous: 0, current: 1 }, T0 + 59_000).resetSeconds).toBe(1);
    expect(decide(10, { previous: 0, current: 1 }, T0 + 59_999).resetSeconds).toBe(1);
    expect(decide(10, { previous: 0, current: 11 }, T0 + 20_000).resetSeconds).toBe(40);
  });

  it('retryAfterSeconds: examples', () => {
    // The current window is full (10 accepted 30 s in): the next window must be 1/10 through
    // before 10 * 0.9 + 1 fits: 30 s + 6 s.
    expect(decide(10, { previous: 0, current: 11 }, T0 + 30_000).retryAfterSeconds).toBe(36);
    // Only the previous window's share is in the way: it has to drop from 10 * 59/60 to 9 (at 6 s).
    expect(decide(10, { previous: 10, current: 1 }, T0 + 1_000).retryAfterSeconds).toBe(5);
    // Limit 1 with one accepted: this window's request counts in full until the next window ends.
    expect(decide(1, { previous: 0, current: 2 }, T0 + 10_000).retryAfterSeconds).toBe(110);
    // Never 0 for a refusal, even a millisecond before it would pass.
    expect(decide(10, { previous: 10, current: 1 }, T0 + 5_999).retryAfterSeconds).toBe(1);
  });

  /**
   * Every refusal over a grid of limits, counts and moments (including exact window fractions such as 1/3
   * and 7/10): Retry-After is whole seconds >= 1; a client that waits exactly that long gets through; one
   * that waits a second less does not (the header never overstates the wait by a whole second).
   */
  function retryAfterGrid() {
    const countsAt = (previous: number, accepted: number, later: number): WindowCounts => {
      const windowsLater = (windowStartOf(later) - T0) / W;
      if (windowsLater === 0) return { previous, current: accepted + 1 };
      if (windowsLater === 1) return { previous: accepted, current: 1 };
      return { previous: 0, current: 1 };
    };
    const notWhole: string[] = [];
    const stillRefused: string[] = [];
    const tooLong: string[] = [];
    let refusals = 0;
    for (const limit of [1, 2, 3, 5, 10, 30, 200]) {
      for (const previous of [...new Set([0, 1, Math.floor(limit / 2), limit, limit * 3])]) {
        for (let accepted = 0; accepted <= limit; accepted++) {
          for (const elapsed of [0, 1, 500, 999, 1_000, 6_000, 15_500, 30_000, 41_000, 42_000, 45_001, 59_000, 59_999]) {
            const now = T0 + elapsed;
            const d = decide(limit, { previous, current: accepted + 1 }, now);
            if (d.allowed) continue;
            refusals++;
            const r = d.retryAfterSeconds;
            const label = `limit ${limit}, previous ${previous}, accepted ${accepted}, at +${elapsed} ms: Retry-After ${r}`;
            if (!Number.isInteger(r) || r < 1) {
              notWhole.push(label);
              continue;
            }
            const later = now + r * 1000;
            if (!decide(limit, countsAt(previous, accepted, later), later).allowed) stillRefused.push(label);
            const sooner = now + (r - 1) * 1000;
            if (r > 1 && decide(limit, countsAt(previous, accepted, sooner), sooner).allowed) tooLong.push(label);
          }
        }
      }
    }
    return { refusals, notWhole, stillRefused, tooLong };
  }
  const summary = (list: string[]) => ({ count: list.length, first: list.slice(0, 5) });

  it('retryAfterSeconds is whole seconds >= 1 and waiting exactly that long allows a request', () => {
    const grid = retryAfterGrid();
    expect(grid.refusals).toBeGreaterThan(5_000);
    expect(grid.notWhole).toEqual([]);
    expect(summary(grid.stillRefused)).toEqual({ count: 0, first: [] });
  });

  it('retryAfterSeconds is not a whole second longer than needed', () => {
    expect(summary(retryAfterGrid().tooLong)).toEqual({ count: 0, first: [] });
  });
});

/** The rate limiter over one counter store, with a clock the test moves. */
function limiterScenarios(name: string, makeStore: () => CounterStore | Promise<CounterStore>) {
  describe(`rate limiter over the ${name} counter store`, () => {
    let store: CounterStore;
    let now = T0;
    let keyCounter = 0;
    beforeAll(async () => {
      store = await makeStore();
    });
    const clock = () => now;
    const limiter = () => createRateLimiter(store, clock);
    /** Budget keys unique to each test, so tests never share a counter. */
    const key = (label: string) => `test:${label}:${++keyCounter}:${Math.random().toString(36).slice(2)}`;
    const at = (ms: number) => {
      now = ms;
    };
    const spendAt = async (ms: number, budgets: RateLimitBudget[]) => {
      at(ms);
      return limiter().spend(budgets);
    };

    it('allows 10 of 10 in a window, refuses the 11th; remaining counts down', async () => {
      const b = [{ key: key('ten'), limit: 10 }];
      const remaining: number[] = [];
      for (let i = 0; i < 10; i++) {
        const d = await spendAt(T0 + 1_000 + i * 100, b);
        expect(d?.allowed).toBe(true);
        remaining.push(d!.remaining);
      }
      expect(remaining).toEqual([9, 8, 7, 6, 5, 4, 3, 2, 1, 0]);
      const eleventh = await spendAt(T0 + 3_000, b);
      expect(eleventh).toMatchObject({ allowed: false, limit: 10, remaining: 0 });
      expect(eleventh!.retryAfterSeconds).toBeGreaterThanOrEqual(1);
      expect(eleventh!.resetSeconds).toBe(57);
    });

    it('10 requests at the end of one window block the start of the next and free up as it rolls', async () => {
      const b = [{ key: key('roll'), limit: 10 }];
      for (let i = 0; i < 10; i++) expect((await spendAt(T0 + 58_000 + i * 100, b))?.allowed).toBe(true);
      // A fixed window would start from zero here; the rolling minute still holds almost all 10.
      const early = await spendAt(T0 + W + 1_000, b);
      expect(early?.allowed).toBe(false);
      expect(early?.retryAfterSeconds).toBe(5);
      // One attempt per second (half-way through each second) through the new window: after k accepted,
      // 10 * (1 - t/60) + k + 1 <= 10 needs t >= 6 (k + 1) seconds.
      const acceptedAt: number[] = [];
      for (let s = 2; s < 60; s++) {
        const d = await spendAt(T0 + W + s * 1_000 + 500, b);
        if (d?.allowed) acceptedAt.push(s);
      }
      expect(acceptedAt).toEqual([6, 12, 18, 24, 30, 36, 42, 48, 54]);
    });

    it('refused requests are not counted: a client that keeps hammering gets through once the window rolls', async () => {
      const b = [{ key: key('hammer'), limit: 10 }];
      for (let i = 0; i < 10; i++) expect((await spendAt(T0 + 10_000 + i, b))?.allowed).toBe(true);
      // 200 refused requests for the rest of the window.
      for (let i = 0; i < 200; i++) expect((await spendAt(T0 + 11_000 + i * 200, b))?.allowed).toBe(false);
      // Had the refusals counted, the next window would start with 210 "previous" requests and stay shut
      // (210 * (1 - f) + 1 <= 10 needs f >= 0.96); with 10 accepted, 0.1 into the window is enough.
      expect((await spendAt(T0 + W + 5_500, b))?.allowed).toBe(false);
      const through = await spendAt(T0 + W + 6_500, b);
      expect(through?.allowed).toBe(true);
      expect(through?.remaining).toBe(0);
    });

    it('a window with nothing for two minutes starts from zero', async () => {
      const b = [{ key: key('idle'), limit: 10 }];
      for (let i = 0; i < 10; i++) await spendAt(T0 + 59_000 + i, b);
      const later = await spendAt(T0 + 2 * W + 500, b);
      expect(later).toMatchObject({ allowed: true, remaining: 9 });
    });

    it('Retry-After is whole seconds >= 1 and waiting exactly that long allows a request', async () => {
      for (const [limit, offset] of [
        [10, 2_300],
        [3, 45_700],
        [1, 12_345],
        [5, 59_900],
      ] as const) {
        const b = [{ key: key(`retry-${limit}`), limit }];
        let t = T0 + offset;
        for (let i = 0; i < limit; i++) expect((await spendAt(t, b))?.allowed).toBe(true);
        const refused = await spendAt(t, b);
        expect(refused?.allowed).toBe(false);
        const r = refused!.retryAfterSeconds;
        expect(Number.isInteger(r)).toBe(true);
        expect(r).toBeGreaterThanOrEqual(1);
        if (r > 1) expect((await spendAt(t + (r - 1) * 1_000, b))?.allowed).toBe(false);
        t += r * 1_000;
        expect((await spendAt(t, b))?.allowed).toBe(true);
      }
    });

    it('limit 0 disables a budget', async () => {
      const off = [{ key: key('off'), limit: 0 }];
      for (let i = 0; i < 50; i++) expect(await spendAt(T0 + 1_000, off)).toBeNull();
      // Next to a live budget, a disabled one neither refuses nor is the one reported.
      const mixed = [
        { key: key('off2'), limit: 0 },
        { key: key('live'), limit: 2 },
      ];
      expect(await spendAt(T0 + 1_000, mixed)).toMatchObject({ allowed: true, limit: 2, remaining: 1 });
      expect(await spendAt(T0 + 1_000, mixed)).toMatchObject({ allowed: true, limit: 2, remaining: 0 });
      expect((await spendAt(T0 + 1_000, mixed))?.allowed).toBe(false);
    });

    it('several budgets: all must allow, the tightest is reported, a refusal releases the spend on the others', async () => {
      const wide = { key: key('wide'), limit: 100 };
      const narrow = { key: key('narrow'), limit: 2 };
      const first = await spendAt(T0 + 1_000, [wide, narrow]);
      expect(first).toMatchObject({ allowed: true, limit: 2, remaining: 1 });
      expect((await spendAt(T0 + 1_000, [wide, narrow]))?.allowed).toBe(true);
      for (let i = 0; i < 20; i++) {
        const refused = await spendAt(T0 + 2_000, [wide, narrow]);
        expect(refused).toMatchObject({ allowed: false, limit: 2, remaining: 0 });
      }
      // The wide budget kept only the 2 accepted requests: this third one leaves 97, not 77.
      expect(await spendAt(T0 + 3_000, [wide])).toMatchObject({ allowed: true, limit: 100, remaining: 97 });
      // And the narrow one was not charged by the refused attempts either: in the next window,
      // 2 * (1 - 0.5) + 1 = 2 fits at half-time.
      expect((await spendAt(T0 + W + 30_500, [narrow]))?.allowed).toBe(true);
    });

    it('the refusal reported is the one with the longest wait', async () => {
      const soon = { key: key('soon'), limit: 10 };
      const late = { key: key('late'), limit: 1 };
      // `soon` is full of requests from the previous window, `late` of one from this window.
      for (let i = 0; i < 10; i++) await spendAt(T0 + 59_000, [soon]);
      await spendAt(T0 + W + 1_000, [late]);
      at(T0 + W + 2_000);
      const d = await limiter().spend([soon, late]);
      expect(d?.allowed).toBe(false);
      expect(d?.limit).toBe(1);
      expect(d?.retryAfterSeconds).toBe(118);
    });
  });
}

limiterScenarios('memory', () => createMemoryCounterStore());

describe.skipIf(!process.env.EMK_TEST_DATABASE_URL)('database counter store (PostgreSQL)', () => {
  let database: TestDatabase;
  let db: Database;
  beforeAll(async () => {
    database = await createTestDatabase('postgres');
    db = openDatabase(database.url);
  });
  afterAll(async () => {
    await db?.close();
    await database?.drop();
  });

  limiterScenarios('database', () => createDatabaseCounterStore(db.knex));

  /** Two limiters on one database through two connections (two processes), closed once `run` is over. */
  async function onTwoStores<T>(run: (a: RateLimiter, b: RateLimiter) => Promise<T>): Promise<T> {
    const other = openDatabase(database.url);
    const a = createRateLimiter(createDatabaseCounterStore(db.knex), () => T0 + 1_000);
    const b = createRateLimiter(createDatabaseCounterStore(other.knex), () => T0 + 1_000);
    try {
      return await run(a, b);
    } finally {
      await a.close();
      await b.close();
      await other.close();
    }
  }
  const counted = async (key: string) => Number((await db.knex('rate_limit_counters').where({ key }).first()).count);

  it('two stores on one database (two processes) share one budget, also under concurrency', async () => {
    const budget = [{ key: `shared:${Math.random()}`, limit: 10 }];
    const decisions = await onTwoStores((a, b) => Promise.all(Array.from({ length: 30 }, (_, i) => (i % 2 ? a : b).spend(budget))));
    expect(decisions.filter((d) => d?.allowed)).toHaveLength(10);
    // Each accepted request got its own position: remaining 9..0 handed out once each.
    expect(
      decisions
        .filter((d) => d?.allowed)
        .map((d) => d!.remaining)
        .sort((x, y) => x - y),
    ).toEqual([0, 1, 2, 3, 4, 5, 6, 7, 8, 9]);
  });

  it('a refused request taken back in the same flush as a new request does not inflate its count', async () => {
    const store = createDatabaseCounterStore(db.knex);
    const k = `merge:${Math.random()}`;
    const start = T0;
    expect(await store.increment([k], start)).toEqual([{ previous: 0, current: 1 }]);
    // The second request is over a limit of 1: the rate limiter takes it back (release, not awaited) ...
    expect(await store.increment([k], start)).toEqual([{ previous: 0, current: 2 }]);
    // ... while another key keeps a flush in flight, so the release and the next request share a flush.
    const busy = store.increment([`${k}:other`], start);
    store.release([k], start, [2]);
    const third = store.increment([k], start);
    await busy;
    // Accepted so far: the first request only, so the third one is the 2nd in the window.
    expect(await third).toEqual([{ previous: 0, current: 2 }]);
    await store.close();
    expect(await counted(k)).toBe(2);
  });

  it('far from its limit a store reserves positions ahead: one upsert serves many requests, positions stay in order', async () => {
    const statements: string[] = [];
    const onQuery = (query: { sql: string }) => void (/rate_limit_counters/.test(query.sql) && statements.push(query.sql));
    db.knex.on('query', onQuery);
    try {
      const limiter = createRateLimiter(createDatabaseCounterStore(db.knex), () => T0 + 1_000);
      const budget = [{ key: `ahead:${Math.random()}`, limit: 1_000_000 }];
      const remaining: number[] = [];
      for (let i = 0; i < 200; i++) remaining.push((await limiter.spend(budget))!.remaining);
      expect(remaining).toEqual(Array.from({ length: 200 }, (_, i) => 1_000_000 - 1 - i));
      // Blocks of 64 ahead plus the request's own: 4 reservations (and the previous window's count, read once).
      const upserts = statements.filter((sql) => /^insert/i.test(sql));
      expect(upserts).toHaveLength(4);
      await limiter.close();
      // Closing gives back the unused positions: the window counts the 200 requests, no more.
      expect(await counted(budget[0]!.key)).toBe(200);
    } finally {
      db.knex.removeListener('query', onQuery);
    }
  });

  it('two stores reserving ahead, taking turns, admit exactly the limit between them, each position once', async () => {
    // Limit 300: the first blocks are 29 ahead, shrinking to one position at a time near the limit.
    const budget = [{ key: `ahead-shared:${Math.random()}`, limit: 300 }];
    const decisions = await onTwoStores(async (a, b) => {
      const taken = [];
      for (let i = 0; i < 500; i++) taken.push(await (i % 2 ? a : b).spend(budget));
      return taken;
    });
    const allowed = decisions.filter((d) => d?.allowed);
    expect(allowed).toHaveLength(300);
    expect(allowed.map((d) => d!.remaining).sort((x, y) => x - y)).toEqual(Array.from({ length: 300 }, (_, i) => i));
    // Both stores closed: the window counts the admitted requests, no more.
    expect(await counted(budget[0]!.key)).toBe(300);
  });

  it('under a concurrent burst on two stores, blocks never let more than the limit through, and no position twice', async () => {
    const budget = [{ key: `ahead-burst:${Math.random()}`, limit: 300 }];
    const decisions = await onTwoStores((a, b) => Promise.all(Array.from({ length: 600 }, (_, i) => (i % 2 ? a : b).spend(budget))));
    const remaining = decisions.filter((d) => d?.allowed).map((d) => d!.remaining);
    // Positions a store holds unused when its requests run out make the other refuse early, never late.
    expect(remaining.length).toBeLessThanOrEqual(300);
    expect(remaining.length).toBeGreaterThanOrEqual(240);
    expect(new Set(remaining).size).toBe(remaining.length);
    expect(await counted(budget[0]!.key)).toBe(remaining.length);
  });

  it('positions reserved ahead and not used are given back when the window rolls', async () => {
    const store = createDatabaseCounterStore(db.knex);
    const k = `roll-ahead:${Math.random()}`;
    expect(await store.increment([k], T0, [10_000])).toEqual([{ previous: 0, current: 1 }]);
    // The next window: its first request finds the one request of the window before, not the block reserved.
    expect(await store.increment([k], T0 + W, [10_000])).toEqual([{ previous: 1, current: 1 }]);
    await store.close();
    const rows = await db.knex('rate_limit_counters').where({ key: k }).orderBy('window_start');
    expect(rows.map((r) => Number(r.count))).toEqual([1, 1]);
  });
});
