import type { Knex } from 'knex';
import { chunk, chunkSizeFor, insertRows } from '../db/bulk.js';
import type { Dialect } from '../db/dialect/dialect.js';
import { NEWEST_FIRST, selectPage } from '../db/page.js';
import type { Paging } from '../shared/paging.js';
import { toIso } from '../shared/time.js';
import { productFilterRows, titleKey, variantOptionRows } from './product-filters.js';
import type { Product, ProductFields, ProductListFilter, Variant } from './product.schema.js';
import type { Db } from '../db/database.js';

export interface ProductRow extends ProductFields {
  id: string;
  workspace_id: string;
  platform: string;
  source: string | null;
  /** The write named no currency: `currency` is the shop's, and follows it when the setting changes. */
  currency_defaulted: boolean;
  content_hash: string;
  synced_at: number;
  created_at: number;
}

export interface VariantRow extends Variant {
  id: string;
  product_id: string;
}

/** Columns an upsert rewrites on an existing row; identity and creation time stay. */
const MERGED_COLUMNS = [
  'title',
  'title_key',
  'price',
  'currency',
  'currency_defaulted',
  'url',
  'image_url',
  'in_stock',
  'stock_qty',
  'categories',
  'compare_at_price',
  'description',
  'product_type',
  'weight',
  'metadata',
  'source',
  'content_hash',
  'synced_at',
] as const;

// IN lists of ids: well under either database's bind limit.
const IDS_PER_QUERY = 5_000;
/** Products per batch when rebuilding a workspace's filter tables. */
const REINDEX_BATCH = 2_000;
/** The side tables of the feed filters (product-filters.ts), keyed by product_id. */
const FILTER_TABLES = ['product_categories', 'product_metadata', 'product_variant_options'] as const;

