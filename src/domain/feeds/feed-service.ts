import type { Knex } from 'knex';
import type { Database } from '../db/database.js';
import { NotFoundError, ValidationError } from '../errors.js';
import type { Product } from '../products/product.schema.js';
import type { ProductStore } from '../products/product-store.js';
import { uuidv7 } from '../shared/ids.js';
import { toPage, type Page, type Paging } from '../shared/paging.js';
import { parseInput } from '../shared/validate.js';
import {
  boundsProblem,
  DEFAULT_SETTINGS,
  feedCreateSchema,
  feedGetQuerySchema,
  feedProductsQuerySchema,
  feedUpdateSchema,
  type Feed,
  type FeedSettings,
  type MetadataCondition,
  type SortBy,
} from './feed.schema.js';
import { toFeed, type CandidateRow, type CandidateVariant, type FeedRow, type FeedStore } from './feed-store.js';

type Db = Knex | Knex.Transaction;

/** How matched products are ordered: a plain sort, or a shuffle (`random`). */
export type FeedOrder = SortBy | 'random';

export interface FeedReply {
  feed: Feed;
  product_count: number;
  products?: Product[];
}

/**
 * Ranks a feed's matched products by customer behaviour (best selling, most viewed, per-recipient types).
 * Returns the ids of `matched` products in ranked order, or null when the type is not ranked by it (the plain
 * ordering applies). Not wired yet: a later session provides it; until then every type orders plainly.
 */
export type FeedRanker = (args: {
  db: Db;
  workspaceId: string;
  feed: FeedSettings;
  contactId: string | undefined;
  matched: CandidateRow[];
}) => Promise<string[] | null>;

const round4 = (n: number | null) => (n === null ? null : Math.round(n * 1e4) / 1e4);

// ---- filters -------------------------------------------------------------------------------------------

function matchesCategories(categories: string[], wanted: string[], op: 'any' | 'all'): boolean {
  const have = new Set(categories);
  return op === 'all' ? wanted.every((c) => have.has(c)) : wanted.some((c) => have.has(c));
}

/** One metadata condition against a product's metadata (text values). `contains` is case-insensitive. */
export function matchesMetadata(metadata: Record<string, string>, condition: MetadataCondition): boolean {
  const has = Object.prototype.hasOwnProperty.call(metadata, condition.key);
  const actual = has ? metadata[condition.key]! : null;
  const value = condition.value ?? '';
  switch (condition.operator) {
    case 'exists':
      return has;
    case 'not_exists':
      return !has;
    case 'equals':
      return actual === value;
    case 'not_equals':
      return actual !== value;
    case 'contains':
      return actual !== null && actual.toLowerCase().includes(value.toLowerCase());
    case 'not_contains':
      return actual === null || !actual.toLowerCase().includes(value.toLowerCase());
  }
}

/** Whether a variant can be bought: as reported, else from its quantity. */
const variantAvailable = (v: CandidateVariant) => v.in_stock ?? (v.stock_qty !== null && v.stock_qty > 0);

/** A variant matches when, on every axis of the filter, its option is one of the accepted values. */
function variantMatches(variant: CandidateVariant, axes: Array<[string, Set<string>]>, mustBeInStock: boolean): boolean {
  for (const [axis, accepted] of axes) {
    const value = variant.options?.[axis];
    if (value === undefined || !accepted.has(value)) return false;
  }
  return !mustBeInStock || variantAvailable(variant);
}

const needsVariants = (feed: FeedSettings) => feed.variant_in_stock || Object.keys(feed.variant_options).length > 0;

/** The JSON filters (categories, metadata) of one candidate, the column filters having been applied in SQL. */
function passesJsonFilters(product: CandidateRow, feed: FeedSettings): boolean {
  if (feed.categories.length > 0 && !matchesCategories(product.categories, feed.categories, feed.categories_op)) return false;
  if (feed.exclude_categories.length > 0 && matchesCategories(product.categories, feed.exclude_categories, feed.exclude_categories_op)) {
    return false;
  }
  return feed.metadata.every((condition) => matchesMetadata(product.metadata, condition));
}

// ---- ordering ------------------------------------------------------------------------------------------

const newestFirst = (a: CandidateRow, b: CandidateRow) => b.created_at - a.created_at || (a.id < b.id ? 1 : a.id > b.id ? -1 : 0);
const titleCollator = new Intl.Collator('en', { sensitivity: 'base', numeric: true });

