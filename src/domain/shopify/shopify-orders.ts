import { orderItemSchema, toOrderItem, type OrderItem } from '../orders/order.schema.js';
import { asArray, asObject, isAbsent, type FieldReader, type Payload } from '../platform-webhooks/payload-fields.js';
import type { PlatformRefund, StoreChange } from '../platform-webhooks/store-change.js';
import type { ShippingStatus } from '../shipments/shipment.schema.js';
import type { FieldPath } from '../shared/storable.js';
import { fieldName } from '../shared/validate.js';
import { shopifyBuyer, shopifyIdentityToken } from './shopify-customers.js';

/** Line items (of an order or a checkout) by the PRODUCT they are of, never the variant: the catalog's external_id. */
function lineItems(body: Payload, read: FieldReader): OrderItem[] {
  return read.objects(body.line_items, ['line_items']).flatMap(([line, at]) => {
    const item = read.check(
      orderItemSchema,
      {
        external_id: read.id(line.product_id, [...at, 'product_id']) ?? undefined,
        title: read.text(line.title, [...at, 'title'], 2000) ?? undefined,
        quantity: line.quantity ?? undefined,
        price: read.money(line.price, [...at, 'price']) ?? undefined,
      },
      at,
      'line item ignored',
    );
    return item === null ? [] : [toOrderItem(item)];
  });
}

/**
 * One refund: the sum of its successful refund transactions (`kind: refund`, `status: success`). A refund
 * that returned no money yet (a restock only, a pending transaction) is not one: Shopify sends it again,
 * in later order snapshots, once its money has moved.
 */
function refundOf(refund: Payload, at: FieldPath, read: FieldReader): PlatformRefund | null {
  let sum = 0;
  asArray(refund.transactions).forEach((entry, j) => {
    const transaction = asObject(entry);
    if (transaction?.kind !== 'refund' || transaction.status !== 'success') return;
    sum += read.money(transaction.amount, [...at, 'transactions', j, 'amount']) ?? 0;
  });
  // Through the money range again: the sum is rounded to the stored scale (0.1 + 0.2 is 0.3).
  const amount = sum === 0 ? null : read.money(sum, [...at, 'transactions']);
  if (amount === null) return null;
  const id = read.id(refund.id, [...at, 'id']);
  if (id === null) read.warn(`${fieldName([...at, 'id'])} is required (refund of ${amount} ignored)`);
  return id === null ? null : { id, amount };
}

/**
 * Every `orders/*` topic carries the whole order: a snapshot at its `updated_at`. The order is read only with
 * its id, total, currency and creation time; without them nothing of it is applied.
 */
export function shopifyOrder(body: Payload, read: FieldReader): StoreChange | null {
  const externalId = read.id(body.id, ['id']);
  const totalAmount = read.money(body.total_price, ['total_price']);
  const currency = read.text(body.currency, ['currency'], 8);
  const orderedAt = read.time(body.created_at, ['created_at']);
  if (externalId === null || totalAmount === null || currency === null || orderedAt === null) {
    const missing = Object.entries({ id: externalId, total_price: totalAmount, currency, created_at: orderedAt })
      .filter(([, value]) => value === null)
      .map(([field]) => field);
    read.warn(`the order was not applied: it needs ${missing.join(', ')}`);
    return null;
  }
  const customer = shopifyBuyer(body, read);
  if (customer === null) read.warn('email is missing: the order has no contact');
  return {
    kind: 'order',
    customer,
    identityToken: shopifyIdentityToken(body),
    placed: true,
    order: {
      externalId,
      orderNumber: read.text(body.name, ['name'], 255) ?? read.id(body.order_number, ['order_number']),
      totalAmount,
      currency,
      status: read.text(body.financial_status, ['financial_status'], 255) ?? '',
      orderedAt,
      items: lineItems(body, read),
      cancelled: !isAbsent(body.cancelled_at),
      refunds: read.objects(body.refunds, ['refunds']).flatMap(([refund, at]) => refundOf(refund, at, read) ?? []),
      updatedAt: read.time(body.updated_at, ['updated_at']),
    },
  };
}

