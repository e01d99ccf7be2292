import { z } from 'zod';
import { parseTimestamp } from '../shared/time.js';
import { text } from '../shared/validate.js';

const DAY_MS = 86_400_000;

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
});
