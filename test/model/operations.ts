/**
 * The operations the random driver issues, in symbolic form: contacts by email (as spelled in the request) or by
 * model key (`<email key>#<generation>`: a contact erased and created again is a new generation), orders by
 * external id, messages by `<sender>/<contact key>/<n>`, senders as `campaign:<n>` / `flow:<n>`. Times are
 * milliseconds from the run's start; money is in cents.
 */

export const DAY_MS = 86_400_000;

export type OrderEventType = 'order_placed' | 'fulfilled_order' | 'cancelled_order' | 'refunded_order';

export interface WebhookOrder {
  externalId: string;
  total?: number;
  currency?: string;
  status?: string;
  orderedAt?: number;
  /** Send `ordered_at` as `YYYY-MM-DD HH:MM:SS` (whole seconds) instead of RFC 3339. */
  plainTime?: boolean;
  refundAmount?: number;
  refundedAmount?: number;
}

export interface SyncRow {
  email: string;
  externalId: string;
  total: number;
  currency: string;
  status: string;
  orderedAt: number;
}

export type Platform = 'shopify' | 'woocommerce';

/** Shopify's `email_marketing_consent.state` values. */
export type ShopifyConsentState = 'subscribed' | 'unsubscribed' | 'not_subscribed' | 'pending' | 'redacted' | 'invalid';

/** A customer's email-marketing consent as Shopify holds it: the state and `consent_updated_at` (null: not sent). */
export interface ShopifyConsent {
  state: ShopifyConsentState;
  at: number | null;
}

/** A platform refund: its id and the amounts of its transactions (Shopify: successful ones count; `failed` do not). */
export interface PlatformRefund {
  id: string;
  amounts: number[];
  failed?: number[];
}

/**
 * A multi-currency order (Shopify Markets, WooPayments): paid in `currency` at `rate` units of it per unit of the
 * shop's. The model's amounts stay in the shop's money; the payloads give the paid ones (× rate), chosen so that
 * every conversion back is whole cents.
 */
export interface Presentment {
  currency: string;
  rate: number;
}

/** An order without an email: the addresses whose platform customer id and phone number it names (null: none). */
export interface ContactlessBuyer {
  customerOf: string | null;
  phoneOf: string | null;
}

/** A whole order as the platform sends it at `updatedAt` (every field the model needs; the driver adds the rest). */
export interface PlatformOrderSnapshot {
  /** The platform's numeric id, as a string. */
  id: string;
  /** Shopify's `name` (`#1001`), WooCommerce's `number`. */
  number: string;
  total: number;
  currency: string;
  /** Shopify's `financial_status`, WooCommerce's `status`. */
  status: string;
  createdAt: number;
  updatedAt: number;
  /** Shopify's `cancelled_at` (WooCommerce says it by its status). */
  cancelledAt: number | null;
  refunds: PlatformRefund[];
  /** Shopify: the order's `customer` (with its consent), or none (then only `buyer_accepts_marketing` tells consent). */
  customer: { consent: ShopifyConsent; emailOnlyThere: boolean } | null;
  /** Shopify: `buyer_accepts_marketing`. */
  buyerAcceptsMarketing: boolean;
  /** Paid in another currency than the shop's; null: in the shop's. */
  presentment: Presentment | null;
  /** Set when the order has no email (the delivery's `email` is null then). */
  buyer: ContactlessBuyer | null;
}