/** `refunds/create`: one refund of a stored order. */
export function shopifyRefund(body: Payload, read: FieldReader): StoreChange | null {
  const orderExternalId = read.id(body.order_id, ['order_id']);
  const refund = refundOf(body, [], read);
  if (refund === null) return null;
  if (orderExternalId === null) {
    read.warn(`order_id is required (refund ${refund.id} ignored)`);
    return null;
  }
  return { kind: 'order_refunds', orderExternalId, refunds: [refund] };
}

/** A fulfillment's `shipment_status` (the carrier's tracking) → the spec's shipping status. */
const SHIPMENT_STATUSES = new Map<string, ShippingStatus>([
  ['label_printed', 'info_received'],
  ['label_purchased', 'info_received'],
  ['confirmed', 'info_received'],
  ['in_transit', 'in_transit'],
  ['out_for_delivery', 'out_for_delivery'],
  ['ready_for_pickup', 'out_for_delivery'],
  ['attempted_delivery', 'failed_attempt'],
  ['delivered', 'delivered'],
  ['picked_up', 'delivered'],
  ['failure', 'exception'],
]);

/** Fulfillment statuses of a shipment that will not arrive as sent. */
const FAILED_FULFILLMENTS = new Set(['cancelled', 'failure', 'error']);

/**
 * The shipping status of a fulfillment: a failed one is an exception whatever its tracking said; else its
 * tracking status; else, once it succeeded (left the shop) with no tracking yet, info_received. A pending or
 * open fulfillment without tracking says nothing yet (null).
 */
function shippingStatus(body: Payload, read: FieldReader): ShippingStatus | null {
  if (typeof body.status === 'string' && FAILED_FULFILLMENTS.has(body.status)) return 'exception';
  const tracking = read.text(body.shipment_status, ['shipment_status'], 64);
  const status = tracking === null ? undefined : SHIPMENT_STATUSES.get(tracking);
  if (status) return status;
  if (tracking !== null) read.skip(['shipment_status'], `must be one of ${[...SHIPMENT_STATUSES.keys()].join(', ')}`);
  return body.status === 'success' ? 'info_received' : null;
}

/** `fulfillments/create|update`: the shipping status of the order it belongs to. */
export function shopifyShipment(body: Payload, read: FieldReader): StoreChange | null {
  const orderExternalId = read.id(body.order_id, ['order_id']);
  if (orderExternalId === null) {
    read.warn('order_id is required (fulfillment ignored)');
    return null;
  }
  const status = shippingStatus(body, read);
  if (status === null) return null;
  return {
    kind: 'shipment',
    orderExternalId,
    status,
    trackingNumber: read.text(body.tracking_number, ['tracking_number'], 255) ?? read.text(asArray(body.tracking_numbers)[0], ['tracking_numbers', 0], 255),
    carrier: read.text(body.tracking_company, ['tracking_company'], 255),
    email: read.email(body.email, ['email']),
  };
}

/**
 * `checkouts/create|update`: the cart behind the abandoned-cart flows, keyed by the checkout's `token`.
 * A checkout without an email (the buyer has not typed one yet) is nobody's cart: nothing is stored.
 */
export function shopifyCart(body: Payload, read: FieldReader): StoreChange | null {
  const customer = shopifyBuyer(body, read);
  if (customer === null) return null;
  const externalId = read.id(body.token, ['token']) ?? read.id(body.id, ['id']);
  if (externalId === null) {
    read.warn('token is required (checkout ignored)');
    return null;
  }
  return {
    kind: 'cart',
    customer,
    identityToken: shopifyIdentityToken(body),
    cart: {
      externalId,
      totalAmount: read.money(body.total_price, ['total_price']),
      currency: read.text(body.currency, ['currency'], 8) ?? read.text(body.presentment_currency, ['presentment_currency'], 8),
      checkoutUrl: read.text(body.abandoned_checkout_url, ['abandoned_checkout_url'], 4000),
      items: lineItems(body, read),
      completed: !isAbsent(body.completed_at),
    },
  };
}
