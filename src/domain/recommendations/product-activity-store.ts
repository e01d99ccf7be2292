import type { Knex } from 'knex';
import { chunk, chunkSizeFor } from '../db/bulk.js';
import type { Dialect } from '../db/dialect/dialect.js';
import { deferWrite } from '../db/deferred-writes.js';
import { EVENT_PRODUCT_ID_FIELDS } from '../products/product-id.js';
import { DAY_MS, MAX_PAIRED_PRODUCTS, VIEWS_PER_SALE } from './activity-delta.js';
import { compositeKey } from '../shared/keys.js';
import type { Db } from '../db/database.js';
import { createCategoryTotals } from './category-totals.js';

export interface DailyChange {
  product_key: string;
  day: number;
  units_sold: number;
  views: number;
}

export interface PairChange {
  product_key: string;
  other_key: string;
  day: number;
  orders: number;
}

export interface TotalChange {
  product_key: string;
  units_sold: number;
  views: number;
}

/** SQL for a day column from an epoch-milliseconds column: integer division on both databases. */
const daySql = (column: string) => `(${column} / ${DAY_MS})`;

const SCORE_SQL = `units_sold * ${VIEWS_PER_SALE} + views`;

/** The product a view event names, in SQL: the first of the spellings that holds an id, as productIdOfProperties reads it. */
const viewKeySql = (dialect: Dialect) =>
  `COALESCE(${EVENT_PRODUCT_ID_FIELDS.map((field) => `NULLIF(TRIM(${dialect.jsonText('properties', field)}), '')`).join(', ')})`;

const AGGREGATE_TABLES = [
  'product_activity_daily',
  'product_activity_totals',
  'product_category_totals',
  'product_pairs_daily',
  'product_pair_totals',
] as const;

