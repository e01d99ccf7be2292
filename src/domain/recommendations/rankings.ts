import type { Knex } from 'knex';
import type { Dialect } from '../db/dialect/dialect.js';
import { NotFoundError } from '../errors.js';
import type { RecommendationType } from '../feeds/feed.schema.js';
import { productIdOfItem, productIdsOfEvent, productIdOfProperties } from '../products/product-id.js';
import { MANUAL_PLATFORM } from '../products/product-service.js';
import { DAY_MS, VIEW_EVENT } from './activity-delta.js';
import { windowStartAt, type ProductActivity } from './product-activity.js';
import { createProductActivityStore } from './product-activity-store.js';
import type { TotalsColumn } from './category-totals.js';

/**
 * What a ranking orders by: a feed's recommendation type, or `cart_or_order_items` (the recipient's own carted
 * and ordered products, newest first), which no feed offers but a template's product block falls back to.
 */
export type RankedType = RecommendationType | 'cart_or_order_items';

/**
 * Ranks a feed by customer behaviour. Returns at most `limit` product ids in ranked order, or null when the type
 * is not ranked by it (the plain ordering applies). `filtered()` is a fresh query over `products as p` with the
 * workspace and every feed filter applied, no columns selected and no order: the ranker joins its data to it.
 */
export type FeedRanker = (args: {
  db: Knex;
  workspaceId: string;
  type: RankedType;
  contactId: string | undefined;
  limit: number;
  filtered: () => Knex.QueryBuilder;
  /** The feed's categories filter (empty: none): every product `filtered()` yields has at least one of them. */
  categories: string[];
}) => Promise<string[] | null>;

const CART_EVENT = 'added_to_cart';

/** The most recent events of one kind a recipient ranking reads; older ones add nothing a block could show. */
const RECENT_EVENTS = 1_000;

/** Store-wide: the top keys tried first, before a full join (see storeWide). */
const TOP_CANDIDATES = 50;

/** Keys in the first slice inKeyOrder reads. */
const FIRST_KEYS = 50;

/** may_also_like: the recipient's most recent products that seed it, and the partners read for each. */
const MAX_SEEDS = 20;
const PARTNERS_PER_SEED = 100;

/** Co-occurring products considered before filters: enough for any block once filters drop some. */
const CO_OCCURRING = 500;

const STORE_WIDE: Record<string, TotalsColumn> = {
  best_selling: 'units_sold',
  most_viewed: 'views',
  best_selling_and_most_viewed: 'score',
};

type RankRequest = Parameters<FeedRanker>[0];

/** A filtered product as inKeyOrder orders it: by its key's place, then newest first, then by id. */
type CatalogRow = { id: string; external_id: string; created_at: unknown };

/** Product keys with the time each was last seen, most recent first, each once. */
function newestFirst(seen: Array<{ key: string; at: number }>): string[] {
  const latest = new Map<string, number>();
  for (const { key, at } of seen) latest.set(key, Math.max(at, latest.get(key) ?? -Infinity));
  return [...latest].sort((a, b) => b[1] - a[1] || (a[0] < b[0] ? -1 : 1)).map(([key]) => key);
}

/**
 * The recommendation types of the spec's "Recommendation data requirements", over the feed's filtered
 * products. Behaviour names products by the shop's id, joined to the catalog's `external_id` only (an id that
 * matches nothing ranks nothing); products of manual import are never ranked. Store-wide types read the
 * running totals; per-recipient types read the recipient's own recent events, orders and carts.
 */
/** Rankings that depend on the recipient (their views, carts, orders); the others are the same for everyone. */
export function isPerRecipient(type: string): boolean {
  return type === 'recently_viewed' || type === 'added_to_cart' || type === 'may_also_like' || type === 'cart_or_order_items';
}

