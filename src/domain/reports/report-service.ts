import type { Reader } from '../db/database.js';
import type { CampaignService } from '../campaigns/campaign-service.js';
import type { FlowService } from '../flows/flow-service.js';
import type { MessageService } from '../messages/message-service.js';
import type { OrderLookup } from '../orders/order-lookup.js';
import { DELIVERABILITY_THRESHOLDS, deliverabilityFlags, deliverabilityRates } from '../shared/send-report.js';
import { systemClock, toIso, type Clock } from '../shared/time.js';
import { parseInput } from '../shared/validate.js';
import {
  DAY_MS,
  DEFAULT_DELIVERABILITY_DAYS,
  defaultRevenueWindow,
  deliverabilityQuerySchema,
  revenueQuerySchema,
  type DeliverabilityReport,
  type DeliverabilityRow,
  type RevenueReport,
  type RevenueRow,
} from './report.schema.js';

/**
 * The revenue report (GET /reports/revenue, `emk report revenue`): orders credited to each campaign and flow,
 * net of cancellations and refunds, per currency, biggest first, beside the store's total of every order. The deliverability report (GET
 * /reports/deliverability, `emk report deliverability`): what became of each campaign's and flow's recent
 * messages, with the rates above the mailbox providers' thresholds flagged. Campaign and flow reports live with
 * their nouns.
 */
export function createReportService(deps: {
  reader: Reader;
  orders: Pick<OrderLookup, 'revenueByAttribution' | 'revenueByCurrency'>;
  campaigns: Pick<CampaignService, 'names'>;
  flows: Pick<FlowService, 'names'>;
  messages: Pick<MessageService, 'deliverability'>;
  clock?: Clock;
}) {
  const { reader, orders, campaigns, flows } = deps;
  const clock = deps.clock ?? systemClock;
  return {
    async revenue(workspaceId: string, query: unknown = {}): Promise<RevenueReport> {
      const input = parseInput(revenueQuerySchema, query ?? {});
      const window = defaultRevenueWindow(clock());
      const db = reader();
      const [from, to] = [input.from ?? window.from, input.to ?? window.to];
      const rows = await orders.revenueByAttribution(db, workspaceId, from, to);
      // The store's own revenue: orders without a contact (a point-of-sale sale) are in it, never in `data`.
      const total = await orders.revenueByCurrency(db, workspaceId, from, to);
      const names = await campaigns.names(db, workspaceId, rows.flatMap((r) => (r.campaign_id ? [r.campaign_id] : [])));
      const flowNames = await flows.names(db, workspaceId, rows.flatMap((r) => (r.flow_id ? [r.flow_id] : [])));
      const data = rows.map(({ campaign_id, flow_id, currency, orders, revenue }): RevenueRow => ({
        ...(campaign_id ? { campaign_id } : { flow_id: flow_id! }),
        name: (campaign_id ? names.get(campaign_id) : flowNames.get(flow_id!)) ?? null,
        orders,
        revenue,
        currency,
      }));
      const biggestFirst = (a: { revenue: number; currency: string }, b: { revenue: number; currency: string }) => b.revenue - a.revenue || a.currency.localeCompare(b.currency);
      return { data: data.sort(biggestFirst), total: total.sort(biggestFirst) };
    },

    /**
     * Per campaign and flow with messages handed over among those written in the last `days` days; most sent first.
     * Read from the rows each time, no aggregate kept: ~0.1 s over 200,000 messages (docs/performance.md,
     * Deliverability reports).
     */
    async deliverability(workspaceId: string, query: unknown = {}): Promise<DeliverabilityReport> {
      const days = parseInput(deliverabilityQuerySchema, query ?? {}).days ?? DEFAULT_DELIVERABILITY_DAYS;
      const since = clock() - days * DAY_MS;
      const db = reader();
      const rows = await deps.messages.deliverability(db, workspaceId, since);
      const names = await campaigns.names(db, workspaceId, rows.flatMap((r) => (r.campaign_id ? [r.campaign_id] : [])));
      const flowNames = await flows.names(db, workspaceId, rows.flatMap((r) => (r.flow_id ? [r.flow_id] : [])));
      const data = rows.map(({ campaign_id, flow_id, ...counts }): DeliverabilityRow => ({
        ...(campaign_id ? { campaign_id } : { flow_id: flow_id! }),
        name: (campaign_id ? names.get(campaign_id) : flowNames.get(flow_id!)) ?? null,
        ...counts,
        ...deliverabilityRates(counts),
        flags: deliverabilityFlags(counts),
      }));
      data.sort((a, b) => b.sent - a.sent || (a.name ?? '').localeCompare(b.name ?? '') || (a.campaign_id ?? a.flow_id!).localeCompare(b.campaign_id ?? b.flow_id!));
      return { days, since: toIso(since)!, thresholds: DELIVERABILITY_THRESHOLDS, data };
    },
  };
}

export type ReportService = ReturnType<typeof createReportService>;
