import type { AttributionService } from '../attribution/attribution-service.js';
import type { CampaignService } from '../campaigns/campaign-service.js';
import type { Campaign } from '../campaigns/campaign.schema.js';
import type { ContactLookup } from '../contacts/contact-lookup.js';
import type { Reader } from '../db/database.js';
import type { EventService } from '../events/event-service.js';
import type { FlowService } from '../flows/flow-service.js';
import { compileSteps } from '../flows/flow-program.js';
import type { Flow, FlowReport, FlowStep } from '../flows/flow.schema.js';
import type { MessageService } from '../messages/message-service.js';
import type { MessageRecord } from '../messages/message.schema.js';
import type { OrderLookup } from '../orders/order-lookup.js';
import type { ReportService } from '../reports/report-service.js';
import type { SegmentService } from '../segments/segment-service.js';
import type { Segment } from '../segments/segment.schema.js';
import type { Page, Paging } from '../shared/paging.js';
import type { SendReport } from '../shared/send-report.js';
import { DAY_MS, systemClock, type Clock } from '../shared/time.js';
import type { StatusService } from '../status/status-service.js';

/** The days a console chart covers, today included. */
export const CHART_DAYS = 30;

/** Counts today (since 00:00 UTC) and over the last 30 days. */
export interface Recent {
  today: number;
  days30: number;
}

/** The console's overview of a workspace (docs/console.md). */
export interface ConsoleOverview {
  contacts: number;
  subscribed: number;
  events: Recent;
  orders: Recent;
  /** Net revenue credited to campaigns and flows over the last 30 days, per currency (GET /reports/revenue summed). */
  revenue: Array<{ currency: string; orders: number; revenue: number }>;
  /** Net revenue of every order of the last 30 days, per currency, with a contact or without one (GET /reports/revenue `total`). */
  sales: Array<{ currency: string; orders: number; revenue: number }>;
  /** The server's queues (every workspace's): jobs by state, and the trigger outbox. */
  jobs: { ready: number; running: number; failed: number };
  outbox: { pending: number; lag_seconds: number };
}

/** One UTC day of a chart: opens and clicks of the messages that day, and the revenue credited to orders placed that day. */
export interface ChartDay {
  /** YYYY-MM-DD (UTC). */
  date: string;
  opens: number;
  clicks: number;
  orders: number;
  revenue: number;
}

export interface CampaignView {
  campaign: Campaign;
  report: SendReport;
  chart: ChartDay[];
}

export interface FlowView {
  flow: Flow;
  report: FlowReport;
  chart: ChartDay[];
  /** Each step with how many enrolments under way are at it. */
  /** The flow's steps in enrolment order (branch paths flattened, `path` like `2.yes.0`), with who waits at each. */
  steps: Array<{ index: number; path: string; step: FlowStep; waiting: number }>;
}

const utcDay = (day: number) => new Date(day * DAY_MS).toISOString().slice(0, 10);

/**
 * The read-only operator console's read model (docs/console.md). It holds no rule and no query of its own: every
 * number comes from the function the management API answers with (campaign and flow reports, segment member
 * counts, the revenue report, the status of the queues), or from the nouns' own counts, so the console and the
 * API cannot disagree.
 */