export function createRanker(deps: {
  dialect: Dialect;
  activity: ProductActivity;
  now?: () => number;
}): FeedRanker {
  const { dialect, activity } = deps;
  const activityStore = createProductActivityStore(deps.dialect);
  const now = deps.now ?? Date.now;

  const ranked = (request: RankRequest) =>
    request.filtered().whereNot('p.platform', MANUAL_PLATFORM);

  /**
   * The filtered products among `keys` (distinct), in their order (products sharing an id: newest first). Read in
   * slices from the front, each four times the one before, until `limit` are found: a later key only ranks
   * after them, and the first few dozen keys usually suffice (a recipient's co-occurring products run to 500).
   */
  async function inKeyOrder(request: RankRequest, keys: string[], limit: number): Promise<string[]> {
    const found: string[] = [];
    for (let from = 0, size = FIRST_KEYS; from < keys.length && found.length < limit; from += size, size *= 4) {
      const slice = keys.slice(from, from + size);
      const rows: CatalogRow[] = await ranked(request).whereIn('p.external_id', slice).select('p.id', 'p.external_id', 'p.created_at');
      found.push(...sortedByKeys(rows, slice, limit - found.length));
    }
    return found;
  }

  /** `rows` in the order of their `external_id` in `keys` (products sharing an id: newest first), at most `limit`. */
  function sortedByKeys(rows: CatalogRow[], keys: string[], limit: number): string[] {
    const position = new Map(keys.map((key, i) => [key, i]));
    return rows
      .sort(
        (a, b) =>
          position.get(a.external_id)! - position.get(b.external_id)! ||
          dialect.readNumber(b.created_at) - dialect.readNumber(a.created_at) ||
          (a.id < b.id ? 1 : -1),
      )
      .slice(0, limit)
      .map((row) => row.id);
  }

  /**
   * best_selling, most_viewed, best_selling_and_most_viewed. First the top of the totals' index alone (a few
   * dozen keys, then the feed's filters over just those products): the usual answer, in a few milliseconds
   * whatever the planner thinks. A feed restricted to categories reads the top of those categories' totals
   * instead: the store's top keys rarely hold a page of one category's products. When filters leave too few
   * of them, one query joins the totals to every filtered product and lets the database choose.
   */
  async function storeWide(request: RankRequest, column: TotalsColumn): Promise<string[]> {
    await activity.rollOver(request.workspaceId);
    const order = [
      { column: `t.${column}`, order: 'desc' as const },
      { column: 't.product_key', order: 'desc' as const },
    ];
    const candidates = Math.max(TOP_CANDIDATES, request.limit * 5);
    const top: string[] =
      request.categories.length > 0
        ? await activityStore.categories.top(request.db, request.workspaceId, [...new Set(request.categories)], column, candidates)
        : await request
            .db('product_activity_totals as t')
            .where({ 't.workspace_id': request.workspaceId })
            .where(`t.${column}`, '>', 0)
            .orderBy(order)
            .limit(candidates)
            .pluck('t.product_key');
    const fromTop = await inKeyOrder(request, top, request.limit);
    if (fromTop.length === request.limit || top.length < candidates) return fromTop;
    const rows: Array<{ id: string }> = await ranked(request)
      .join('product_activity_totals as t', (join) => {
        join.on('t.workspace_id', '=', 'p.workspace_id').andOn('t.product_key', '=', 'p.external_id');
      })
      .where(`t.${column}`, '>', 0)
      .orderBy([...order, { column: 'p.created_at', order: 'desc' }, { column: 'p.id', order: 'desc' }])
      .limit(request.limit)
      .select('p.id');
    return rows.map((row) => row.id);
  }

  /** The recipient's events of one name within the look-back, newest first. */
  async function recentEvents(request: RankRequest, contactId: string, eventName: string, since: number) {
    const rows: Array<{ properties: unknown; created_at: unknown }> = await request
      .db('events')
      .where({ workspace_id: request.workspaceId, contact_id: contactId, event_name: eventName })
      .where('created_at', '>=', since)
      .orderBy('created_at', 'desc')
      .limit(RECENT_EVENTS)
      .select('properties', 'created_at');
    return rows.map((row) => ({ properties: dialect.readJson<unknown>(row.properties), at: dialect.readNumber(row.created_at) }));
  }

  /** Products in the recipient's carts updated within the look-back. */
  async function cartProducts(request: RankRequest, contactId: string, since: number) {
    const rows: Array<{ items: unknown; updated_at: unknown }> = await request
      .db('carts')
      .where({ workspace_id: request.workspaceId, contact_id: contactId })
      .where('updated_at', '>=', since)
      .select('items', 'updated_at');
    return rows.flatMap((row) => {
      const items = dialect.readJson<unknown>(row.items);
      const at = dialect.readNumber(row.updated_at);
      return (Array.isArray(items) ? items : []).flatMap((item) => {
        const key = productIdOfItem(item);
        return key === null ? [] : [{ key, at }];
      });
    });
  }

  /** Products of the recipient's own orders (not cancelled) within the look-back. */
  async function orderedProducts(request: RankRequest, contactId: string, since: number) {
    const rows: Array<{ external_id: string; ordered_at: unknown }> = await request
      .db('orders as o')
      .join('order_items as oi', 'oi.order_id', 'o.id')
      .where({ 'o.workspace_id': request.workspaceId, 'o.contact_id': contactId })
      .where('o.ordered_at', '>=', since)
      .whereNull('o.cancelled_at')
      .whereNotNull('oi.external_id')
      .select('oi.external_id', 'o.ordered_at');
    return rows.map((row) => ({ key: row.external_id, at: dialect.readNumber(row.ordered_at) }));
  }

  /**
   * Products bought together with `seeds` store-wide, most orders first (the seeds themselves left out): each
   * seed's most frequent partners from the top of the pair totals' index, summed over the seeds.
   */
  async function coOccurring(request: RankRequest, seeds: string[]): Promise<string[]> {
    const partners = await Promise.all(
      seeds.slice(0, MAX_SEEDS).map((seed) => activityStore.partnersOf(request.db, request.workspaceId, seed, PARTNERS_PER_SEED)),
    );
    const seedSet = new Set(seeds);
    const together = new Map<string, number>();
    for (const { key, orders } of partners.flat()) {
      if (!seedSet.has(key)) together.set(key, (together.get(key) ?? 0) + orders);
    }
    return [...together]
      .sort((a, b) => b[1] - a[1] || (a[0] < b[0] ? -1 : 1))
      .slice(0, CO_OCCURRING)
      .map(([key]) => key);
  }

  /** Filtered products sharing a category with the seeds: best sellers first, then newest. */
  async function sameCategories(request: RankRequest, seeds: string[], exclude: string[], limit: number): Promise<string[]> {
    if (limit <= 0) return [];
    const { db, workspaceId } = request;
    const categories = db('product_categories as sc')
      .join('products as sp', 'sp.id', 'sc.product_id')
      .where('sp.workspace_id', workspaceId)
      .whereIn('sp.external_id', seeds)
      .distinct('sc.category');
    const rows: Array<{ id: string }> = await ranked(request)
      .whereIn('p.id', db('product_categories').where({ workspace_id: workspaceId }).whereIn('category', categories).select('product_id'))
      .whereNotIn('p.external_id', seeds)
      .whereNotIn('p.id', exclude)
      .leftJoin('product_activity_totals as t', (join) => {
        join.on('t.workspace_id', '=', 'p.workspace_id').andOn('t.product_key', '=', 'p.external_id');
      })
      .orderByRaw('COALESCE(t.units_sold, 0) DESC, p.created_at DESC, p.id DESC')
      .limit(limit)
      .select('p.id');
    return rows.map((row) => row.id);
  }

  /** The recipient's own ordered and carted products, most recent first. */
  async function ownProducts(request: RankRequest, contactId: string, since: number): Promise<string[]> {
    return newestFirst([...(await orderedProducts(request, contactId, since)), ...(await cartProducts(request, contactId, since))]);
  }

  async function mayAlsoLike(request: RankRequest, contactId: string, since: number): Promise<string[]> {
    const seeds = await ownProducts(request, contactId, since);
    if (seeds.length === 0) return [];
    await activity.rollOver(request.workspaceId);
    const together = await inKeyOrder(request, await coOccurring(request, seeds), request.limit);
    return [...together, ...(await sameCategories(request, seeds, together, request.limit - together.length))];
  }

  return async (request) => {
    const { type } = request;
    const column = STORE_WIDE[type];
    if (column) return storeWide(request, column);

    const personal = isPerRecipient(type);
    // Without a recipient, the per-recipient types use the plain ordering (docs/api/feeds.md).
    if (!personal || request.contactId === undefined) return null;
    const contact = await request.db('contacts').where({ workspace_id: request.workspaceId, id: request.contactId }).whereNull('erased_at').first('id');
    if (!contact) throw new NotFoundError('contact not found');
    // The recipient's own history, over the same look-back days as the store-wide aggregates.
    const since = windowStartAt(now()) * DAY_MS;

    if (type === 'recently_viewed') {
      const views = await recentEvents(request, request.contactId, VIEW_EVENT, since);
      const keys = newestFirst(views.flatMap(({ properties, at }) => {
        const key = productIdOfProperties(properties);
        return key === null ? [] : [{ key, at }];
      }));
      return inKeyOrder(request, keys, request.limit);
    }
    if (type === 'added_to_cart') {
      const added = await recentEvents(request, request.contactId, CART_EVENT, since);
      const keys = newestFirst([
        ...added.flatMap(({ properties, at }) => productIdsOfEvent(properties).map((key) => ({ key, at }))),
        ...(await cartProducts(request, request.contactId, since)),
      ]);
      return inKeyOrder(request, keys, request.limit);
    }
    if (type === 'cart_or_order_items') return inKeyOrder(request, await ownProducts(request, request.contactId, since), request.limit);
    return mayAlsoLike(request, request.contactId, since);
  };
}
