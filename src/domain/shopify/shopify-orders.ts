import { orderItemSchema, toOrderItem, type OrderItem } from '../orders/order.schema.js';
import { asArray, asObject, isAbsent, type FieldReader, type Payload } from '../platform-webhooks/payload-fields.js';
import type { PlatformBuyer, PlatformOrder, PlatformRefund, StoreChange } from '../platform-webhooks/store-change.js';
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
  // Transactions are in the currency the buyer paid (the presentment currency); one refund is in one currency.
  let currency: string | null = null;
  asArray(refund.transactions).forEach((entry, j) => {
    const transaction = asObject(entry);
    if (transaction?.kind !== 'refund' || transaction.status !== 'success') return;
    const path = [...at, 'transactions', j];
    const code = currencyCode(transaction.currency, [...path, 'currency'], read);
    if (currency !== null && code !== null && code !== currency) {
      read.skip([...path, 'currency'], `must be the refund's currency, ${currency} (transaction ignored)`);
      return;
    }
    currency ??= code;
    sum += read.money(transaction.amount, [...path, 'amount']) ?? 0;
  });
  // Through the money range again: the sum is rounded to the stored scale (0.1 + 0.2 is 0.3).
  const amount = sum === 0 ? null : read.money(sum, [...at, 'transactions']);
  if (amount === null) return null;
  const id = read.id(refund.id, [...at, 'id']);
  if (id === null) read.warn(`${fieldName([...at, 'id'])} is required (refund of ${amount} ignored)`);
  // `processed_at` is when the refund was made (an imported one's own time); `created_at` when Shopify recorded it.
  const refundedAt = read.time(refund.processed_at, [...at, 'processed_at']) ?? read.time(refund.created_at, [...at, 'created_at']);
  return id === null ? null : { id, amount, currency, at: refundedAt };
}

/** An ISO 4217 code, upper-cased; anything else is skipped with a warning (null). */
function currencyCode(value: unknown, at: FieldPath, read: FieldReader): string | null {
  const code = read.text(value, at, 8);
  if (code === null) return null;
  if (/^[A-Za-z]{3}$/.test(code)) return code.toUpperCase();
  read.skip(at, 'must be a three-letter ISO 4217 code');
  return null;
}

/**
 * What a Markets order was paid in, when that is not the shop's currency: `presentment_currency` and
 * `total_price_set.presentment_money.amount`. The order's `currency` and `total_price` are the shop's.
 */
function presentmentOf(body: Payload, currency: string | null, read: FieldReader): PlatformOrder['presentment'] {
  if (currency === null) return null;
  const paidIn = currencyCode(body.presentment_currency, ['presentment_currency'], read);
  if (paidIn === null || paidIn === currency) return null;
  const at = ['total_price_set', 'presentment_money', 'amount'];
  const total = read.money(asObject(asObject(body.total_price_set)?.presentment_money)?.amount, at);
  if (total === null) read.warn(`${fieldName(at)} is missing: refunds in ${paidIn} cannot be converted to ${currency}`);
  return total === null ? null : { currency: paidIn, totalAmount: total };
}

/**
 * The buyer of an order without an email (a point-of-sale sale, a draft order taken by phone): the customer's id
 * and phone, else the order's or its billing address's phone (docs/platforms/README.md, Orders without an email).
 */
function buyerWithoutEmail(body: Payload, read: FieldReader): PlatformBuyer {
  const customer = asObject(body.customer) ?? {};
  return {
    customerId: read.id(customer.id, ['customer', 'id']),
    phone:
      read.text(customer.phone, ['customer', 'phone'], 64) ??
      read.text(body.phone, ['phone'], 64) ??
      read.text(asObject(body.billing_address)?.phone, ['billing_address', 'phone'], 64),
  };
}

/**
 * Every `orders/*` topic carries the whole order: a snapshot at its `updated_at`. The order is read only with
 * its id, total and creation time; without them nothing of it is applied.
 */
export function shopifyOrder(body: Payload, read: FieldReader): StoreChange | null {
  const externalId = read.id(body.id, ['id']);
  // A test order (the Bogus gateway, a payment provider's test mode) is no sale: only its id is kept.
  if (body.test === true) {
    read.warn('a test order (test: true): not stored, nor its buyer; its refunds and fulfillments are dropped');
    return externalId === null ? null : { kind: 'test_order', orderExternalId: externalId };
  }
  const totalAmount = read.money(body.total_price, ['total_price']);
  // The shop's currency; without one the order is in the workspace's (settings `currency`).
  const currency =
    currencyCode(body.currency, ['currency'], read) ??
    currencyCode(asObject(asObject(body.total_price_set)?.shop_money)?.currency_code, ['total_price_set', 'shop_money', 'currency_code'], read);
  const orderedAt = read.time(body.created_at, ['created_at']);
  if (externalId === null || totalAmount === null || orderedAt === null) {
    const missing = Object.entries({ id: externalId, total_price: totalAmount, created_at: orderedAt })
      .filter(([, value]) => value === null)
      .map(([field]) => field);
    read.warn(`the order was not applied: it needs ${missing.join(', ')}`);
    return null;
  }
  const customer = shopifyBuyer(body, read);
  if (customer === null) read.warn('email is missing: the order goes to the contact of its customer id or phone, else is kept without a contact');
  return {
    kind: 'order',
    customer,
    identityToken: shopifyIdentityToken(body),
    placed: true,
    ...(customer === null ? { buyer: buyerWithoutEmail(body, read) } : {}),
    order: {
      externalId,
      orderNumber: read.text(body.name, ['name'], 255) ?? read.id(body.order_number, ['order_number']),
      totalAmount,
      currency,
      shopCurrency: currency,
      presentment: presentmentOf(body, currency, read),
      status: read.text(body.financial_status, ['financial_status'], 255) ?? '',
      orderedAt,
      items: lineItems(body, read),
      cancelled: !isAbsent(body.cancelled_at),
      cancelledAt: read.time(body.cancelled_at, ['cancelled_at']),
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