export type Operation =
  | {
      kind: 'webhook-order';
      eventType: OrderEventType;
      email?: string;
      /** An identity token: the message whose click minted it, or `forged` for one that is not ours. */
      token?: string;
      /** The retry key, sent as `external_id` (or as `id` when `idField` says so); absent: the order's id is the key. */
      eventId?: string | number;
      idField?: 'external_id' | 'id';
      /** null: no `order` object; `''` as externalId: an empty one (rule 3). */
      order: WebhookOrder | null;
    }
  | { kind: 'webhook-customer'; email: string; eventId: string }
  | { kind: 'direct-order'; contact: string; externalId?: string; total: number; currency: string; orderedAt: number }
  | { kind: 'sync'; via: 'api' | 'cli'; rows: SyncRow[] }
  | { kind: 'identify'; email: string; anonymousId?: string }
  | { kind: 'anonymous-visit'; anonymousId: string }
  /** Visits by email through the batch endpoint or `emk events import` (contacts must exist; never created). */
  | { kind: 'event-batch'; via: 'api' | 'cli'; emails: string[] }
  | { kind: 'upsert-contact'; email: string; status?: SubscriptionStatus }
  | { kind: 'set-status'; contact: string; status: SubscriptionStatus }
  | { kind: 'erase'; contact: string }
  /** A campaign to every subscriber; an A/B one tests `variants` variants on `testShare` of them, the winner to the rest. */
  | { kind: 'send-campaign'; campaign: string; ab?: { testShare: number; variants: number } }
  | { kind: 'flow-trigger'; contact: string; flow: string }
  | { kind: 'open' | 'click'; message: string }
  | { kind: 'windows'; clickDays: number; openDays: number }
  | { kind: 'contact-limit'; limit: number | null }
  /** A Shopify `orders/*` or WooCommerce `order.*` delivery carrying the whole order; `email` as this delivery spells it (null: none). */
  | { kind: 'platform-order'; platform: Platform; topic: string; deliveryId: string | null; email: string | null; order: PlatformOrderSnapshot }
  /** Shopify `refunds/create` for the order with this id (its transactions in the currency the order was paid in). */
  | { kind: 'platform-refund'; deliveryId: string | null; orderId: string; refund: PlatformRefund; presentment: Presentment | null }
  /** WooCommerce `order.deleted` (moved to the trash): the payload is the order's id only. */
  | { kind: 'platform-order-deleted'; deliveryId: string | null; orderId: string }
  /** Shopify `customers/create|update` (with the customer's consent) or WooCommerce `customer.created|updated`. */
  | { kind: 'platform-customer'; platform: Platform; topic: string; deliveryId: string | null; email: string; consent: ShopifyConsent | null };

/** The platform operations: deliveries to `/ecom/shopify/{id}` and `/ecom/woocommerce/{id}`. */
export type PlatformOperation = Extract<Operation, { kind: `platform-${string}` }>;
export const isPlatformOperation = (op: Operation): op is PlatformOperation => op.kind.startsWith('platform-');

export type SubscriptionStatus = 'subscribed' | 'unsubscribed' | 'non_subscribed';

/** Operations sent together (concurrently), after the clock moved on by `advanceMs`. */
export interface Burst {
  advanceMs: number;
  operations: Operation[];
}

const money = (cents: number | undefined) => (cents === undefined ? '-' : (cents / 100).toFixed(2));
const time = (at: number | undefined) => {
  if (at === undefined) return '-';
  const days = Math.floor(Math.abs(at) / DAY_MS);
  const rest = new Date(Math.abs(at) % DAY_MS).toISOString().slice(11, 23);
  return `T${at < 0 ? '-' : '+'}${days}d${rest}`;
};

const refunds = (list: PlatformRefund[]) =>
  list.map((r) => `${r.id}:${r.amounts.map(money).join('+')}${r.failed?.length ? `(failed ${r.failed.map(money).join('+')})` : ''}`).join(',');
const consent = (c: ShopifyConsent) => `${c.state}@${time(c.at ?? undefined)}`;
const buyer = (b: ContactlessBuyer | null) => (b === null ? '' : ` customer-id-of=${b.customerOf ?? '-'} phone-of=${b.phoneOf ?? '-'}`);
const delivery = (id: string | null) => `delivery=${id ?? '(none)'}`;