export function createProductStore(dialect: Dialect) {
  const nullableNumber = dialect.readNullableNumber;
  const nullableBoolean = (value: unknown) => (value === null || value === undefined ? null : dialect.readBoolean(value));

  const fromRow = (raw: Record<string, unknown>): ProductRow => ({
    ...(raw as unknown as ProductRow),
    price: nullableNumber(raw.price),
    in_stock: nullableBoolean(raw.in_stock),
    stock_qty: nullableNumber(raw.stock_qty),
    currency_defaulted: nullableBoolean(raw.currency_defaulted) === true,
    categories: dialect.readJson<string[]>(raw.categories) ?? [],
    compare_at_price: nullableNumber(raw.compare_at_price),
    weight: nullableNumber(raw.weight),
    metadata: dialect.readJson<Record<string, string>>(raw.metadata) ?? {},
  });

  const toDbRow = (row: ProductRow) => ({
    ...row,
    title_key: titleKey(row.title),
    categories: dialect.writeJson(row.categories),
    metadata: dialect.writeJson(row.metadata),
  });

  async function deleteByProduct(db: Db, tables: readonly string[], productIds: string[]): Promise<void> {
    for (const part of chunk(productIds, IDS_PER_QUERY)) {
      for (const table of tables) await db(table).whereIn('product_id', part).delete();
    }
  }

  /** The category and metadata rows of these products become what their columns say. */
  async function replaceFilterRows(
    db: Db,
    products: Array<Pick<ProductRow, 'id' | 'workspace_id' | 'categories' | 'metadata'>>,
  ): Promise<void> {
    await deleteByProduct(
      db,
      ['product_categories', 'product_metadata'],
      products.map((p) => p.id),
    );
    const rows = products.map(productFilterRows);
    await insertRows(db, dialect, 'product_categories', rows.flatMap((r) => r.categories));
    await insertRows(db, dialect, 'product_metadata', rows.flatMap((r) => r.metadata));
  }

  const writeVariantOptions = (db: Db, variants: Array<{ id: string; product_id: string; options: Record<string, string> | null }>) =>
    insertRows(db, dialect, 'product_variant_options', variantOptionRows(variants));

  const variantFromRow = (raw: Record<string, unknown>): VariantRow => ({
    id: raw.id as string,
    product_id: raw.product_id as string,
    external_id: (raw.external_id as string | null) ?? null,
    sku: (raw.sku as string | null) ?? null,
    title: (raw.title as string | null) ?? null,
    options: raw.options === null || raw.options === undefined ? null : dialect.readJson<Record<string, string>>(raw.options),
    price: nullableNumber(raw.price),
    compare_at_price: nullableNumber(raw.compare_at_price),
    in_stock: nullableBoolean(raw.in_stock),
    stock_qty: nullableNumber(raw.stock_qty),
    image_url: (raw.image_url as string | null) ?? null,
    url: (raw.url as string | null) ?? null,
    position: nullableNumber(raw.position),
  });

  const toVariant = ({ id: _id, product_id: _productId, ...variant }: VariantRow): Variant => variant;

  function toProduct(row: ProductRow, variants: Variant[]): Product {
    return {
      id: row.id,
      external_id: row.external_id,
      title: row.title,
      price: row.price,
      currency: row.currency,
      url: row.url,
      image_url: row.image_url,
      in_stock: row.in_stock,
      stock_qty: row.stock_qty,
      categories: row.categories,
      compare_at_price: row.compare_at_price,
      description: row.description,
      product_type: row.product_type,
      weight: row.weight,
      variants,
      metadata: row.metadata,
      platform: row.platform,
      source: row.source,
      synced_at: toIso(row.synced_at)!,
      created_at: toIso(row.created_at)!,
    };
  }

  async function variantsOf(db: Db, productIds: string[]): Promise<Map<string, Variant[]>> {
    const byProduct = new Map<string, Variant[]>();
    for (const part of chunk(productIds, IDS_PER_QUERY)) {
      const rows = await db('product_variants')
        .whereIn('product_id', part)
        .orderBy([{ column: 'product_id' }, { column: 'position' }, { column: 'id' }]);
      for (const raw of rows) {
        const variant = variantFromRow(raw);
        const list = byProduct.get(variant.product_id) ?? [];
        list.push(toVariant(variant));
        byProduct.set(variant.product_id, list);
      }
    }
    return byProduct;
  }

  return {
    /**
     * The stored products of these external ids on one platform, in one query per few thousand ids. With
     * `lock`, rows stay locked (PostgreSQL) until the transaction ends, taken in id order so concurrent
     * imports cannot deadlock.
     */
    async findByExternalIds(
      db: Db,
      workspaceId: string,
      platform: string,
      externalIds: string[],
      { lock }: { lock: boolean },
    ): Promise<ProductRow[]> {
      const rows: ProductRow[] = [];
      for (const part of chunk([...new Set(externalIds)].sort(), IDS_PER_QUERY)) {
        const query = db('products')
          .where({ workspace_id: workspaceId, platform })
          .whereIn('external_id', part)
          .orderBy('external_id');
        rows.push(...(await (lock ? dialect.forUpdate(query) : query)).map(fromRow));
      }
      return rows;
    },

    /**
     * Inserts new products and rewrites existing ones in multi-row `INSERT … ON CONFLICT DO UPDATE`
     * statements (rows in key order). Returns `external_id → id` of every row written, read back from the
     * database, so a row another writer created meanwhile is updated rather than duplicated.
     */
    async upsert(db: Db, rows: ProductRow[]): Promise<Map<string, string>> {
      const ids = new Map<string, string>();
      if (rows.length === 0) return ids;
      const sorted = [...rows].sort((a, b) => (a.external_id < b.external_id ? -1 : a.external_id > b.external_id ? 1 : 0));
      const dbRows = sorted.map(toDbRow);
      const updates: Record<string, Knex.Raw> = {};
      for (const column of MERGED_COLUMNS) updates[column] = db.raw('excluded.??', [column]);
      // The caller has applied the price rule against the row it read; this repeats it against the row as it
      // is now, for a product another writer created in between (two deliveries racing).
      updates.price = db.raw('CASE WHEN excluded.price > 0 THEN excluded.price ELSE COALESCE(products.price, excluded.price) END');
      for (const part of chunk(dbRows, chunkSizeFor(dialect, Object.keys(dbRows[0]!).length))) {
        const returned = await db('products')
          .insert(part)
          .onConflict(['workspace_id', 'platform', 'external_id'])
          .merge(updates)
          .returning(['id', 'external_id']);
        for (const r of returned as Array<{ id: string; external_id: string }>) ids.set(r.external_id, r.id);
      }
      await replaceFilterRows(
        db,
        sorted.map((row) => ({ ...row, id: ids.get(row.external_id)! })),
      );
      return ids;
    },

    /** The variants of these products become exactly `variants` (possibly none). */
    async replaceVariants(db: Db, productIds: string[], variants: VariantRow[]): Promise<void> {
      await deleteByProduct(db, ['product_variant_options', 'product_variants'], productIds);
      await insertRows(
        db,
        dialect,
        'product_variants',
        variants.map((v) => ({ ...v, options: v.options === null ? null : dialect.writeJson(v.options) })),
      );
      await writeVariantOptions(db, variants);
    },

    /** Removes a product, its variants and its filter rows; the number of products removed (0 or 1). */
    async deleteByExternalId(db: Db, workspaceId: string, platform: string, externalId: string): Promise<number> {
      const key = { workspace_id: workspaceId, platform, external_id: externalId };
      for (const table of [...FILTER_TABLES, 'product_variants']) {
        await db(table)
          .whereIn('product_id', db('products').where(key).select('id'))
          .delete();
      }
      return db('products').where(key).delete();
    },

    /**
     * Products whose writes named no currency take the shop's new one. A rare write (a settings change, the first
     * platform delivery): one statement over the workspace's products, by its index.
     */
    async adoptShopCurrency(db: Db, workspaceId: string, currency: string): Promise<number> {
      return db('products').where({ workspace_id: workspaceId, currency_defaulted: true }).whereNot({ currency }).update({ currency });
    },

    /** Gives a stored product another external id (keeping its row, variants and filter rows, keyed by its id). */
    async setExternalId(db: Db, id: string, externalId: string): Promise<void> {
      await db('products').where({ id }).update({ external_id: externalId });
    },

    /**
     * Removes every product of a source on a platform (a shop that is gone), with their variants and filter
     * rows; returns the external ids removed.
     */
    async deleteBySource(db: Db, workspaceId: string, platform: string, source: string): Promise<string[]> {
      const key = { workspace_id: workspaceId, platform, source };
      const removed = (await db('products').where(key).select('external_id')).map((row: { external_id: string }) => row.external_id);
      if (removed.length === 0) return removed;
      for (const table of [...FILTER_TABLES, 'product_variants']) {
        await db(table)
          .whereIn('product_id', db('products').where(key).select('id'))
          .delete();
      }
      await db('products').where(key).delete();
      return removed;
    },

    /**
     * Rebuilds the filter tables and title keys of a workspace from its products' columns, a batch of products
     * at a time (for products written by other means than this store, and the migration that adds them).
     */
    async reindexFilters(db: Db, workspaceId: string): Promise<number> {
      let reindexed = 0;
      for (let after = ''; ; ) {
        const rows = await db('products')
          .where({ workspace_id: workspaceId })
          .where('id', '>', after)
          .orderBy('id')
          .limit(REINDEX_BATCH)
          .select('id', 'workspace_id', 'title', 'categories', 'metadata');
        if (rows.length === 0) return reindexed;
        reindexed += rows.length;
        const products = rows.map((raw) => ({
          id: raw.id as string,
          workspace_id: raw.workspace_id as string,
          categories: dialect.readJson<string[]>(raw.categories) ?? [],
          metadata: dialect.readJson<Record<string, string>>(raw.metadata) ?? {},
        }));
        const ids = products.map((p) => p.id);
        await replaceFilterRows(db, products);
        await deleteByProduct(db, ['product_variant_options'], ids);
        await writeVariantOptions(db, (await db('product_variants').whereIn('product_id', ids)).map(variantFromRow));
        // One statement per batch: UPDATE … FROM (VALUES …) runs on both databases (columns column1, column2).
        const keys = rows.map((raw) => [raw.id as string, titleKey(raw.title as string)]);
        await db.raw(
          `UPDATE products SET title_key = v.column2 FROM (VALUES ${keys.map(() => '(?, ?)').join(', ')}) AS v WHERE products.id = v.column1`,
          keys.flat(),
        );
        after = ids[ids.length - 1]!;
      }
    },

    /** Rows of these ids in the workspace, in no particular order (missing ids are left out). */
    async findByIds(db: Db, workspaceId: string, ids: string[]): Promise<ProductRow[]> {
      const rows: ProductRow[] = [];
      for (const part of chunk([...new Set(ids)], IDS_PER_QUERY)) {
        // By primary key alone: SQLite without statistics would walk the workspace's index instead.
        const found = await db('products').whereIn('id', part);
        rows.push(...found.filter((row) => row.workspace_id === workspaceId).map(fromRow));
      }
      return rows;
    },

    async findById(db: Db, workspaceId: string, id: string): Promise<ProductRow | null> {
      const row = await db('products').where({ workspace_id: workspaceId, id }).first();
      return row ? fromRow(row) : null;
    },

    /** Management records for rows, with their variants in one query. */
    async toProducts(db: Db, rows: ProductRow[]): Promise<Product[]> {
      const variants = await variantsOf(
        db,
        rows.map((r) => r.id),
      );
      return rows.map((row) => toProduct(row, variants.get(row.id) ?? []));
    },

    async list(db: Db, workspaceId: string, filter: ProductListFilter, paging: Paging) {
      const base = db('products').where({ workspace_id: workspaceId });
      if (filter.platform) base.where({ platform: filter.platform });
      if (filter.external_id) base.where({ external_id: filter.external_id });
      if (filter.source) base.where({ source: filter.source });
      return selectPage(
        base,
        NEWEST_FIRST,
        paging,
        fromRow,
      );
    },
  };
}

export type ProductStore = ReturnType<typeof createProductStore>;