export function createProductActivityStore(dialect: Dialect) {
  const categories = createCategoryTotals(dialect);

  /**
   * Adds each row's counts to the stored row of its key (inserting it when absent), in key order (no deadlocks).
   * Additive upserts whose result nobody reads: held until the transaction's next statement.
   */
  async function addRows<T extends object>(
    db: Db,
    table: string,
    key: string[],
    counters: string[],
    rows: Array<T & { workspace_id: string }>,
    extra: Record<string, (db: Db) => Knex.Raw> = {},
  ): Promise<void> {
    if (rows.length === 0) return;
    const merge: Record<string, Knex.Raw> = {};
    for (const counter of counters) merge[counter] = db.raw('?? + excluded.??', [`${table}.${counter}`, counter]);
    for (const [column, sql] of Object.entries(extra)) merge[column] = sql(db);
    for (const part of chunk(rows, chunkSizeFor(dialect, Object.keys(rows[0]!).length))) {
      await deferWrite(dialect, db, db(table).insert(part).onConflict(key).merge(merge));
    }
  }

  return {
    /** The totals copied per category, for rankings restricted to categories. */
    categories,

    /**
     * The first day the workspace's totals hold, read under a shared lock (PostgreSQL) so the roll-over cannot
     * drop days while this transaction adds to them; created at `startDay` when the workspace has none yet.
     */
    async sharedWindowStart(trx: Knex.Transaction, workspaceId: string, startDay: number): Promise<number> {
      const read = () => dialect.forShare(trx('product_activity_windows').where({ workspace_id: workspaceId }).first('start_day'));
      let row = await read();
      if (!row) {
        await trx('product_activity_windows').insert({ workspace_id: workspaceId, start_day: startDay }).onConflict('workspace_id').ignore();
        row = await read();
      }
      return dialect.readNumber(row.start_day);
    },

    /** The window row, locked against every writer until the transaction ends; null when there is none. */
    async lockWindow(trx: Knex.Transaction, workspaceId: string): Promise<number | null> {
      const row = await dialect.forUpdate(trx('product_activity_windows').where({ workspace_id: workspaceId }).first('start_day'));
      return row ? dialect.readNumber(row.start_day) : null;
    },

    async setWindowStart(trx: Knex.Transaction, workspaceId: string, startDay: number): Promise<void> {
      await trx('product_activity_windows')
        .insert({ workspace_id: workspaceId, start_day: startDay })
        .onConflict('workspace_id')
        .merge({ start_day: startDay });
    },

    async windowStart(db: Db, workspaceId: string): Promise<number | null> {
      const row = await db('product_activity_windows').where({ workspace_id: workspaceId }).first('start_day');
      return row ? dialect.readNumber(row.start_day) : null;
    },

    async addDaily(trx: Knex.Transaction, workspaceId: string, rows: DailyChange[]): Promise<void> {
      const sorted = [...rows].sort((a, b) => (a.product_key < b.product_key ? -1 : a.product_key > b.product_key ? 1 : a.day - b.day));
      await addRows(
        trx,
        'product_activity_daily',
        ['workspace_id', 'product_key', 'day'],
        ['units_sold', 'views'],
        sorted.map((r) => ({ workspace_id: workspaceId, ...r })),
      );
    },

    async addTotals(trx: Knex.Transaction, workspaceId: string, rows: TotalChange[]): Promise<void> {
      const sorted = [...rows].sort((a, b) => (a.product_key < b.product_key ? -1 : a.product_key > b.product_key ? 1 : 0));
      await addRows(
        trx,
        'product_activity_totals',
        ['workspace_id', 'product_key'],
        ['units_sold', 'views'],
        sorted.map((r) => ({ workspace_id: workspaceId, ...r, score: r.units_sold * VIEWS_PER_SALE + r.views })),
        { score: (db) => db.raw('product_activity_totals.score + excluded.score') },
      );
      await categories.copyTotals(
        trx,
        workspaceId,
        sorted.map((r) => r.product_key),
      );
    },

    async addPairs(trx: Knex.Transaction, workspaceId: string, rows: PairChange[]): Promise<void> {
      const sorted = [...rows].sort(
        (a, b) =>
          (a.product_key < b.product_key ? -1 : a.product_key > b.product_key ? 1 : 0) ||
          (a.other_key < b.other_key ? -1 : a.other_key > b.other_key ? 1 : 0) ||
          a.day - b.day,
      );
      await addRows(
        trx,
        'product_pairs_daily',
        ['workspace_id', 'product_key', 'other_key', 'day'],
        ['orders'],
        sorted.map((r) => ({ workspace_id: workspaceId, ...r })),
      );
      const totals = new Map<string, { workspace_id: string; product_key: string; other_key: string; orders: number }>();
      for (const r of sorted) {
        const id = compositeKey(r.product_key, r.other_key);
        const total = totals.get(id) ?? { workspace_id: workspaceId, product_key: r.product_key, other_key: r.other_key, orders: 0 };
        total.orders += r.orders;
        totals.set(id, total);
      }
      await addRows(
        trx,
        'product_pair_totals',
        ['workspace_id', 'product_key', 'other_key'],
        ['orders'],
        [...totals.values()].filter((t) => t.orders !== 0),
      );
    },

    /** The products most often bought with `productKey` over the window, most orders first. */
    async partnersOf(db: Db, workspaceId: string, productKey: string, limit: number): Promise<Array<{ key: string; orders: number }>> {
      const rows: Array<{ other_key: string; orders: unknown }> = await db('product_pair_totals')
        .where({ workspace_id: workspaceId, product_key: productKey })
        .where('orders', '>', 0)
        .orderBy([
          { column: 'orders', order: 'desc' },
          { column: 'other_key', order: 'asc' },
        ])
        .limit(limit)
        .select('other_key', 'orders');
      return rows.map((row) => ({ key: row.other_key, orders: dialect.readNumber(row.orders) }));
    },

    /** Takes the days before `startDay` out of the totals and drops their daily rows (the window holds its lock). */
    async expireBefore(trx: Knex.Transaction, workspaceId: string, startDay: number): Promise<void> {
      await trx.raw(
        `UPDATE product_activity_totals
         SET units_sold = product_activity_totals.units_sold - expired.units_sold,
             views = product_activity_totals.views - expired.views,
             score = product_activity_totals.score - (expired.units_sold * ${VIEWS_PER_SALE} + expired.views)
         FROM (SELECT product_key, SUM(units_sold) AS units_sold, SUM(views) AS views
               FROM product_activity_daily WHERE workspace_id = ? AND day < ? GROUP BY product_key) AS expired
         WHERE product_activity_totals.workspace_id = ? AND product_activity_totals.product_key = expired.product_key`,
        [workspaceId, startDay, workspaceId],
      );
      await categories.copyTotals(trx, workspaceId, null);
      await trx.raw(
        `UPDATE product_pair_totals SET orders = product_pair_totals.orders - expired.orders
         FROM (SELECT product_key, other_key, SUM(orders) AS orders
               FROM product_pairs_daily WHERE workspace_id = ? AND day < ? GROUP BY product_key, other_key) AS expired
         WHERE product_pair_totals.workspace_id = ? AND product_pair_totals.product_key = expired.product_key
           AND product_pair_totals.other_key = expired.other_key`,
        [workspaceId, startDay, workspaceId],
      );
      await trx('product_pair_totals').where({ workspace_id: workspaceId, orders: 0 }).delete();
      await trx('product_activity_daily').where({ workspace_id: workspaceId }).where('day', '<', startDay).delete();
      await trx('product_pairs_daily').where({ workspace_id: workspaceId }).where('day', '<', startDay).delete();
      await trx('product_activity_totals').where({ workspace_id: workspaceId, units_sold: 0, views: 0 }).delete();
    },

    /** Contacts' product views per product and day, counted in SQL (what erasing the contacts takes out). */
    async viewsOf(db: Db, workspaceId: string, contactIds: string[], viewEvent: string): Promise<DailyChange[]> {
      const rows: Array<{ product_key: string; day: unknown; views: unknown }> = await db
        .select('product_key', 'day', db.raw('COUNT(*) AS views'))
        .from(
          db('events')
            .where({ workspace_id: workspaceId, event_name: viewEvent })
            .whereIn('contact_id', contactIds)
            .select(db.raw(`${viewKeySql(dialect)} AS product_key`), db.raw(`${daySql('created_at')} AS day`))
            .as('views'),
        )
        .whereNotNull('product_key')
        .whereRaw('LENGTH(product_key) <= 255')
        .groupBy('product_key', 'day');
      return rows.map((row) => ({ product_key: row.product_key, day: dialect.readNumber(row.day), units_sold: 0, views: dialect.readNumber(row.views) }));
    },

    /**
     * Recomputes every aggregate of the workspace from its stored orders and product-view events since
     * `startDay`, in SQL (no rows through the process). Same rules as the write path (activity-delta.ts):
     * cancelled orders count nothing; a view names its product by `product_id` or a legacy spelling.
     */
    /** Fresh planner statistics for the aggregate tables, after a rebuild replaced them wholesale. */
    analyze: (db: Knex) => dialect.analyzeAfterBulkLoad(db, [...AGGREGATE_TABLES]),

    async rebuild(trx: Knex.Transaction, workspaceId: string, startDay: number, viewEvent: string): Promise<number> {
      for (const table of AGGREGATE_TABLES) {
        await trx(table).where({ workspace_id: workspaceId }).delete();
      }
      const since = startDay * DAY_MS;
      await trx.raw(
        `INSERT INTO product_activity_daily (workspace_id, product_key, day, units_sold, views)
         SELECT ?, product_key, day, SUM(units_sold), SUM(views) FROM (
           SELECT oi.external_id AS product_key, ${daySql('oi.ordered_at')} AS day, oi.quantity AS units_sold, 0 AS views
           FROM order_items oi JOIN orders o ON o.id = oi.order_id
           WHERE oi.workspace_id = ? AND oi.ordered_at >= ? AND oi.external_id IS NOT NULL AND o.cancelled_at IS NULL
           UNION ALL
           SELECT product_key, day, 0, 1 FROM (
             SELECT ${viewKeySql(dialect)} AS product_key, ${daySql('created_at')} AS day
             FROM events WHERE workspace_id = ? AND event_name = ? AND created_at >= ?) AS views
           WHERE product_key IS NOT NULL AND LENGTH(product_key) <= 255
         ) AS activity
         GROUP BY product_key, day`,
        [workspaceId, workspaceId, since, workspaceId, viewEvent, since],
      );
      await trx.raw(
        `INSERT INTO product_activity_totals (workspace_id, product_key, units_sold, views, score)
         SELECT workspace_id, product_key, units_sold, views, ${SCORE_SQL} FROM (
           SELECT workspace_id, product_key, SUM(units_sold) AS units_sold, SUM(views) AS views
           FROM product_activity_daily WHERE workspace_id = ? GROUP BY workspace_id, product_key) AS sums`,
        [workspaceId],
      );
      await trx.raw(
        `INSERT INTO product_pairs_daily (workspace_id, product_key, other_key, day, orders)
         SELECT ?, a.external_id, b.external_id, ${daySql('a.ordered_at')}, COUNT(DISTINCT a.order_id)
         FROM order_items a
         JOIN order_items b ON b.order_id = a.order_id AND b.external_id <> a.external_id
         JOIN orders o ON o.id = a.order_id
         WHERE a.workspace_id = ? AND a.ordered_at >= ? AND o.cancelled_at IS NULL
           AND a.order_id NOT IN (
             SELECT order_id FROM order_items WHERE workspace_id = ? AND ordered_at >= ?
             GROUP BY order_id HAVING COUNT(DISTINCT external_id) > ${MAX_PAIRED_PRODUCTS})
         GROUP BY a.external_id, b.external_id, ${daySql('a.ordered_at')}`,
        [workspaceId, workspaceId, since, workspaceId, since],
      );
      await trx.raw(
        `INSERT INTO product_pair_totals (workspace_id, product_key, other_key, orders)
         SELECT workspace_id, product_key, other_key, SUM(orders) FROM product_pairs_daily
         WHERE workspace_id = ? GROUP BY workspace_id, product_key, other_key`,
        [workspaceId],
      );
      await categories.syncCatalog(trx, workspaceId, null);
      // Products with activity (the catalog's sync may have added zero rows to lock them).
      const [counted] = await trx('product_activity_totals')
        .where({ workspace_id: workspaceId })
        .whereRaw('NOT (units_sold = 0 AND views = 0)')
        .count({ n: '*' });
      return dialect.readNumber(counted?.n);
    },
  };
}

export type ProductActivityStore = ReturnType<typeof createProductActivityStore>;