/** Products without a price go last in both price orders. */
const byPrice = (direction: 1 | -1) => (a: CandidateRow, b: CandidateRow) => {
  if (a.price === null || b.price === null) return (a.price === null ? 1 : 0) - (b.price === null ? 1 : 0) || newestFirst(a, b);
  return direction * (a.price - b.price) || newestFirst(a, b);
};

const COMPARATORS: Record<SortBy, (a: CandidateRow, b: CandidateRow) => number> = {
  newest: newestFirst,
  price_asc: byPrice(1),
  price_desc: byPrice(-1),
  title_asc: (a, b) => titleCollator.compare(a.title, b.title) || (a.title < b.title ? -1 : a.title > b.title ? 1 : 0) || newestFirst(a, b),
};

function ordered(products: CandidateRow[], order: FeedOrder): CandidateRow[] {
  const list = [...products];
  if (order !== 'random') return list.sort(COMPARATORS[order]);
  for (let i = list.length - 1; i > 0; i--) {
    const j = Math.floor(Math.random() * (i + 1));
    [list[i], list[j]] = [list[j]!, list[i]!];
  }
  return list;
}

/** The plain ordering of a feed: its sort_by (the spec: used when there is no recommendation_type). */
export const plainOrder = (feed: FeedSettings): SortBy => (feed.recommendation_type === 'newest' ? 'newest' : feed.sort_by);

/** The catalog-only orderings of a type; behaviour types fall back to the plain ordering until ranked. */
export const catalogOrder = (feed: FeedSettings): FeedOrder => (feed.recommendation_type === 'random' ? 'random' : plainOrder(feed));

// ---- the service ---------------------------------------------------------------------------------------

