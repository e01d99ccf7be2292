import { systemClock, type Clock } from '../shared/time.js';
import type { Database } from '../db/database.js';
import { createDatabaseCounterStore, createMemoryCounterStore, type CounterStore } from './counter-store.js';
import { decide, windowStartOf, type RateLimitDecision } from './sliding-window.js';

/** One budget a request spends from: a key (scope and subject, e.g. `collect:ip:1.2.3.4`) and its limit. */
export interface RateLimitBudget {
  key: string;
  /** Requests per rolling minute; 0 disables the budget. */
  limit: number;
}

/** A budget key's scope: its first two parts (`collect:ip` of `collect:ip:1.2.3.4`), never its subject. */
const scopeOf = (key: string) => key.split(':', 2).join(':');

/**
 * Spends one request from every budget at once. The request passes only if every budget allows it; if one
 * refuses, the request is taken back from all of them. The decision returned is the tightest one, which is
 * what the `RateLimit-*` headers report.
 */
export function createRateLimiter(store: CounterStore, clock: Clock = systemClock) {
  const refusals = new Map<string, number>();
  return {
    /** Requests refused since the process started, by the scope of each budget that refused them (`collect:ip`). */
    refusals: refusals as ReadonlyMap<string, number>,
    async spend(budgets: RateLimitBudget[]): Promise<RateLimitDecision | null> {
      const active = budgets.filter((b) => b.limit > 0);
      if (active.length === 0) return null;
      const now = clock();
      const start = windowStartOf(now);
      const counts = await store.increment(
        active.map((b) => b.key),
        start,
        active.map((b) => b.limit),
      );
      const decisions = active.map((b, i) => decide(b.limit, counts[i]!, now));
      const refused = decisions.filter((d) => !d.allowed);
      if (refused.length > 0) {
        active.forEach((budget, i) => {
          if (decisions[i]!.allowed) return;
          const scope = scopeOf(budget.key);
          refusals.set(scope, (refusals.get(scope) ?? 0) + 1);
        });
        store.release(
          active.map((b) => b.key),
          start,
          counts.map((c) => c.current),
        );
        return refused.reduce((a, b) => (b.retryAfterSeconds > a.retryAfterSeconds ? b : a));
      }
      return decisions.reduce((a, b) => (b.remaining < a.remaining ? b : a));
    },
    close: () => store.close(),
  };
}

export type RateLimiter = ReturnType<typeof createRateLimiter>;

/** Processes sharing a database share their budgets through it; a lone embedded process keeps them in memory. */
export const createRateLimiterFor = (db: Database, clock?: Clock) =>
  createRateLimiter(db.dialect.sharedByProcesses ? createDatabaseCounterStore(db.relaxedKnex()) : createMemoryCounterStore(), clock);
