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
  | { kind: 'send-campaign'; campaign: string }
  | { kind: 'flow-trigger'; contact: string; flow: string }
  | { kind: 'open' | 'click'; message: string }
  | { kind: 'windows'; clickDays: number; openDays: number }
  | { kind: 'contact-limit'; limit: number | null };

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
      return `send ${op.campaign}`;
    case 'flow-trigger':
      return `POST /events ${op.flow} trigger for ${op.contact}`;
    case 'open':
    case 'click':
      return `${op.kind} ${op.message}`;
    case 'windows':
      return `PATCH /settings click_window_days=${op.clickDays} open_window_days=${op.openDays}`;
    case 'contact-limit':
      return `PATCH /settings contact_limit=${op.limit}`;
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
