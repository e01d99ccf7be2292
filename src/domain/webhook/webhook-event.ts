import { z } from 'zod';
import { identityTokenOf } from '../identity-tokens/identity-token.schema.js';
import { moneySchema } from '../shared/numbers.js';
import { toStorableJson, tooDeepAt, type FieldPath } from '../shared/storable.js';
import { parseTimestamp } from '../shared/time.js';
import { checkValue, emailSchema } from '../shared/validate.js';
import { orderItemSchema, toOrderItem, type OrderItem } from '../orders/order.schema.js';

/** The webhook's replies (the spec's table). */
export type WebhookReply =
  | { status: 'processed'; event_type: string; warnings?: string[] }
  | { status: 'duplicate' }
  | { status: 'skipped'; event_type?: string }
  | { status: 'skipped'; reason: 'normalize_error' };

export const ORDER_EVENTS = {
  order_placed: 'placed',
  fulfilled_order: 'fulfilled',
  cancelled_order: 'cancelled',
  refunded_order: 'refunded',
} as const;
export const CART_EVENTS = ['added_to_cart', 'started_checkout'] as const;
export const CUSTOMER_EVENTS = ['customer_created', 'customer_updated'] as const;
export const PRODUCT_EVENTS = ['product_created', 'product_updated', 'product_deleted'] as const;

export type OrderEventType = keyof typeof ORDER_EVENTS;
type CartEventType = (typeof CART_EVENTS)[number];
type ProductEventType = (typeof PRODUCT_EVENTS)[number];

/**
 * One delivery, read leniently: the webhook never rejects a payload over its shape, so every field is taken
 * only when it has a usable value and ignored otherwise.
 */
export type WebhookEvent =
  | { category: 'order'; eventType: OrderEventType; order: OrderPayload | null }
  | { category: 'cart'; eventType: CartEventType; cart: CartPayload }
  | { category: 'customer'; eventType: string; properties: Record<string, unknown> }
  | { category: 'product'; eventType: ProductEventType; product: unknown }
  | { category: 'custom'; eventType: string };

export interface ParsedDelivery {
  event: WebhookEvent;
  /** The retry key: external_id, else id, else the order's / cart's external_id. */
  dedupeKey: string | null;
  email: string | null;
  identityToken: string | null;
  body: Record<string, unknown>;
  /** Values that were sent but could not be used (an out-of-range total, an item refused): told in the reply. */
  warnings: string[];
}

export interface OrderPayload {
  externalId: string;
  totalAmount?: number;
  currency?: string;
  status?: string;
  orderedAt?: number;
  orderNumber?: string;
  items?: OrderItem[];
  refundedAmount?: number;
  refundAmount?: number;
}

export interface CartPayload {
  externalId: string | null;
  totalAmount: number | null;
  currency: string | null;
  checkoutUrl: string | null;
  items: unknown[];
}

const isObject = (v: unknown): v is Record<string, unknown> => !!v && typeof v === 'object' && !Array.isArray(v);
const idText = (v: unknown): string | null =>
  (typeof v === 'string' || (typeof v === 'number' && Number.isFinite(v))) && String(v).trim() !== '' && String(v).length <= 255
    ? String(v).trim()
    : null;
const str = (v: unknown, max = 255): string | undefined => (typeof v === 'string' && v.length <= max ? v : undefined);
const money = moneySchema();

/**
 * Money in the shared range, or undefined. A value that was sent but cannot be used (out of range, not a
 * number) is ignored and named in `warnings`; an absent or null one is simply not sent.
 */
function amount(value: unknown, at: FieldPath, warnings: string[]): number | undefined {
  if (value === undefined || value === null) return undefined;
  const checked = checkValue(money, value, at);
  if (checked.success) return checked.data;
  warnings.push(checked.problem);
  return undefined;
}

function orderPayload(raw: unknown, warnings: string[]): OrderPayload | null {
  if (!isObject(raw)) return null;
  const externalId = idText(raw.external_id);
  if (!externalId) return null;
  const orderedAt = typeof raw.ordered_at === 'string' ? parseTimestamp(raw.ordered_at.trim()) : null;
  const items = Array.isArray(raw.items)
    ? raw.items.flatMap((item, i) => {
        const checked = checkValue(orderItemSchema, item, ['order', 'items', i]);
        if (checked.success) return [toOrderItem(checked.data)];
        warnings.push(`${checked.problem} (item ignored)`);
        return [];
      })
    : undefined;
  const payload: OrderPayload = { externalId };
  const total = amount(raw.total_amount, ['order', 'total_amount'], warnings);
  if (total !== undefined) payload.totalAmount = total;
  if (typeof raw.currency === 'string') payload.currency = raw.currency.slice(0, 8);
  const status = str(raw.status);
  if (status !== undefined) payload.status = status;
  if (orderedAt !== null) payload.orderedAt = orderedAt;
  const orderNumber = idText(raw.order_number);
  if (orderNumber) payload.orderNumber = orderNumber;
  if (items) payload.items = items;
  const refunded = amount(raw.refunded_amount, ['order', 'refunded_amount'], warnings);
  if (refunded !== undefined) payload.refundedAmount = refunded;
  const refund = amount(raw.refund_amount, ['order', 'refund_amount'], warnings);
  if (refund !== undefined) payload.refundAmount = refund;
  return payload;
}

function cartPayload(raw: unknown, warnings: string[]): CartPayload {
  const cart = isObject(raw) ? raw : {};
  return {
    externalId: idText(cart.external_id),
    totalAmount: amount(cart.total_amount, ['cart', 'total_amount'], warnings) ?? null,
    currency: str(cart.currency, 8) ?? null,
    checkoutUrl: str(cart.checkout_url, 4000) ?? null,
    items: Array.isArray(cart.items) ? cart.items : [],
  };
}

