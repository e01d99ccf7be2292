import type { Knex } from 'knex';
import type { CampaignService } from '../campaigns/campaign-service.js';
import type { FlowService } from '../flows/flow-service.js';
import type { OrderLookup } from '../orders/order-lookup.js';
import { systemClock, type Clock } from '../shared/time.js';
import { parseInput } from '../shared/validate.js';
import { defaultRevenueWindow, revenueQuerySchema, type RevenueRow } from './report.schema.js';

/**
 * The revenue report (GET /reports/revenue, `emk report revenue`): orders credited to each campaign and flow,
 * net of cancellations and refunds, per currency, biggest first. Campaign and flow reports live with their nouns.
 */
export function createReportService(deps: {
  knex: Knex;
  orders: Pick<OrderLookup, 'revenueByAttribution'>;
  campaigns: Pick<CampaignService, 'names'>;
  flows: Pick<FlowService, 'names'>;
  clock?: Clock;
}) {
  const { knex, orders, campaigns, flows } = deps;
  const clock = deps.clock ?? systemClock;
  return {
    async revenue(workspaceId: string, query: unknown = {}): Promise<{ data: RevenueRow[] }> {
      const input = parseInput(revenueQuerySchema, query ?? {});
      const window = defaultRevenueWindow(clock());
      const rows = await orders.revenueByAttribution(knex, workspaceId, input.from ?? window.from, input.to ?? window.to);
      const names = await campaigns.names(knex, workspaceId, rows.flatMap((r) => (r.campaign_id ? [r.campaign_id] : [])));
      const flowNames = await flows.names(knex, workspaceId, rows.flatMap((r) => (r.flow_id ? [r.flow_id] : [])));
      const data = rows.map(({ campaign_id, flow_id, currency, orders, revenue }): RevenueRow => ({
        ...(campaign_id ? { campaign_id } : { flow_id: flow_id! }),
        name: (campaign_id ? names.get(campaign_id) : flowNames.get(flow_id!)) ?? null,
        orders,
        revenue,
        currency,
      }));
      return { data: data.sort((a, b) => b.revenue - a.revenue || a.currency.localeCompare(b.currency)) };
    },
  };
}

export type ReportService = ReturnType<typeof createReportService>;