export function createFeedService(deps: {
  knex: Knex;
  writeTransaction: Database['writeTransaction'];
  feeds: FeedStore;
  products: ProductStore;
  ranker?: FeedRanker;
}) {
  const { knex, writeTransaction, feeds, products, ranker } = deps;

  /** Every product the feed matches, unordered. */
  async function matched(db: Db, workspaceId: string, feed: FeedSettings): Promise<CandidateRow[]> {
    const candidates = (await feeds.candidates(db, workspaceId, feed)).filter((p) => passesJsonFilters(p, feed));
    if (!needsVariants(feed) || candidates.length === 0) return candidates;
    const variants = await feeds.variantsOf(
      db,
      candidates.map((p) => p.id),
    );
    const axes = Object.entries(feed.variant_options).map(([axis, values]): [string, Set<string>] => [axis, new Set(values)]);
    return candidates.filter((p) => (variants.get(p.id) ?? []).some((v) => variantMatches(v, axes, feed.variant_in_stock)));
  }

  /** Management records of these products, in the order given. */
  async function toProducts(db: Db, workspaceId: string, ids: string[]): Promise<Product[]> {
    if (ids.length === 0) return [];
    const rows = await products.findByIds(db, workspaceId, ids);
    const byId = new Map((await products.toProducts(db, rows)).map((p) => [p.id, p]));
    return ids.flatMap((id) => byId.get(id) ?? []);
  }

  /** The feed's matched products in `order` (default: the catalog ordering of its type), one page of them. */
  async function matchingProducts(
    workspaceId: string,
    feed: FeedSettings,
    options: { limit: number; offset?: number; order?: FeedOrder },
    db: Db = knex,
  ): Promise<Product[]> {
    const list = ordered(await matched(db, workspaceId, feed), options.order ?? catalogOrder(feed));
    const offset = options.offset ?? 0;
    return toProducts(
      db,
      workspaceId,
      list.slice(offset, offset + options.limit).map((p) => p.id),
    );
  }

  async function countMatching(workspaceId: string, feed: FeedSettings, db: Db = knex): Promise<number> {
    return (await matched(db, workspaceId, feed)).length;
  }

  async function load(workspaceId: string, id: string, db: Db = knex): Promise<FeedRow> {
    const row = await feeds.findById(db, workspaceId, id);
    if (!row) throw new NotFoundError();
    return row;
  }

  /** The feed with its product count and, with `preview`, its first products in plain order (one evaluation). */
  async function reply(workspaceId: string, row: FeedRow, preview?: number): Promise<FeedReply> {
    const list = await matched(knex, workspaceId, row);
    const result: FeedReply = { feed: toFeed(row), product_count: list.length };
    if (preview !== undefined) {
      const first = ordered(list, plainOrder(row)).slice(0, preview);
      result.products = await toProducts(
        knex,
        workspaceId,
        first.map((p) => p.id),
      );
    }
    return result;
  }

  /** Settings after applying a validated write to `base`; refused (nothing written) when the bounds cross. */
  function applyWrite(base: FeedSettings, input: Partial<FeedSettings>, clear: { stock_min?: boolean; stock_max?: boolean }): FeedSettings {
    const next: FeedSettings = { ...base };
    for (const key of Object.keys(DEFAULT_SETTINGS) as Array<keyof FeedSettings>) {
      if (input[key] !== undefined) (next as unknown as Record<string, unknown>)[key] = input[key];
    }
    next.price_min = round4(next.price_min);
    next.price_max = round4(next.price_max);
    if (clear.stock_min) next.stock_min = null;
    if (clear.stock_max) next.stock_max = null;
    const problem = boundsProblem(next);
    if (problem) throw new ValidationError(`invalid request: ${problem}`);
    return next;
  }

  return {
    matchingProducts,
    countMatching,

    /** POST /api/v1/product-feeds */
    async create(workspaceId: string, body: unknown): Promise<FeedReply> {
      const { name, ...input } = parseInput(feedCreateSchema, body);
      const settings = applyWrite(DEFAULT_SETTINGS, input, {});
      const now = Date.now();
      const row: FeedRow = { id: uuidv7(now), workspace_id: workspaceId, name, ...settings, created_at: now, updated_at: now };
      await writeTransaction((trx) => feeds.insert(trx, row));
      return reply(workspaceId, row);
    },

    /** GET /api/v1/product-feeds: each feed with its product count. */
    async list(workspaceId: string, paging: Paging): Promise<Page<FeedReply>> {
      const { rows, total } = await feeds.list(knex, workspaceId, paging);
      const data: FeedReply[] = [];
      for (const row of rows) data.push(await reply(workspaceId, row));
      return toPage(data, total, paging);
    },

    /** GET /api/v1/product-feeds/{id}; `preview=N` adds the first N products in plain order. */
    async get(workspaceId: string, id: string, query: unknown = {}): Promise<FeedReply> {
      const { preview } = parseInput(feedGetQuerySchema, query);
      return reply(workspaceId, await load(workspaceId, id), preview);
    },

    /** PUT /api/v1/product-feeds/{id}: only the fields sent change; a refused write changes nothing. */
    async update(workspaceId: string, id: string, body: unknown): Promise<FeedReply> {
      const { name, clear_stock_min, clear_stock_max, ...input } = parseInput(feedUpdateSchema, body);
      const row = await writeTransaction(async (trx) => {
        const before = await load(workspaceId, id, trx);
        const settings = applyWrite(before, input, { stock_min: clear_stock_min, stock_max: clear_stock_max });
        const next: FeedRow = {
          ...before,
          ...settings,
          name: name ?? before.name,
          updated_at: Math.max(Date.now(), before.updated_at),
        };
        await feeds.update(trx, next);
        return next;
      });
      return reply(workspaceId, row);
    },

    /** DELETE /api/v1/product-feeds/{id} */
    async delete(workspaceId: string, id: string): Promise<void> {
      const removed = await writeTransaction((trx) => feeds.delete(trx, workspaceId, id));
      if (removed === 0) throw new NotFoundError();
    },

    /**
     * GET /api/v1/product-feeds/{id}/products: the feed for one recipient, at most `limit` (default the
     * feed's max_items). Behaviour rankings plug in through `ranker`; without one (or when it does not rank
     * the type) the catalog ordering applies.
     */
    async productsFor(workspaceId: string, id: string, query: unknown = {}): Promise<{ data: Product[] }> {
      const { contact_id, limit } = parseInput(feedProductsQuerySchema, query);
      const row = await load(workspaceId, id);
      const count = limit ?? row.max_items;
      if (ranker && row.recommendation_type !== '' && row.recommendation_type !== 'newest' && row.recommendation_type !== 'random') {
        const all = await matched(knex, workspaceId, row);
        const ranked = await ranker({ db: knex, workspaceId, feed: row, contactId: contact_id, matched: all });
        if (ranked !== null) return { data: await toProducts(knex, workspaceId, ranked.slice(0, count)) };
      }
      return { data: await matchingProducts(workspaceId, row, { limit: count }) };
    },
  };
}

export type FeedService = ReturnType<typeof createFeedService>;
