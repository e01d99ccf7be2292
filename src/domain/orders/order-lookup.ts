import type { Db } from '../db/database.js';
import type { Dialect } from '../db/dialect/dialect.js';
import { createOrderStore } from './order-store.js';

/**
 * What other nouns may read of orders, by name (the store stays private): a flow's trigger orders, and the
 * revenue credited to campaigns and flows (net of cancellations and refunds) that their reports show.
 */
export function createOrderLookup(dialect: Dialect) {
  const store = createOrderStore(dialect);
  return {
    /** Order records by id, with their items. */
    recordsByIds: async (db: Db, ids: string[]) => store.toOrders(db, await store.findByIds(db, ids)),
    attributedTotals: (db: Db, workspaceId: string, to: { campaignId: string } | { flowId: string }) => store.attributedTotals(db, workspaceId, to),
    /** The workspace's orders placed at or after `since` (the console's overview). */
    countSince: (db: Db, workspaceId: string, since: number) => store.countSince(db, workspaceId, since),
    /** `attributedTotals` per UTC day since `since` (the console's charts). */
    attributedByDay: (db: Db, workspaceId: string, to: { campaignId: string } | { flowId: string }, since: number) => store.attributedByDay(db, workspaceId, to, since),
    revenueByVariant: (db: Db, workspaceId: string, campaignId: string) => store.revenueByVariant(db, workspaceId, campaignId),
    revenueByAttribution: (db: Db, workspaceId: string, from: number, to: number) => store.revenueByAttribution(db, workspaceId, from, to),
    /** Every order's net revenue per currency, contact or not (the revenue report's store-wide total). */
    revenueByCurrency: (db: Db, workspaceId: string, from: number, to: number) => store.revenueByCurrency(db, workspaceId, from, to),
  };
}

export type OrderLookup = ReturnType<typeof createOrderLookup>;
