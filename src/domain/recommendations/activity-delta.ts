import { productIdOfProperties } from '../products/product-id.js';
import { compositeKey } from '../shared/keys.js';

/** best_selling_and_most_viewed: one unit sold weighs as much as this many product views. */
export const VIEWS_PER_SALE = 10;

/** The canonical event name of a product view (aliases are normalised before storage). */
export const VIEW_EVENT = 'viewed_product';

export const DAY_MS = 86_400_000;

/** Days since 1970-01-01 UTC: the aggregates' day. */
export const dayOf = (ms: number) => Math.floor(ms / DAY_MS);

/** Orders with more distinct products than this add no co-occurrence (their pairs grow with the square). */
export const MAX_PAIRED_PRODUCTS = 50;

/** What one order adds to the aggregates: its items' units, and co-occurrence between its products. */
export interface OrderActivity {
  workspaceId: string;
  orderedAt: number;
  items: Array<{ external_id: string | null; quantity: number }>;
  /** Cancelled orders count nothing. */
  cancelled: boolean;
}

/** What one stored event adds: a product view, when it is one and names a product. */
export interface EventActivity {
  workspace_id: string;
  event_name: string;
  properties: Record<string, unknown>;
  created_at: number;
}

interface Counts {
  workspaceId: string;
  productKey: string;
  day: number;
  unitsSold: number;
  views: number;
}

interface PairCount {
  workspaceId: string;
  productKey: string;
  otherKey: string;
  day: number;
  orders: number;
}

/**
 * The net change a write makes to the behaviour aggregates: what it added minus what it took away, per
 * workspace, product and day. Built in memory for a whole group commit, then written in a few statements.
 */
export class ActivityDelta {
  private readonly counts = new Map<string, Counts>();
  private readonly pairs = new Map<string, PairCount>();

  /** Counts `order` in (+1) or out (-1). */
  order(order: OrderActivity, sign: 1 | -1): this {
    if (order.cancelled) return this;
    const day = dayOf(order.orderedAt);
    const products = new Set<string>();
    for (const item of order.items) {
      const key = item.external_id;
      if (key === null || key === '') continue;
      products.add(key);
      this.count(order.workspaceId, key, day, sign * item.quantity, 0);
    }
    if (products.size < 2 || products.size > MAX_PAIRED_PRODUCTS) return this;
    for (const productKey of products) {
      for (const otherKey of products) {
        if (productKey === otherKey) continue;
        const id = compositeKey(order.workspaceId, productKey, otherKey, day);
        const pair = this.pairs.get(id) ?? { workspaceId: order.workspaceId, productKey, otherKey, day, orders: 0 };
        pair.orders += sign;
        this.pairs.set(id, pair);
      }
    }
    return this;
  }

  /** Counts `event` in (+1) or out (-1) when it is a product view. */
  event(event: EventActivity, sign: 1 | -1): this {
    if (event.event_name !== VIEW_EVENT) return this;
    const key = productIdOfProperties(event.properties);
    if (key !== null) this.count(event.workspace_id, key, dayOf(event.created_at), 0, sign);
    return this;
  }

  /** Counts views already grouped per product and day (the activity store's `viewsOf`) in (+1) or out (-1). */
  views(workspaceId: string, rows: Array<{ product_key: string; day: number; views: number }>, sign: 1 | -1): this {
    for (const row of rows) this.count(workspaceId, row.product_key, row.day, 0, sign * row.views);
    return this;
  }

  private count(workspaceId: string, productKey: string, day: number, unitsSold: number, views: number) {
    const id = compositeKey(workspaceId, productKey, day);
    const counts = this.counts.get(id) ?? { workspaceId, productKey, day, unitsSold: 0, views: 0 };
    counts.unitsSold += unitsSold;
    counts.views += views;
    this.counts.set(id, counts);
  }

  /** The non-zero changes of each workspace, from `startDay` on (earlier days are outside the window). */
  byWorkspace(startDayOf: (workspaceId: string) => number | undefined) {
    const out = new Map<string, { daily: Counts[]; pairs: PairCount[] }>();
    const slot = (workspaceId: string) => {
      const entry = out.get(workspaceId) ?? { daily: [], pairs: [] };
      out.set(workspaceId, entry);
      return entry;
    };
    for (const c of this.counts.values()) {
      if ((c.unitsSold !== 0 || c.views !== 0) && c.day >= (startDayOf(c.workspaceId) ?? -Infinity)) slot(c.workspaceId).daily.push(c);
    }
    for (const p of this.pairs.values()) {
      if (p.orders !== 0 && p.day >= (startDayOf(p.workspaceId) ?? -Infinity)) slot(p.workspaceId).pairs.push(p);
    }
    return out;
  }

  /** Workspaces with any non-zero change. */
  workspaces(): string[] {
    const ids = new Set<string>();
    for (const c of this.counts.values()) if (c.unitsSold !== 0 || c.views !== 0) ids.add(c.workspaceId);
    for (const p of this.pairs.values()) if (p.orders !== 0) ids.add(p.workspaceId);
    return [...ids];
  }
}
