import { z } from 'zod';
import { externalIdSchema } from '../orders/order.schema.js';
import { emailSchema, jsonObject, storableString, text } from '../shared/validate.js';

/** The spec's canonical Order Shipping Status values ("States and transitions"). */
export const SHIPPING_STATUSES = [
  'pending',
  'info_received',
  'in_transit',
  'out_for_delivery',
  'delivered',
  'exception',
  'failed_attempt',
  'expired',
] as const;
export type ShippingStatus = (typeof SHIPPING_STATUSES)[number];

/** Labels only the order-update endpoint sets. */
export type OrderUpdateLabel = 'Delivered' | 'Canceled';

/** `Info Received`, `InfoReceived`, `info_received` and `INFO-RECEIVED` all fold to `inforeceived`. */
export const foldStatus = (value: string): string => value.toLowerCase().replace(/[^a-z0-9]/g, '');

/** Folded input → canonical value: every canonical value, every slug of the spec (AttemptFail too). */
const BY_FOLDED = new Map<string, ShippingStatus>([
  ...SHIPPING_STATUSES.map((status): [string, ShippingStatus] => [foldStatus(status), status]),
  ['attemptfail', 'failed_attempt'],
]);

/** The canonical Shipping Status of a slug or `tracking_status`, compared format-insensitively; null if unknown. */
export function normaliseShippingStatus(value: unknown): ShippingStatus | null {
  return typeof value === 'string' ? (BY_FOLDED.get(foldStatus(value)) ?? null) : null;
}

/** `order_status.slug` of an order update → the label it sets; null leaves the Shipping Status unchanged. */
export function orderUpdateLabel(slug: string): OrderUpdateLabel | null {
  const folded = foldStatus(slug);
  if (folded === 'delivered' || folded === 'complete') return 'Delivered';
  if (folded === 'cancelled' || folded === 'canceled') return 'Canceled';
  return null;
}

const SLUGS = 'Pending, InfoReceived, InTransit, OutForDelivery, Delivered, Exception, AttemptFail, FailedAttempt, Expired';

/** A nested object the spec requires: absent counts as `{}`, so the error names the missing leaf (`order.origin_order_id`). */
const nested = <S extends z.ZodType>(schema: S) => z.preprocess((v) => v ?? {}, schema);

const optionalEmail = nested(z.object({ email: emailSchema.nullish() })).optional();

/** POST /api/v1/events/shipment (the spec's table; other keys are kept in the event's properties). */
export const shipmentSchema = z.object({
  tracking_number: z.union([storableString().max(255, 'must be at most 255 characters'), z.number().finite()]).nullish(),
  shipment_status: nested(
    z.object({
      slug: z.string().transform((slug, ctx) => {
        const status = normaliseShippingStatus(slug);
        if (status === null) {
          ctx.addIssue({ code: 'custom', message: `must be one of ${SLUGS}` });
          return z.NEVER;
        }
        return status;
      }),
    }),
  ),
  order: nested(
    z.object({
      origin_order_id: externalIdSchema,
      site: z.object({ platform: z.object({ slug: text(255).nullish() }).nullish() }).nullish(),
    }),
  ),
  customer: optionalEmail,
  carrier: z.object({ name: storableString().max(255, 'must be at most 255 characters').nullish() }).nullish(),
});
export type ShipmentInput = z.infer<typeof shipmentSchema>;

/** POST /api/v1/events/order-update (the spec's table). */
export const orderUpdateSchema = z.object({
  origin_order_id: externalIdSchema,
  order_status: nested(z.object({ slug: text(64), name: storableString().max(255, 'must be at most 255 characters').nullish() })),
  customer: optionalEmail,
});
export type OrderUpdateInput = z.infer<typeof orderUpdateSchema>;

/** The raw body, kept as the shipment event's properties. */
export const shipmentBodySchema = jsonObject;

export interface ShipmentReply {
  status: 'processed';
  event_id: string;
  event_type: 'shipping_information';
  has_contact: boolean;
}

/** POST /events/order-update's reply: `order_id` and `shipping_status` are null when no order matched. */
export interface OrderUpdateReply {
  status: 'processed';
  order_id: string | null;
  shipping_status: string | null;
  has_contact: boolean;
}

export const shipmentReplySchema = z.object({
  status: z.literal('processed'),
  event_id: z.string(),
  event_type: z.literal('shipping_information'),
  has_contact: z.boolean(),
}) satisfies z.ZodType<ShipmentReply>;

export const orderUpdateReplySchema = z.object({
  status: z.literal('processed'),
  order_id: z.string().nullable(),
  shipping_status: z.string().nullable(),
  has_contact: z.boolean(),
}) satisfies z.ZodType<OrderUpdateReply>;
