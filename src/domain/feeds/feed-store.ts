import type { Knex } from 'knex';
import { NEWEST_FIRST, selectPage } from '../db/page.js';
import type { Paging } from '../shared/paging.js';
import { chunk } from '../db/bulk.js';
import type { Dialect } from '../db/dialect/dialect.js';
import { toIso } from '../shared/time.js';
import type { Feed, FeedSettings, MetadataCondition } from './feed.schema.js';

type Db = Knex | Knex.Transaction;

export interface FeedRow extends FeedSettings {
  id: string;
  workspace_id: string;
  name: string;
  created_at: number;
  updated_at: number;
}

/** What filtering and plain sorting need of a product: no descriptions, no variants. */
export interface CandidateRow {
  id: string;
  external_id: string;
  title: string;
  price: number | null;
  in_stock: boolean | null;
  stock_qty: number | null;
  categories: string[];
  metadata: Record<string, string>;
  created_at: number;
}

export interface CandidateVariant {
  options: Record<string, string> | null;
  in_stock: boolean | null;
  stock_qty: number | null;
}

const IDS_PER_QUERY = 5_000;

export function createFeedStore(dialect: Dialect) {
  const nullableNumber = (value: unknown) => (value === null || value === undefined ? null : dialect.readNumber(value));
  const nullableBoolean = (value: unknown) => (value === null || value === undefined ? null : dialect.readBoolean(value));

  const fromRow = (raw: Record<string, unknown>): FeedRow => ({
    id: raw.id as string,
    workspace_id: raw.workspace_id as string,
    name: raw.name as string,
    recommendation_type: raw.recommendation_type as FeedRow['recommendation_type'],
    sort_by: raw.sort_by as FeedRow['sort_by'],
    max_items: dialect.readNumber(raw.max_items),
    categories: dialect.readJson<string[]>(raw.categories) ?? [],
    exclude_categories: dialect.readJson<string[]>(raw.exclude_categories) ?? [],
    categories_op: raw.categories_op as FeedRow['categories_op'],
    exclude_categories_op: raw.exclude_categories_op as FeedRow['exclude_categories_op'],
    price_min: nullableNumber(raw.price_min),
    price_max: nullableNumber(raw.price_max),
    stock_min: nullableNumber(raw.stock_min),
    stock_max: nullableNumber(raw.stock_max),
    stock_status: (raw.stock_status as FeedRow['stock_status']) ?? null,
    source: (raw.source as string | null) ?? null,
    metadata: dialect.readJson<MetadataCondition[]>(raw.metadata) ?? [],
    variant_options: dialect.readJson<Record<string, string[]>>(raw.variant_options) ?? {},
    variant_in_stock: dialect.readBoolean(raw.variant_in_stock),
    created_at: dialect.readNumber(raw.created_at),
    updated_at: dialect.readNumber(raw.updated_at),
  });

  const toDbRow = (row: FeedRow) => ({
    ...row,
    categories: dialect.writeJson(row.categories),
    exclude_categories: dialect.writeJson(row.exclude_categories),
    metadata: dialect.writeJson(row.metadata),
    variant_options: dialect.writeJson(row.variant_options),
  });

  const candidateFromRow = (raw: Record<string, unknown>): CandidateRow => ({
    id: raw.id as string,
    external_id: raw.external_id as string,
    title: raw.title as string,
    price: nullableNumber(raw.price),
    in_stock: nullableBoolean(raw.in_stock),
    stock_qty: nullableNumber(raw.stock_qty),
    categories: dialect.readJson<string[]>(raw.categories) ?? [],
    metadata: dialect.readJson<Record<string, string>>(raw.metadata) ?? {},
    created_at: dialect.readNumber(raw.created_at),
  });

  return {
    async insert(db: Db, row: FeedRow): Promise<void> {
      await db('product_feeds').insert(toDbRow(row));
    },

    async update(db: Db, row: FeedRow): Promise<void> {
      const { id, workspace_id, created_at: _created, ...changes } = toDbRow(row);
      await db('product_feeds').where({ id, workspace_id }).update(changes);
    },

    async delete(db: Db, workspaceId: string, id: string): Promise<number> {
      return db('product_feeds').where({ workspace_id: workspaceId, id }).delete();
    },

    async findById(db: Db, workspaceId: string, id: string): Promise<FeedRow | null> {
      const row = await db('product_feeds').where({ workspace_id: workspaceId, id }).first();
      return row ? fromRow(row) : null;
    },

    list: (db: Db, workspaceId: string, paging: Paging): Promise<{ rows: FeedRow[]; total: number }> =>
      selectPage(db('product_feeds').where({ workspace_id: workspaceId }), NEWEST_FIRST, paging, fromRow),

    /**
     * Products that pass the feed's column filters (price, stock, stock status, source), narrowed in SQL;
     * the JSON filters (categories, metadata, variants) are applied by the caller, alike on both databases.
     */
    async candidates(db: Db, workspaceId: string, feed: FeedSettings): Promise<CandidateRow[]> {
      const query = db('products')
        .where({ workspace_id: workspaceId })
        .select('id', 'external_id', 'title', 'price', 'in_stock', 'stock_qty', 'categories', 'metadata', 'created_at');
      if (feed.price_min !== null) query.where('price', '>=', feed.price_min);
      if (feed.price_max !== null) query.where('price', '<=', feed.price_max);
      // A bound excludes products of unknown quantity (null compares as unknown in SQL, so never passes).
      if (feed.stock_min !== null) query.where('stock_qty', '>=', feed.stock_min);
      if (feed.stock_max !== null) query.where('stock_qty', '<=', feed.stock_max);
      if (feed.stock_status === 'in_stock') query.where('in_stock', true);
      if (feed.stock_status === 'out_of_stock') query.where('in_stock', false);
      if (feed.source !== null) query.where('source', feed.source);
      return (await query).map(candidateFromRow);
    },

    /** The variants (options and stock only) of these products. */
    async variantsOf(db: Db, productIds: string[]): Promise<Map<string, CandidateVariant[]>> {
      const byProduct = new Map<string, CandidateVariant[]>();
      for (const part of chunk(productIds, IDS_PER_QUERY)) {
        const rows = await db('product_variants').whereIn('product_id', part).select('product_id', 'options', 'in_stock', 'stock_qty');
        for (const raw of rows) {
          const list = byProduct.get(raw.product_id) ?? [];
          list.push({
            options: raw.options === null || raw.options === undefined ? null : dialect.readJson<Record<string, string>>(raw.options),
            in_stock: nullableBoolean(raw.in_stock),
            stock_qty: nullableNumber(raw.stock_qty),
          });
          byProduct.set(raw.product_id, list);
        }
      }
      return byProduct;
    },
  };
}

export type FeedStore = ReturnType<typeof createFeedStore>;

/** The feed record of the management API. */
export function toFeed(row: FeedRow): Feed {
  const { workspace_id: _workspace, created_at, updated_at, ...rest } = row;
  return { ...rest, created_at: toIso(created_at)!, updated_at: toIso(updated_at)! };
}