function eventOf(eventType: string, body: Record<string, unknown>, warnings: string[]): WebhookEvent {
  if (eventType in ORDER_EVENTS) {
    return { category: 'order', eventType: eventType as OrderEventType, order: orderPayload(body.order, warnings) };
  }
  if ((CART_EVENTS as readonly string[]).includes(eventType)) {
    return { category: 'cart', eventType: eventType as CartEventType, cart: cartPayload(body.cart, warnings) };
  }
  if ((CUSTOMER_EVENTS as readonly string[]).includes(eventType)) {
    return { category: 'customer', eventType, properties: isObject(body.properties) ? body.properties : {} };
  }
  if ((PRODUCT_EVENTS as readonly string[]).includes(eventType)) {
    return { category: 'product', eventType: eventType as ProductEventType, product: body.product };
  }
  return { category: 'custom', eventType };
}

// Escapes of NUL and of UTF-16 surrogates: the only way such characters get into parsed JSON text.
const UNSTORABLE_ESCAPE = /\\u(0000|d[89a-f])/i;

/**
 * A webhook body as a JSON object both databases can store: text they cannot (NUL, unpaired surrogates) is
 * replaced by U+FFFD. Null when it is not JSON, not an object, or nests deeper than storable.ts allows.
 */
export function storableJsonObject(rawBody: string): Record<string, unknown> | null {
  let parsed: unknown;
  try {
    parsed = JSON.parse(rawBody);
  } catch {
    return null;
  }
  if (!isObject(parsed) || tooDeepAt(parsed) !== null) return null;
  return UNSTORABLE_ESCAPE.test(rawBody) ? toStorableJson(parsed) : parsed;
}

/**
 * Reads a delivery's raw body; a reply instead when it is skipped before anything is applied. The webhook never
 * refuses a body over its shape: text neither database can store (NUL, unpaired surrogates) is replaced by
 * U+FFFD, and a body that is not a JSON object, or nests deeper than storable.ts allows, is skipped as a
 * `normalize_error` like unparseable JSON.
 */
export function parseDelivery(rawBody: string): ParsedDelivery | WebhookReply {
  const body = storableJsonObject(rawBody);
  if (body === null) return { status: 'skipped', reason: 'normalize_error' };
  const eventType = typeof body.event_type === 'string' ? body.event_type.trim() : '';
  if (eventType === '' || eventType.includes('.') || eventType.length > 255) {
    return typeof body.event_type === 'string' ? { status: 'skipped', event_type: body.event_type } : { status: 'skipped' };
  }
  const warnings: string[] = [];
  const event = eventOf(eventType, body, warnings);
  const fallbackKey =
    event.category === 'order' ? idText((body.order as { external_id?: unknown } | undefined)?.external_id)
    : event.category === 'cart' ? event.cart.externalId
    : null;
  const email = emailSchema.safeParse(body.email);
  return {
    event,
    dedupeKey: idText(body.external_id) ?? idText(body.id) ?? fallbackKey,
    email: email.success ? email.data : null,
    identityToken: identityTokenOf(body),
    body,
    warnings,
  };
}

export const isReply = (value: ParsedDelivery | WebhookReply): value is WebhookReply => 'status' in value;

const webhookItem = z.object({ external_id: z.union([z.string(), z.number()]), title: z.string(), quantity: z.number(), price: z.number() }).partial();

/**
 * The webhook body as documented. It is never validated as a whole: each field is read when usable and
 * ignored otherwise (see parseDelivery), so a body is never refused over its shape.
 */
export const webhookBodySchema = z.object({
  event_type: z.string().describe('order_placed, fulfilled_order, cancelled_order, refunded_order, added_to_cart, started_checkout, customer_created, customer_updated, product_created, product_updated, product_deleted, or a custom name without a dot'),
  email: z.string().optional().describe('The customer; an unseen address creates a contact (not for product_* events)'),
  external_id: z.union([z.string(), z.number()]).optional().describe('The retry key; `id` is a synonym'),
  id: z.union([z.string(), z.number()]).optional(),
  identity_token: z.string().optional().describe('The `_ir_id` cookie; also accepted as `_ir_id` or `_emk`'),
  order: z
    .object({
      external_id: z.union([z.string(), z.number()]),
      total_amount: z.number(),
      currency: z.string(),
      status: z.string(),
      ordered_at: z.string(),
      order_number: z.union([z.string(), z.number()]),
      items: z.array(webhookItem),
      refunded_amount: z.number(),
      refund_amount: z.number(),
    })
    .partial()
    .optional(),
  cart: z
    .object({ external_id: z.union([z.string(), z.number()]), total_amount: z.number(), currency: z.string(), checkout_url: z.string(), items: z.array(webhookItem) })
    .partial()
    .optional(),
  properties: z.record(z.string(), z.unknown()).optional().describe('customer_created / customer_updated: merged into the contact'),
  product: z.record(z.string(), z.unknown()).optional().describe('product_* events: the catalog product (product field names)'),
});

export const webhookReplySchema = z.union([
  z.object({ status: z.literal('processed'), event_type: z.string(), warnings: z.array(z.string()).optional() }),
  z.object({ status: z.literal('duplicate') }),
  z.object({ status: z.literal('skipped'), event_type: z.string().optional() }),
  z.object({ status: z.literal('skipped'), reason: z.literal('normalize_error') }),
]);
