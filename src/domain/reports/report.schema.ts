import { z } from 'zod';
import { parseTimestamp } from '../shared/time.js';
import { numericText } from '../shared/numbers.js';
import {
  deliverabilityCountsSchema,
  deliverabilityRatesSchema,
  type DeliverabilityCounts,
  type DeliverabilityFlag,
  type DeliverabilityRates,
} from '../shared/send-report.js';
import { text } from '../shared/validate.js';

export const DAY_MS = 86_400_000;

const time = text(64).transform((value, ctx) => {
  const at = parseTimestamp(value.length === 10 ? `${value}T00:00:00Z` : value);
  if (at === null) {
    ctx.addIssue({ code: 'custom', message: 'must be an RFC 3339 time or a date (YYYY-MM-DD)' });
    return z.NEVER;
  }
  return at;
});

/** GET /reports/revenue: orders placed in [from, to); by default the last 30 days. */
export const revenueQuerySchema = z.object({ from: time.optional(), to: time.optional() });

export const defaultRevenueWindow = (now: number) => ({ from: now - 30 * DAY_MS, to: now + 1 });

export interface RevenueRow {
  campaign_id?: string;
  flow_id?: string;
  name: string | null;
  orders: number;
  revenue: number;
  currency: string;
}

/** The store's own revenue in one currency: every order placed in the period, contact or not, attributed or not. */
export interface RevenueTotal {
  currency: string;
  orders: number;
  revenue: number;
}

export interface RevenueReport {
  data: RevenueRow[];
  total: RevenueTotal[];
}

export const revenueReportSchema = z.object({
  data: z.array(
    z.object({
      campaign_id: z.string().optional(),
      flow_id: z.string().optional(),
      name: z.string().nullable(),
      orders: z.number().int(),
      revenue: z.number(),
      currency: z.string(),
    }),
  ),
  total: z
    .array(z.object({ currency: z.string(), orders: z.number().int(), revenue: z.number() }))
    .describe('Every order placed in the period, per currency, net of cancellations and refunds: attributed or not, with a contact or without one'),
}) satisfies z.ZodType<RevenueReport>;

/** GET /reports/deliverability, `emk report deliverability`: the campaign and flow messages of the last `days` days. */
export const deliverabilityQuerySchema = z.object({
  days: z
    .preprocess(numericText, z.number().min(1, 'must be at least 1').max(3650, 'must be at most 3650').int())
    .optional(),
});

export const DEFAULT_DELIVERABILITY_DAYS = 30;

export interface DeliverabilityRow extends DeliverabilityCounts, DeliverabilityRates {
  campaign_id?: string;
  flow_id?: string;
  name: string | null;
  /** The thresholds its rates exceed (`bounce_rate`, `complaint_rate`). */
  flags: DeliverabilityFlag[];
}

export interface DeliverabilityReport {
  days: number;
  /** The messages counted were written (queued) from this time on. */
  since: string;
  thresholds: { complaint_rate: number; bounce_rate: number };
  data: DeliverabilityRow[];
}

export const deliverabilityReportSchema = z.object({
  days: z.number().int(),
  since: z.string(),
  thresholds: z.object({ complaint_rate: z.number(), bounce_rate: z.number() }),
  data: z.array(
    z
      .object({
        campaign_id: z.string().optional(),
        flow_id: z.string().optional(),
        name: z.string().nullable(),
        flags: z.array(z.enum(['bounce_rate', 'complaint_rate'])),
      })
      .merge(deliverabilityCountsSchema)
      .merge(deliverabilityRatesSchema),
  ),
}) satisfies z.ZodType<DeliverabilityReport>;