/** One line a reader can replay by hand. */
export function describeOperation(op: Operation): string {
  switch (op.kind) {
    case 'webhook-order': {
      const who = [op.email ? `email=${op.email}` : '', op.token ? `token=${op.token}` : ''].filter(Boolean).join(' ') || 'no owner';
      const key = op.eventId === undefined ? 'key=(order id)' : `${op.idField ?? 'external_id'}=${JSON.stringify(op.eventId)}`;
      const o = op.order;
      const order =
        o === null ? 'order=none'
        : `order=${JSON.stringify(o.externalId)} total=${money(o.total)} ${o.currency ?? '-'} status=${o.status ?? '-'} ordered_at=${time(o.orderedAt)}${o.plainTime ? '(plain)' : ''}` +
          (o.refundAmount !== undefined ? ` refund_amount=${money(o.refundAmount)}` : '') +
          (o.refundedAmount !== undefined ? ` refunded_amount=${money(o.refundedAmount)}` : '');
      return `webhook ${op.eventType} ${who} ${key} ${order}`;
    }
    case 'webhook-customer':
      return `webhook customer_updated email=${op.email} external_id=${op.eventId}`;
    case 'direct-order':
      return `POST /ecommerce/orders contact=${op.contact} external_id=${op.externalId ?? '-'} total=${money(op.total)} ${op.currency} ordered_at=${time(op.orderedAt)}`;
    case 'sync':
      return `sync (${op.via}) ${op.rows.map((r) => `[${r.email} ${r.externalId} ${money(r.total)} ${r.currency} ${r.status} ${time(r.orderedAt)}]`).join(' ')}`;
    case 'identify':
      return `POST /collect/identify email=${op.email} anonymous_id=${op.anonymousId ?? '-'}`;
    case 'anonymous-visit':
      return `POST /collect/event anonymous_id=${op.anonymousId}`;
    case 'event-batch':
      return `${op.via === 'api' ? 'POST /events/batch' : 'emk events import'} emails=${op.emails.join(',')}`;
    case 'upsert-contact':
      return `POST /contacts email=${op.email} subscription_status=${op.status ?? '-'}`;
    case 'set-status':
      return `PATCH /contacts/${op.contact} subscription_status=${op.status}`;
    case 'erase':
      return `DELETE /contacts/${op.contact}`;
    case 'send-campaign':
      return `send ${op.campaign}${op.ab ? ` (A/B: ${op.ab.variants} variants, test share ${op.ab.testShare})` : ''}`;
    case 'flow-trigger':
      return `POST /events ${op.flow} trigger for ${op.contact}`;
    case 'open':
    case 'click':
      return `${op.kind} ${op.message}`;
    case 'windows':
      return `PATCH /settings click_window_days=${op.clickDays} open_window_days=${op.openDays}`;
    case 'contact-limit':
      return `PATCH /settings contact_limit=${op.limit}`;
    case 'platform-order': {
      const o = op.order;
      const customer =
        op.platform === 'woocommerce' ? ''
        : o.customer === null ? ` no-customer buyer_accepts_marketing=${o.buyerAcceptsMarketing}`
        : ` customer-consent=${consent(o.customer.consent)}${o.customer.emailOnlyThere ? ' (email in customer only)' : ''}`;
      return (
        `${op.platform} ${op.topic} ${delivery(op.deliveryId)} id=${o.id} number=${o.number} email=${op.email ?? '(none)'}${buyer(o.buyer)} ` +
        `total=${money(o.total)} ${o.currency}${o.presentment ? ` (paid in ${o.presentment.currency} at ${o.presentment.rate})` : ''} ` +
        `status=${o.status} created=${time(o.createdAt)} updated=${time(o.updatedAt)}${o.cancelledAt !== null ? ` cancelled=${time(o.cancelledAt)}` : ''} ` +
        `refunds=[${refunds(o.refunds)}]${customer}`
      );
    }
    case 'platform-refund':
      return `shopify refunds/create ${delivery(op.deliveryId)} order=${op.orderId} refund=${refunds([op.refund])}`;
    case 'platform-order-deleted':
      return `woocommerce order.deleted ${delivery(op.deliveryId)} id=${op.orderId}`;
    case 'platform-customer':
      return `${op.platform} ${op.topic} ${delivery(op.deliveryId)} email=${op.email}${op.consent ? ` consent=${consent(op.consent)}` : ''}`;
  }
}

export function describeBursts(bursts: Burst[]): string {
  let at = 0;
  let n = 0;
  const lines: string[] = [];
  bursts.forEach((burst, b) => {
    at += burst.advanceMs;
    lines.push(`-- burst ${b} at ${time(at)}${burst.operations.length > 1 ? ' (concurrent)' : ''}`);
    for (const op of burst.operations) lines.push(`  #${n++} ${describeOperation(op)}`);
  });
  return lines.join('\n');
}
