/**
 * What the model test compares, in one shape for the reference model's prediction and for what emk answers
 * through its API. Money is in cents; contacts by model key, orders by external id, senders by symbol.
 */
export interface ContactView {
  email: string;
  status: string;
  source: string | null;
  anonymousIds: string[];
  /** Net lifetime revenue. */
  revenue: number;
  orders: number;
  /** `model_visit` events on the contact's timeline (anonymous ones merged in by identify). */
  visits: number;
}

export interface OrderView {
  /** Model key of the owner (an erased owner keeps its key: the order stays on the tombstone); null: an order without a contact. */
  owner: string | null;
  total: number;
  refunded: number;
  cancelled: boolean;
  currency: string;
  orderedAt: number;
  platform: string;
  /** `campaign:<n>` / `flow:<n>`, or null. */
  credit: string | null;
  /** Shopify and WooCommerce orders: the status as last sent and the order number. */
  status?: string;
  orderNumber?: string;
  /** A multi-currency order: what the buyer paid, in cents of `presentmentCurrency` (totals and refunds are the shop's). */
  presentmentCurrency?: string;
  presentmentTotal?: number;
}

export interface Snapshot {
  contacts: Record<string, ContactView>;
  /** Orders upserted by external id (webhook and sync). */
  orders: Record<string, OrderView>;
  /** Direct orders, one line each, sorted (no key identifies them). */
  directOrders: string[];
  /** Campaign and flow reports: orders credited and their net revenue. */
  senderReports: Record<string, { orders: number; revenue: number }>;
  /** The revenue report over named windows, one line per row (its store-wide `total` as sender `total`), sorted. */
  revenueReport: string[];
  /** Recipients of each sent campaign. */
  recipients: Record<string, number>;
  /** `model_visit` events still anonymous. */
  anonymousVisits: number;
}

/** The windows the revenue report is read over: [from, to) in ms from the run's start. */
export function reportWindows(now: number): Array<{ name: string; from: number; to: number }> {
  const DAY = 86_400_000;
  return [
    { name: 'all', from: -1000 * DAY, to: 1000 * DAY },
    { name: 'last30d', from: now - 30 * DAY, to: now },
  ];
}

export const revenueLine = (window: string, sender: string, currency: string, orders: number, revenue: number) =>
  `${window} ${sender} ${currency || '(none)'} orders=${orders} revenue=${revenue}`;

export const directOrderLine = (owner: string, externalId: string | null, total: number, currency: string, orderedAt: number, credit: string | null) =>
  `${owner} external_id=${externalId ?? '-'} total=${total} ${currency} at=${orderedAt} credit=${credit ?? '-'}`;

/** JSON with object keys sorted, so field order never counts as a difference. */
const canonical = (value: unknown): string =>
  JSON.stringify(value, (_, v) => (v && typeof v === 'object' && !Array.isArray(v) ? Object.fromEntries(Object.entries(v).sort(([a], [b]) => (a < b ? -1 : 1))) : v));

/** Every difference between what the model predicts and what emk answers, one readable line each. */
export function compareSnapshots(expected: Snapshot, actual: Snapshot): string[] {
  const out: string[] = [];
  const same = (a: unknown, b: unknown) => canonical(a) === canonical(b);
  const keyed = <T>(what: string, e: Record<string, T>, a: Record<string, T>) => {
    for (const key of new Set([...Object.keys(e), ...Object.keys(a)])) {
      if (!(key in a)) out.push(`${what} ${key}: expected ${JSON.stringify(e[key])}, emk has none`);
      else if (!(key in e)) out.push(`${what} ${key}: expected none, emk has ${JSON.stringify(a[key])}`);
      else if (!same(e[key], a[key])) out.push(`${what} ${key}: expected ${canonical(e[key])}, emk has ${canonical(a[key])}`);
    }
  };
  const lines = (what: string, e: string[], a: string[]) => {
    const missing = [...e];
    const extra: string[] = [];
    for (const line of a) {
      const at = missing.indexOf(line);
      if (at >= 0) missing.splice(at, 1);
      else extra.push(line);
    }
    for (const line of missing) out.push(`${what}: expected ${line}, emk lacks it`);
    for (const line of extra) out.push(`${what}: emk has ${line}, not expected`);
  };
  keyed('contact', expected.contacts, actual.contacts);
  keyed('order', expected.orders, actual.orders);
  lines('direct order', expected.directOrders, actual.directOrders);
  keyed('report of', expected.senderReports, actual.senderReports);
  lines('revenue report', expected.revenueReport, actual.revenueReport);
  keyed('recipients of', expected.recipients, actual.recipients);
  if (expected.anonymousVisits !== actual.anonymousVisits) {
    out.push(`anonymous visits: expected ${expected.anonymousVisits}, emk has ${actual.anonymousVisits}`);
  }
  return out;
}
