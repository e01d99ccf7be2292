import type { Db } from '../db/database.js';
import { readShopCurrency } from '../settings/shop-currency.js';
import { deliverabilityRates, type SendReport } from '../shared/send-report.js';

type Of = { campaign_id: string } | { flow_id: string };
type Counts = Pick<SendReport, 'sent' | 'failed' | 'delivered' | 'bounced' | 'complained' | 'unique_opens' | 'unique_clicks'>;

/**
 * Delivery, engagement, deliverability and attributed revenue (net) of one campaign's or flow's messages: what the
 * campaign and flow reports share. `skipped` is kept by each noun (recipients skipped by rule have no message row).
 */
export function createSendReports(deps: {
  counts(db: Db, workspaceId: string, of: Of): Promise<Counts>;
  /** Contacts unsubscribed through these messages' links or by a complaint about one of them. */
  unsubscribed(db: Db, workspaceId: string, of: Of): Promise<number>;
  engagementCounts(db: Db, workspaceId: string, of: Of): Promise<Pick<SendReport, 'opens' | 'clicks'>>;
  attributedTotals(db: Db, workspaceId: string, to: { campaignId: string } | { flowId: string }): Promise<Pick<SendReport, 'orders' | 'revenue'>>;
}) {
  return async (db: Db, workspaceId: string, of: Of): Promise<Omit<SendReport, 'skipped'>> => {
    const counts = await deps.counts(db, workspaceId, of);
    const unsubscribed = await deps.unsubscribed(db, workspaceId, of);
    const engagement = await deps.engagementCounts(db, workspaceId, of);
    const revenue = await deps.attributedTotals(db, workspaceId, 'campaign_id' in of ? { campaignId: of.campaign_id } : { flowId: of.flow_id });
    const currency = await readShopCurrency(db, workspaceId);
    return { ...counts, unsubscribed, ...engagement, ...revenue, currency, ...deliverabilityRates({ ...counts, unsubscribed }) };
  };
}

export type SendReports = ReturnType<typeof createSendReports>;
