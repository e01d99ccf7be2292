import type { AttributionStore } from '../attribution/attribution-store.js';
import type { Db } from '../db/database.js';
import type { MessageStore } from '../messages/message-store.js';
import type { OrderStore } from '../orders/order-store.js';

/**
 * Delivery, engagement and attributed revenue (net) of one campaign's or flow's messages: what the campaign
 * and flow reports share. `skipped` is kept by each noun (recipients skipped by rule have no message row).
 */
export function createSendReports(deps: { messageStore: MessageStore; attributionStore: AttributionStore; orderStore: OrderStore }) {
  const { messageStore, attributionStore, orderStore } = deps;
  return async (db: Db, workspaceId: string, of: { campaign_id: string } | { flow_id: string }) => {
    const counts = await messageStore.counts(db, workspaceId, of);
    const engagement = await attributionStore.engagementCounts(db, workspaceId, of);
    const revenue = await orderStore.attributedTotals(db, workspaceId, 'campaign_id' in of ? { campaignId: of.campaign_id } : { flowId: of.flow_id });
    return { ...counts, ...engagement, ...revenue };
  };
}

export type SendReports = ReturnType<typeof createSendReports>;
