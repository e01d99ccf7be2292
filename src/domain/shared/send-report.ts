import { z } from 'zod';

/**
 * What happened to a campaign's or flow's messages after the hand-over (docs/email.md, Deliverability → Reports):
 * `delivered` = the relay reported the receiving server took it (`delivered_at`), `bounced` / `complained` = the
 * message's status after a relay's hard bounce / spam complaint, `unsubscribed` = contacts whose consent history
 * has an unsubscribe made through one of these messages (its unsubscribe or preferences link, or a complaint).
 */
export interface DeliverabilityCounts {
  sent: number;
  delivered: number;
  bounced: number;
  complained: number;
  unsubscribed: number;
}

/** Each count over `sent` (0 when nothing was sent), rounded to 6 decimals. */
export interface DeliverabilityRates {
  delivery_rate: number;
  bounce_rate: number;
  complaint_rate: number;
  unsubscribe_rate: number;
}

/**
 * The most the big mailbox providers accept (Google's and Yahoo's sender guidelines: spam complaints under 0.3 %;
 * bounces kept under 2 %, the line relays such as SES and Postmark review accounts at). A rate above one is flagged.
 */
export const DELIVERABILITY_THRESHOLDS = { complaint_rate: 0.003, bounce_rate: 0.02 } as const;
export type DeliverabilityFlag = keyof typeof DELIVERABILITY_THRESHOLDS;

const rate = (count: number, sent: number) => (sent === 0 ? 0 : Math.round((count / sent) * 1e6) / 1e6);

export const deliverabilityRates = (c: DeliverabilityCounts): DeliverabilityRates => ({
  delivery_rate: rate(c.delivered, c.sent),
  bounce_rate: rate(c.bounced, c.sent),
  complaint_rate: rate(c.complained, c.sent),
  unsubscribe_rate: rate(c.unsubscribed, c.sent),
});

/** The thresholds a campaign's or flow's rates exceed, compared on the exact counts (not the rounded rates). */
export function deliverabilityFlags(c: DeliverabilityCounts): DeliverabilityFlag[] {
  const flags: DeliverabilityFlag[] = [];
  if (c.bounced > c.sent * DELIVERABILITY_THRESHOLDS.bounce_rate) flags.push('bounce_rate');
  if (c.complained > c.sent * DELIVERABILITY_THRESHOLDS.complaint_rate) flags.push('complaint_rate');
  return flags;
}

/** GET /campaigns/{id}/report and /flows/{id}/report; `revenue` is net of cancellations and refunds. */
export interface SendReport extends DeliverabilityCounts, DeliverabilityRates {
  failed: number;
  skipped: number;
  opens: number;
  unique_opens: number;
  clicks: number;
  unique_clicks: number;
  orders: number;
  /** Net revenue of the credited orders, in `currency`. */
  revenue: number;
  /** The shop's currency (settings `currency`), which platform orders are converted to. */
  currency: string;
}

const count = z.number().int();

export const deliverabilityCountsSchema = z.object({
  sent: count,
  delivered: count,
  bounced: count,
  complained: count,
  unsubscribed: count,
}) satisfies z.ZodType<DeliverabilityCounts>;

export const deliverabilityRatesSchema = z.object({
  delivery_rate: z.number(),
  bounce_rate: z.number(),
  complaint_rate: z.number(),
  unsubscribe_rate: z.number(),
}) satisfies z.ZodType<DeliverabilityRates>;

export const sendReportSchema = z
  .object({
    sent: count,
    failed: count,
    skipped: count,
    opens: count,
    unique_opens: count,
    clicks: count,
    unique_clicks: count,
    orders: count,
    revenue: z.number(),
    currency: z.string().describe("The shop's currency (settings `currency`): what `revenue` is in"),
  })
  .merge(deliverabilityCountsSchema)
  .merge(deliverabilityRatesSchema) satisfies z.ZodType<SendReport>;
