import type { Knex } from 'knex';
import type { Dialect } from '../db/dialect/dialect.js';
import type { Database } from '../db/database.js';
import { toIso } from '../shared/time.js';
import { ActivityDelta, DAY_MS, dayOf, VIEW_EVENT } from './activity-delta.js';
import { createProductActivityStore, type TotalChange } from './product-activity-store.js';

/** The spec's look-back: rankings read the last 90 UTC days, today included. */
export const LOOKBACK_DAYS = 90;

/** The first day of the look-back window at `now`. */
export const windowStartAt = (now: number) => dayOf(now) - (LOOKBACK_DAYS - 1);

/**
 * How far from a UTC midnight a process trusts the window start it read earlier: processes' clocks differ by
 * less, so none can be rolling the window over meanwhile (see windowStartFor).
 */
const MIDNIGHT_MARGIN_MS = 5 * 60_000;

/**
 * Per-product behaviour aggregates behind the recommendation types: units sold and views per UTC day, their
 * running totals over the look-back window, and store-wide co-occurrence (orders holding both products).
 *
 * Maintained on write, in the writer's transaction, from the net change of each write (`ActivityDelta`): a
 * new order or view adds, a replaced item list or a cancellation takes the old contribution out and puts the
 * new one in, a corrected event moves its view to its new day. Days that leave the window are taken out of the
 * totals by `rollOver`, lazily before a ranking reads them; `rebuild` recomputes everything from raw data.
 */
export function createProductActivity(deps: {
  knex: Knex;
  writeTransaction: Database['writeTransaction'];
  dialect: Dialect;
  now?: () => number;
}) {
  const { writeTransaction } = deps;
  const store = createProductActivityStore(deps.dialect);
  const now = deps.now ?? Date.now;
  /** Per process: the window start each workspace is known to be rolled to (it only moves forward). */
  const rolledTo = new Map<string, number>();
  /** Per process: window starts read as already current, so a write need not read them again today. */
  const currentStarts = new Map<string, number>();

  /**
   * The workspace's window start for a write. Once it has been read as today's start it cannot move until the
   * next UTC midnight (a roll-over only moves it to the day's own start), so writes away from midnight take it
   * from memory: one statement less per group commit. Near midnight, or while it lags, it is read under the
   * shared lock as before.
   */
  async function windowStartFor(trx: Knex.Transaction, workspaceId: string): Promise<number> {
    const at = now();
    const wanted = windowStartAt(at);
    const settled = windowStartAt(at - MIDNIGHT_MARGIN_MS) === wanted && windowStartAt(at + MIDNIGHT_MARGIN_MS) === wanted;
    if (settled && currentStarts.get(workspaceId) === wanted) return wanted;
    const start = await store.sharedWindowStart(trx, workspaceId, wanted);
    if (start === wanted) currentStarts.set(workspaceId, start);
    return start;
  }

  const api = {
    /** Writes a delta inside the caller's transaction: a few multi-row upserts per workspace, none when empty. */
    async record(trx: Knex.Transaction, delta: ActivityDelta): Promise<void> {
      const workspaces = delta.workspaces();
      if (workspaces.length === 0) return;
      const starts = new Map<string, number>();
      for (const workspaceId of workspaces.sort()) {
        starts.set(workspaceId, await windowStartFor(trx, workspaceId));
      }
      for (const [workspaceId, { daily, pairs }] of delta.byWorkspace((ws) => starts.get(ws))) {
        const totals = new Map<string, TotalChange>();
        for (const c of daily) {
          const total = totals.get(c.productKey) ?? { product_key: c.productKey, units_sold: 0, views: 0 };
          total.units_sold += c.unitsSold;
          total.views += c.views;
          totals.set(c.productKey, total);
        }
        await store.addDaily(
          trx,
          workspaceId,
          daily.map((c) => ({ product_key: c.productKey, day: c.day, units_sold: c.unitsSold, views: c.views })),
        );
        await store.addTotals(
          trx,
          workspaceId,
          [...totals.values()].filter((t) => t.units_sold !== 0 || t.views !== 0),
        );
        await store.addPairs(
          trx,
          workspaceId,
          pairs.map((p) => ({ product_key: p.productKey, other_key: p.otherKey, day: p.day, orders: p.orders })),
        );
      }
    },

    /**
     * Moves the workspace's window to today's look-back: the days that left it come out of the totals. Cheap
     * when already current (a per-process memo, then one read); the first ranking of a day does the work.
     */
    async rollOver(workspaceId: string): Promise<number> {
      const wanted = windowStartAt(now());
      if ((rolledTo.get(workspaceId) ?? -Infinity) >= wanted) return wanted;
      const stored = await store.windowStart(deps.knex, workspaceId);
      if (stored === null || stored < wanted) {
        await writeTransaction(async (trx) => {
          const locked = await store.lockWindow(trx, workspaceId);
          if (locked === null || locked >= wanted) return;
          await store.expireBefore(trx, workspaceId, wanted);
          await store.setWindowStart(trx, workspaceId, wanted);
        });
      }
      rolledTo.set(workspaceId, wanted);
      return wanted;
    },

    /**
     * The catalog changed the categories of these ranked products (every product of the workspace when null),
     * inside the catalog's transaction: their per-category totals follow.
     */
    categoriesChanged(trx: Knex.Transaction, workspaceId: string, productKeys: string[] | null): Promise<void> {
      return store.categories.syncCatalog(trx, workspaceId, productKeys);
    },

    /** Recomputes the workspace's aggregates from its stored orders and events (`emk feeds rebuild-activity`). */
    async rebuild(workspaceId: string): Promise<{ products: number; since: string }> {
      const start = windowStartAt(now());
      const products = await writeTransaction(async (trx) => {
        await store.setWindowStart(trx, workspaceId, start);
        // Now locked (PostgreSQL): writers that read the window wait until the rebuilt aggregates are committed;
        // those that know it from memory meet the rebuild on the aggregate rows' own locks, and an upsert that
        // waited there adds to the rebuilt row.
        await store.lockWindow(trx, workspaceId);
        return store.rebuild(trx, workspaceId, start, VIEW_EVENT);
      });
      rolledTo.set(workspaceId, start);
      await store.analyze(deps.knex);
      return { products, since: toIso(start * DAY_MS)!.slice(0, 10) };
    },

    /** Erased contacts' product views leave the aggregates (inside the erasure's transaction). */
    async forgetViewsOf(trx: Knex.Transaction, workspaceId: string, contactIds: string[]): Promise<void> {
      const views = await store.viewsOf(trx, workspaceId, contactIds, VIEW_EVENT);
      await api.record(trx, new ActivityDelta().views(workspaceId, views, -1));
    },
  };
  return api;
}

export type ProductActivity = ReturnType<typeof createProductActivity>;
