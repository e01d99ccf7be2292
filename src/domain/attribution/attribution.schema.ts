import { z } from 'zod';

export const ENGAGEMENT_KINDS = ['click', 'open'] as const;
export type EngagementKind = (typeof ENGAGEMENT_KINDS)[number];

/** Campaign, flow and message ids are UUID-sized columns. */
const id = z.string().min(1, 'must not be empty').max(36, 'must be at most 36 characters');

/** A click or an open of a sent message: what last-touch attribution reads. */
export const engagementSchema = z
  .object({
    workspaceId: id,
    contactId: id,
    kind: z.enum(ENGAGEMENT_KINDS, { error: `must be one of ${ENGAGEMENT_KINDS.join(', ')}` }),
    campaignId: id.optional(),
    flowId: id.optional(),
    messageId: id.optional(),
    occurredAt: z.number().int().min(0, 'must be a time in epoch milliseconds'),
  })
  .refine((e) => (e.campaignId === undefined) !== (e.flowId === undefined), {
    message: 'must name exactly one of campaignId and flowId',
    path: ['campaignId'],
  });
export type EngagementInput = z.input<typeof engagementSchema>;
export type Engagement = z.output<typeof engagementSchema>;

/** An order to attribute: its owner and the time windows are measured from. */
export interface OrderToAttribute {
  id: string;
  contactId: string;
  orderedAt: number;
}

/** What an order is credited to: the orders' `attributed_*` columns and `attribution_kind`. */
export interface Attribution {
  campaign_id: string | null;
  flow_id: string | null;
  message_id: string | null;
  /** The A/B variant of the credited message (a campaign's A/B test), or null. */
  variant: number | null;
  kind: EngagementKind;
}

export interface RecomputeOptions {
  /** Only orders placed at or after this time (epoch milliseconds). */
  since?: number;
  /** Only this order. */
  orderId?: string;
}

export interface RecomputeResult {
  examined: number;
  changed: number;
}
