import type { Knex } from 'knex';
import { NEWEST_FIRST, selectPage } from '../db/page.js';
import type { Paging } from '../shared/paging.js';
import type { Dialect } from '../db/dialect/dialect.js';
import { toIso } from '../shared/time.js';
import type { Feed, FeedSettings, MetadataCondition, SortBy } from './feed.schema.js';
import type { Db } from '../db/database.js';

export interface FeedRow extends FeedSettings {
  id: string;
  workspace_id: string;
  name: string;
  created_at: number;
  updated_at: number;
}

/** How matched products are ordered: a plain sort, or a shuffle (`random`). */
export type FeedOrder = SortBy | 'random';

/** `LIKE` pattern of a substring, with the wildcards escaped (ESCAPE '\\'). */
const containing = (text: string) => `%${text.toLowerCase().replace(/[\\%_]/g, (c) => `\\${c}`)}%`;

export function createFeedStore(dialect: Dialect) {
  const nullableNumber = dialect.readNullableNumber;
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

  /** A variant that can be bought: as reported, else from its quantity. */
  const variantAvailable = (db: Db) => db.raw('(v.in_stock = ? OR (v.in_stock IS NULL AND v.stock_qty > 0))', [true]);

  /** The metadata condition as a where clause on `products as p`. `contains` is case-insensitive. */
  function whereMetadata(db: Db, query: Knex.QueryBuilder, workspaceId: string, condition: MetadataCondition): void {
    const value = condition.value ?? '';
    const rows = (sub: Knex.QueryBuilder) => {
      sub.from('product_metadata as m').where('m.key', condition.key);
      if (condition.operator === 'equals' || condition.operator === 'not_equals') sub.where('m.value', value);
      if (condition.operator === 'contains' || condition.operator === 'not_contains') {
        sub.whereRaw("m.value_folded LIKE ? ESCAPE '\\'", [containing(value)]);
      }
      return sub;
    };
    // A missing key satisfies not_equals and not_contains: they hold unless a matching row exists.
    if (condition.operator === 'not_exists' || condition.operator === 'not_equals' || condition.operator === 'not_contains') {
      query.whereNotExists(rows(db.select(db.raw('1'))).where('m.product_id', db.ref('p.id')));
    } else {
      query.whereIn('p.id', rows(db.select('m.product_id')).where('m.workspace_id', workspaceId));
    }
  }

  /** One variant matches every axis (its option is one of the accepted values) and, if asked, is available. */
  function whereVariant(db: Db, query: Knex.QueryBuilder, feed: FeedSettings): void {
    const axes = Object.entries(feed.variant_options);
    if (axes.length === 0 && !feed.variant_in_stock) return;
    if (axes.length === 0) {
      query.whereExists(db.select(db.raw('1')).from('product_variants as v').where('v.product_id', db.ref('p.id')).where(variantAvailable(db)));
      return;
    }
    const [[firstAxis, firstValues], ...others] = axes as [[string, string[]], ...Array<[string, string[]]>];
    const sub = db.select(db.raw('1')).from('product_variant_options as o0').where('o0.product_id', db.ref('p.id'));
    sub.where('o0.axis', firstAxis).whereIn('o0.value', firstValues);
    others.forEach(([axis, values], i) => {
      const o = `o${i + 1}`;
      sub.join(`product_variant_options as ${o}`, (on: Knex.JoinClause) => {
        on.on(`${o}.variant_id`, '=', 'o0.variant_id').andOnVal(`${o}.axis`, '=', axis).andOnIn(`${o}.value`, values);
      });
    });
    if (feed.variant_in_stock) sub.join('product_variants as v', 'v.id', 'o0.variant_id').where(variantAvailable(db));
    query.whereExists(sub);
  }

  /** Products having any / all of these categories. */
  const withCategories = (db: Db, workspaceId: string, categories: string[], op: 'any' | 'all') => {
    const sub = db('product_categories').where('workspace_id', workspaceId).whereIn('category', categories).select('product_id');
    return op === 'all' ? sub.groupBy('product_id').havingRaw('COUNT(*) = ?', [categories.length]) : sub;
  };

  /** The ORDER BY of each plain ordering; every one ends in the id so pages neither skip nor repeat rows. */
  function orderBy(query: Knex.QueryBuilder, order: FeedOrder): void {
    const newest = () => query.orderBy([{ column: 'p.created_at', order: 'desc' }, { column: 'p.id', order: 'desc' }]);
    switch (order) {
      case 'random':
        query.orderByRaw('random()');
        return;
      case 'newest':
        newest();
        return;
      case 'price_asc':
      case 'price_desc':
        // Products without a price go last in both directions.
        query.orderByRaw('(p.price IS NULL)').orderBy('p.price', order === 'price_asc' ? 'asc' : 'desc');
        newest();
        return;
      case 'title_asc':
        // title_key sorts as the collator would (product-filters.ts); equal keys fall back to the exact title.
        query.orderByRaw(dialect.bytewise('p.title_key')).orderByRaw(dialect.bytewise('p.title'));
        newest();
        return;
    }
  }

  /**
   * A query over `products as p` of the workspace with every filter of the feed applied, no columns selected
   * and no order: callers clone it, select, count, order or join to it.
   */
  function filtered(db: Db, workspaceId: string, feed: FeedSettings): Knex.QueryBuilder {
    const query = db({ p: 'products' }).where('p.workspace_id', workspaceId);
    if (feed.price_min !== null) query.where('p.price', '>=', feed.price_min);
    if (feed.price_max !== null) query.where('p.price', '<=', feed.price_max);
    // A bound excludes products of unknown quantity (null compares as unknown in SQL, so never passes).
    if (feed.stock_min !== null) query.where('p.stock_qty', '>=', feed.stock_min);
    if (feed.stock_max !== null) query.where('p.stock_qty', '<=', feed.stock_max);
    if (feed.stock_status === 'in_stock') query.where('p.in_stock', true);
    if (feed.stock_status === 'out_of_stock') query.where('p.in_stock', false);
    if (feed.source !== null) query.where('p.source', feed.source);
    const categories = [...new Set(feed.categories)];
    if (categories.length > 0) query.whereIn('p.id', withCategories(db, workspaceId, categories, feed.categories_op));
    const excluded = [...new Set(feed.exclude_categories)];
    if (excluded.length > 0) {
      // Left out when it has any / all of them: NOT EXISTS, which both databases run as an anti-join.
      const held = db
        .select(db.raw('1'))
        .from(withCategories(db, workspaceId, excluded, feed.exclude_categories_op).as('x'))
        .where('x.product_id', db.ref('p.id'));
      query.whereNotExists(held);
    }
    for (const condition of feed.metadata) whereMetadata(db, query, workspaceId, condition);
    whereVariant(db, query, feed);
    return query;
  }

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

    filtered,

    /** How many products the feed matches. */
    async count(db: Db, workspaceId: string, feed: FeedSettings): Promise<number> {
      const [row] = await filtered(db, workspaceId, feed).count({ total: '*' });
      return Number((row as { total: number | string }).total);
    },

    /** Ids of one page of the feed's products in `order`. */
    async page(db: Db, workspaceId: string, feed: FeedSettings, options: { order: FeedOrder; limit: number; offset?: number }): Promise<string[]> {
      const query = filtered(db, workspaceId, feed).select('p.id');
      orderBy(query, options.order);
      const rows: Array<{ id: string }> = await query.limit(options.limit).offset(options.offset ?? 0);
      return rows.map((r) => r.id);
    },
  };
}

export type FeedStore = ReturnType<typeof createFeedStore>;

/** The feed record of the management API. */
export function toFeed(row: FeedRow): Feed {
  const { workspace_id: _workspace, created_at, updated_at, ...rest } = row;
  return { ...rest, created_at: toIso(created_at)!, updated_at: toIso(updated_at)! };
}
