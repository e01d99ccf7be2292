import type { Knex } from 'knex';
import type { Dialect } from '../db/dialect/dialect.js';
import type { Database, Reader } from '../db/database.js';
import { NotFoundError, ValidationError } from '../errors.js';
import type { Product } from '../products/product.schema.js';
import type { ProductService } from '../products/product-service.js';
import { uuidv7 } from '../shared/ids.js';
import { toPage, type Page, type Paging } from '../shared/paging.js';
import { parseInput } from '../shared/validate.js';
import { isPerRecipient, type FeedRanker, type RankedType } from '../recommendations/rankings.js';
import {
  boundsProblem,
  DEFAULT_SETTINGS,
  feedCreateSchema,
  feedGetQuerySchema,
  feedProductsQuerySchema,
  feedUpdateSchema,
  type Feed,
  type FeedSettings,
  type RecommendationType,
  type SortBy,
} from './feed.schema.js';
import { createFeedStore, toFeed, type FeedOrder, type FeedRow } from './feed-store.js';
import type { Db } from '../db/database.js';

export type { FeedOrder };

export interface FeedReply {
  feed: Feed;
  product_count: number;
  products?: Product[];
}

const round4 = (n: number | null) => (n === null ? null : Math.round(n * 1e4) / 1e4);

// ---- ordering ------------------------------------------------------------------------------------------

/** The plain ordering of a feed: its sort_by (the spec: used when there is no recommendation_type). */
export const plainOrder = (feed: FeedSettings): SortBy => (feed.recommendation_type === 'newest' ? 'newest' : feed.sort_by);

/** The catalog-only orderings of a type; behaviour types fall back to the plain ordering until ranked. */
export const catalogOrder = (feed: FeedSettings): FeedOrder => (feed.recommendation_type === 'random' ? 'random' : plainOrder(feed));

// ---- the service ---------------------------------------------------------------------------------------

export function createFeedService(deps: {
  knex: Knex;
  reader: Reader;
  writeTransaction: Database['writeTransaction'];
  dialect: Dialect;
  products: Pick<ProductService, 'recordsByIds'>;
  ranker?: FeedRanker;
}) {
  const { knex, reader, writeTransaction, products, ranker } = deps;
  const feeds = createFeedStore(deps.dialect);

  /** Management records of these products, in the order given. */
  async function toProducts(db: Db, workspaceId: string, ids: string[]): Promise<Product[]> {
    if (ids.length === 0) return [];
    const byId = new Map((await products.recordsByIds(db, workspaceId, ids)).map((p) => [p.id, p]));
    return ids.flatMap((id) => byId.get(id) ?? []);
  }

  /** The feed's matched products in `order` (default: the catalog ordering of its type), one page of them. */
  async function matchingProducts(
    workspaceId: string,
    feed: FeedSettings,
    options: { limit: number; offset?: number; order?: FeedOrder },
    db: Db = knex,
  ): Promise<Product[]> {
    const ids = await feeds.page(db, workspaceId, feed, { ...options, order: options.order ?? catalogOrder(feed) });
    return toProducts(db, workspaceId, ids);
  }

  const countMatching = (workspaceId: string, feed: FeedSettings, db: Db = knex): Promise<number> => feeds.count(db, workspaceId, feed);

  async function load(workspaceId: string, id: string, db: Db = knex): Promise<FeedRow> {
    const row = await feeds.findById(db, workspaceId, id);
    if (!row) throw new NotFoundError();
    return row;
  }

  /**
   * The feed with its product count and, with `preview`, its first products in plain order; `db` is the reader
   * for a plain read, the primary after a write (the reply shows the write).
   */
  async function reply(workspaceId: string, row: FeedRow, db: Db, preview?: number): Promise<FeedReply> {
    const result: FeedReply = { feed: toFeed(row), product_count: await countMatching(workspaceId, row, db) };
    if (preview !== undefined) result.products = await matchingProducts(workspaceId, row, { limit: preview, order: plainOrder(row) }, db);
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

    /**
   * The feed for one recipient, and whether every recipient gets the same products (a store-wide ranking or
   * the plain order, not `random`): what a send may read once for all its messages.
   */
  async function rankedFor(workspaceId: string, id: string, options: { contactId?: string | undefined; limit?: number | undefined }) {
    const db = reader();
    const row = await load(workspaceId, id, db);
    const count = options.limit ?? row.max_items;
    const type = row.recommendation_type;
    const sameForEveryone = type !== 'random' && !isPerRecipient(type);
    if (ranker && type !== '' && type !== 'newest' && type !== 'random') {
      const ranked = await ranker({
        db,
        workspaceId,
        type,
        contactId: options.contactId,
        limit: count,
        filtered: () => feeds.filtered(db, workspaceId, row),
        categories: row.categories,
      });
      if (ranked !== null) return { data: await toProducts(db, workspaceId, ranked.slice(0, count)), sameForEveryone };
    }
    return { data: await matchingProducts(workspaceId, row, { limit: count }, db), sameForEveryone };
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
      return reply(workspaceId, row, knex);
    },

    /** GET /api/v1/product-feeds: each feed with its product count. */
    async list(workspaceId: string, paging: Paging): Promise<Page<FeedReply>> {
      const db = reader();
      const { rows, total } = await feeds.list(db, workspaceId, paging);
      const data: FeedReply[] = [];
      for (const row of rows) data.push(await reply(workspaceId, row, db));
      return toPage(data, total, paging);
    },

    /** GET /api/v1/product-feeds/{id}; `preview=N` adds the first N products in plain order. */
    async get(workspaceId: string, id: string, query: unknown = {}): Promise<FeedReply> {
      const { preview } = parseInput(feedGetQuerySchema, query);
      const db = reader();
      return reply(workspaceId, await load(workspaceId, id, db), db, preview);
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
      return reply(workspaceId, row, knex);
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
      const { data } = await rankedFor(workspaceId, id, { contactId: contact_id, limit });
      return { data };
    },

    rankedFor,

    /**
     * One ranking over the whole catalog, without a saved feed or filters (a template block's fallback): at
     * most `limit` products; none when the type is not ranked (a per-recipient type without a recipient).
     */
    async rankType(workspaceId: string, type: RankedType, options: { contactId: string | null; limit: number }): Promise<Product[]> {
      if (!ranker) return [];
      const db = reader();
      const ranked = await ranker({
        db,
        workspaceId,
        type,
        contactId: options.contactId ?? undefined,
        limit: options.limit,
        filtered: () => feeds.filtered(db, workspaceId, DEFAULT_SETTINGS),
        categories: [],
      });
      return toProducts(db, workspaceId, (ranked ?? []).slice(0, options.limit));
    },
  };
}

export type FeedService = ReturnType<typeof createFeedService>;
