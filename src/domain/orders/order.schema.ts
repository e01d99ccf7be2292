import { z } from 'zod';
import { timestampSchema } from '../shared/time.js';
import { moneySchema, quantitySchema } from '../shared/numbers.js';
import { emailSchema, looseText, storableString, text } from '../shared/validate.js';
import { productIdOfItem } from '../products/product-id.js';

/** A line item: `external_id` joins the catalog's product external_id. */
export interface OrderItem {
  external_id: string | null;
  title: string | null;
  quantity: number;
  price: number | null;
}

/** Ids may arrive as numbers from shop platforms; they are stored as text. */
export const externalIdSchema = z
  .union([z.string(), z.number().finite()])
  .transform((v) => String(v))
  .pipe(text(255));

/** A line item names its product by `external_id`; older integrations sent a legacy spelling, read too. */
const withProductId = (item: unknown) => {
  if (item === null || typeof item !== 'object' || Array.isArray(item) || 'external_id' in item) return item;
  const id = productIdOfItem(item);
  return id === null ? item : { ...item, external_id: id };
};

export const orderItemSchema = z.preprocess(
  withProductId,
  z.object({
    external_id: externalIdSchema.optional(),
    title: storableString().max(2000, 'must be at most 2000 characters').optional(),
    quantity: quantitySchema.default(1),
    price: moneySchema({ signed: true }).optional(),
  }),
);

export const toOrderItem = (item: z.infer<typeof orderItemSchema>): OrderItem => ({
  external_id: item.external_id ?? null,
  title: item.title ?? null,
  quantity: item.quantity,
  price: item.price ?? null,
});

/** POST /api/v1/ecommerce/orders: every field required but external_id and items; 0 counts as missing. */
export const createOrderSchema = z.object({
  contact_id: text(64),
  platform: text(64),
  order_number: text(255),
  total_amount: moneySchema({ numbersOnly: true }).pipe(z.number().positive('must be greater than zero')),
  currency: text(8),
  status: text(255),
  ordered_at: timestampSchema,
  external_id: externalIdSchema.optional(),
  items: z.array(orderItemSchema).max(1000).optional(),
});

/** One order of POST /api/v1/ecommerce/sync-historical-orders and `emk sync-orders` (docs/api/orders.md). */
export const syncOrderSchema = z.object({
  email: emailSchema,
  external_id: externalIdSchema,
  order_number: externalIdSchema,
  total_amount: moneySchema(),
  currency: text(8),
  status: looseText(255).default(''),
  ordered_at: timestampSchema,
  items: z.array(orderItemSchema).max(1000).optional(),
  platform: text(64).optional(),
  /** Refunded so far (cumulative; capped at the total; a sync never lowers it). */
  refunded_amount: moneySchema().optional(),
  /** When the order was cancelled: a cancelled order stays cancelled. */
  cancelled_at: timestampSchema.optional(),
});
export type SyncOrderInput = z.infer<typeof syncOrderSchema>;

/**
 * A row of a shop platform's orders export (`emk sync-orders --format shopify`): a sync row whose buyer may have
 * given no email (a point-of-sale or phone order), with the phone its contact is found by (docs/platforms/README.md,
 * Orders without an email). The API's sync keeps requiring an email.
 */
export const exportOrderSchema = syncOrderSchema.extend({ email: emailSchema.optional(), phone: looseText(64).optional() });
export type ExportOrderInput = z.infer<typeof exportOrderSchema>;

export const MAX_SYNC_ORDERS = 1000;

export const orderListQuerySchema = z.object({
  contact_id: looseText(64).optional(),
  external_id: looseText(255).optional(),
});

/** The management API's order record (the spec's fields plus shipping_status, refunded_amount, cancelled_at, items, created_at). */
export interface Order {
  id: string;
  /** Null: a shop platform's order of a buyer no contact is known for (docs/platforms/README.md, Orders without an email). */
  contact_id: string | null;
  platform: string;
  order_number: string | null;
  external_id: string | null;
  total_amount: number;
  currency: string;
  status: string;
  ordered_at: string;
  attributed_campaign_id: string | null;
  attributed_flow_id: string | null;
  shipping_status: string | null;
  refunded_amount: number;
  cancelled_at: string | null;
  /** What the buyer paid in, when it was not the shop's currency (Shopify Markets, WooPayments' multi-currency). */
  presentment_currency: string | null;
  presentment_total_amount: number | null;
  items: OrderItem[];
  created_at: string;
}

/** `000006775` and `6775` are one order number (shipment matching ignores zero padding). */
export function orderNumberKey(orderNumber: string | null): string | null {
  if (orderNumber === null) return null;
  const trimmed = orderNumber.trim();
  return /^\d+$/.test(trimmed) ? trimmed.replace(/^0+(?=\d)/, '') : trimmed;
}

const orderItemRecordSchema = z.object({
  external_id: z.string().nullable(),
  title: z.string().nullable(),
  quantity: z.number().int(),
  price: z.number().nullable(),
}) satisfies z.ZodType<OrderItem>;

/** The order record, as a schema: what the API documents for replies. */
export const orderRecordSchema = z.object({
  id: z.string(),
  contact_id: z.string().nullable().describe('Null for a shop platform\'s order whose buyer no contact is known for (an order without an email)'),
  platform: z.string(),
  order_number: z.string().nullable(),
  external_id: z.string().nullable(),
  total_amount: z.number(),
  currency: z.string(),
  status: z.string(),
  ordered_at: z.string(),
  attributed_campaign_id: z.string().nullable(),
  attributed_flow_id: z.string().nullable(),
  shipping_status: z.string().nullable(),
  refunded_amount: z.number(),
  cancelled_at: z.string().nullable(),
  presentment_currency: z.string().nullable().describe('The currency the buyer paid in, when not the shop\'s (`total_amount` and `refunded_amount` are in the shop\'s currency)'),
  presentment_total_amount: z.number().nullable().describe('The total in `presentment_currency`, for reference'),
  items: z.array(orderItemRecordSchema),
  created_at: z.string(),
}) satisfies z.ZodType<Order>;

/** POST /api/v1/ecommerce/orders reply (the spec's fields). */
export const createdOrderSchema = orderRecordSchema.pick({
  id: true,
  contact_id: true,
  order_number: true,
  total_amount: true,
  currency: true,
  status: true,
  attributed_campaign_id: true,
  attributed_flow_id: true,
  ordered_at: true,
});

/** POST /api/v1/ecommerce/sync-historical-orders as documented (each order is checked alone). */
export const syncBodySchema = z.object({ orders: z.array(syncOrderSchema).max(MAX_SYNC_ORDERS) });
export const syncReplySchema = z.object({
  inserted: z.number().int(),
  updated: z.number().int(),
  skipped: z.number().int(),
  errors: z.array(z.object({ index: z.number().int(), external_id: z.string().nullable(), error: z.string() })),
});