export function createConsoleService(deps: {
  reader: Reader;
  contactLookup: Pick<ContactLookup, 'audience'>;
  events: Pick<EventService, 'countInWorkspaceSince'>;
  orderLookup: Pick<OrderLookup, 'countSince' | 'attributedByDay'>;
  attribution: Pick<AttributionService, 'engagementsByDay'>;
  reports: Pick<ReportService, 'revenue'>;
  status: Pick<StatusService, 'queues'>;
  campaigns: Pick<CampaignService, 'list' | 'get' | 'report'>;
  flows: Pick<FlowService, 'list' | 'get' | 'report' | 'waitingByStep'>;
  segments: Pick<SegmentService, 'list'>;
  messages: Pick<MessageService, 'list' | 'get'>;
  clock?: Clock;
}) {
  const { reader, campaigns, flows } = deps;
  const clock = deps.clock ?? systemClock;

  /** The last CHART_DAYS days, oldest first, zeros where nothing happened. */
  async function chart(workspaceId: string, of: { campaign_id: string } | { flow_id: string }): Promise<ChartDay[]> {
    const today = Math.floor(clock() / DAY_MS);
    const first = today - CHART_DAYS + 1;
    const db = reader();
    const to = 'campaign_id' in of ? { campaignId: of.campaign_id } : { flowId: of.flow_id };
    const [engagements, orders] = await Promise.all([
      deps.attribution.engagementsByDay(db, workspaceId, of, first * DAY_MS),
      deps.orderLookup.attributedByDay(db, workspaceId, to, first * DAY_MS),
    ]);
    const days = new Map<number, ChartDay>();
    for (let day = first; day <= today; day++) days.set(day, { date: utcDay(day), opens: 0, clicks: 0, orders: 0, revenue: 0 });
    for (const row of engagements) Object.assign(days.get(row.day) ?? {}, { opens: row.opens, clicks: row.clicks });
    for (const row of orders) Object.assign(days.get(row.day) ?? {}, { orders: row.orders, revenue: row.revenue });
    return [...days.values()];
  }

  const withReports = async <T extends { id: string }, R>(page: Page<T>, report: (id: string) => Promise<R>) => ({
    ...page,
    data: await Promise.all(page.data.map(async (record) => ({ record, report: await report(record.id) }))),
  });

  return {
    async overview(workspaceId: string): Promise<ConsoleOverview> {
      const now = clock();
      const midnight = Math.floor(now / DAY_MS) * DAY_MS;
      const monthAgo = now - 30 * DAY_MS;
      const db = reader();
      const [audience, eventsToday, events30, ordersToday, orders30, revenue, queues] = await Promise.all([
        deps.contactLookup.audience(db, workspaceId),
        deps.events.countInWorkspaceSince(workspaceId, midnight),
        deps.events.countInWorkspaceSince(workspaceId, monthAgo),
        deps.orderLookup.countSince(db, workspaceId, midnight),
        deps.orderLookup.countSince(db, workspaceId, monthAgo),
        deps.reports.revenue(workspaceId, {}),
        deps.status.queues(),
      ]);
      const byCurrency = new Map<string, { currency: string; orders: number; revenue: number }>();
      for (const row of revenue.data) {
        const total = byCurrency.get(row.currency) ?? { currency: row.currency, orders: 0, revenue: 0 };
        total.orders += row.orders;
        total.revenue = Math.round((total.revenue + row.revenue) * 1e4) / 1e4;
        byCurrency.set(row.currency, total);
      }
      const sum = (key: 'ready' | 'running' | 'failed') => queues.jobs.reduce((n, kind) => n + kind[key], 0);
      return {
        ...audience,
        events: { today: eventsToday, days30: events30 },
        orders: { today: ordersToday, days30: orders30 },
        revenue: [...byCurrency.values()].sort((a, b) => b.revenue - a.revenue),
        sales: revenue.total,
        jobs: { ready: sum('ready'), running: sum('running'), failed: sum('failed') },
        outbox: queues.outbox,
      };
    },

    /** A page of campaigns (newest first, as GET /campaigns lists them), each with its report. */
    campaigns: async (workspaceId: string, paging: Paging) =>
      withReports(await campaigns.list(workspaceId, paging), (id) => campaigns.report(workspaceId, id)),

    async campaign(workspaceId: string, id: string): Promise<CampaignView> {
      const campaign = await campaigns.get(workspaceId, id);
      const [report, days] = await Promise.all([campaigns.report(workspaceId, id), chart(workspaceId, { campaign_id: id })]);
      return { campaign, report, chart: days };
    },

    /** A page of flows, each with its report. */
    flows: async (workspaceId: string, paging: Paging) => withReports(await flows.list(workspaceId, paging), (id) => flows.report(workspaceId, id)),

    async flow(workspaceId: string, id: string): Promise<FlowView> {
      const flow = await flows.get(workspaceId, id);
      const [report, days, waiting] = await Promise.all([
        flows.report(workspaceId, id),
        chart(workspaceId, { flow_id: id }),
        flows.waitingByStep(workspaceId, id),
      ]);
      return { flow, report, chart: days, steps: compileSteps(flow.steps).map(({ step, path }, index) => ({ index, path, step, waiting: waiting.get(index) ?? 0 })) };
    },

    segments: (workspaceId: string, paging: Paging): Promise<Page<Segment>> => deps.segments.list(workspaceId, paging),

    /** The newest messages (of a campaign or a flow), as GET /messages lists them. */
    messages: (workspaceId: string, filter: { campaign_id?: string; flow_id?: string }, paging: Paging): Promise<Page<MessageRecord>> =>
      deps.messages.list(workspaceId, filter, paging),

    message: (workspaceId: string, id: string): Promise<MessageRecord> => deps.messages.get(workspaceId, id),
  };
}

export type ConsoleService = ReturnType<typeof createConsoleService>;
