import { z } from 'zod';

/** GET /campaigns/{id}/report and /flows/{id}/report; `revenue` is net of cancellations and refunds. */
export interface SendReport {
  sent: number;
  failed: number;
  skipped: number;
  opens: number;
  unique_opens: number;
  clicks: number;
  unique_clicks: number;
  orders: number;
  revenue: number;
}

export const sendReportSchema = z.object({
  sent: z.number().int(),
  failed: z.number().int(),
  skipped: z.number().int(),
  opens: z.number().int(),
  unique_opens: z.number().int(),
  clicks: z.number().int(),
  unique_clicks: z.number().int(),
  orders: z.number().int(),
  revenue: z.number(),
}) satisfies z.ZodType<SendReport>;
