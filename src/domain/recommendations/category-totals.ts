import { chunk } from '../db/bulk.js';
import type { Db } from '../db/database.js';
import type { Dialect } from '../db/dialect/dialect.js';
import { deferWrite } from '../db/deferred-writes.js';
import { MANUAL_PLATFORM } from '../products/product-service.js';

export type TotalsColumn = 'units_sold' | 'views' | 'score';

/** Product keys per statement: well under either database's bind limit. */
const KEYS_PER_STATEMENT = 1_000;

const placeholders = (values: unknown[]) => values.map(() => '?').join(', ');

/**
 * The totals of each category's ranked products (`product_category_totals`): one row per category of every
 * catalog product that is not manual, holding a copy of its product's running totals. A ranking restricted to
 * categories reads the top of these rows' index instead of walking the whole store's totals (issue 16, item 7).
 *
 * Two writers keep them: the activity write path copies its products' new totals after adding to them (the
 * rows exist already, so it only updates), and the catalog, when a product's categories change, adds and drops
 * rows. Where rows lock (PostgreSQL) the catalog first locks the products' totals rows, as the activity write
 * path does, so a row it adds copies totals that no uncommitted write is still changing.
 */
export function createCategoryTotals(dialect: Dialect) {
  /** `AND <column> IN (…)` over one chunk of keys, or nothing for the whole workspace. */
  const keyFilter = (column: string, keys: string[] | null) => (keys === null ? '' : ` AND ${column} IN (${placeholders(keys)})`);
  const chunks = (keys: string[] | null): Array<string[] | null> => (keys === null ? [null] : chunk([...new Set(keys)].sort(), KEYS_PER_STATEMENT));

  return {
    /**
     * Copies the products' totals, as this transaction has just written them, to their categories' rows (every
     * product of the workspace when `keys` is null: after the roll-over took expired days out). Held until the
     * transaction's next statement: an update whose result nobody reads. A product's rows are zero while it has
     * no totals row, and the roll-over copies before it deletes the totals rows that reached zero.
     */
    async copyTotals(trx: Db, workspaceId: string, keys: string[] | null): Promise<void> {
      for (const part of chunks(keys)) {
        // Planned once: PostgreSQL took far longer to plan this join every group than to run it
        // (docs/performance.md#eighth-pass-statistics-from-the-first-thousand-rows-the-outboxs-contact-index).
        const { sql, bindings } = dialect.plannedOnce('category_copy', {
          sql: `UPDATE product_category_totals SET units_sold = t.units_sold, views = t.views, score = t.score
             FROM product_activity_totals t
             WHERE product_category_totals.workspace_id = ?${keyFilter('product_category_totals.product_key', part)}
               AND t.workspace_id = product_category_totals.workspace_id AND t.product_key = product_category_totals.product_key
               AND (t.units_sold <> product_category_totals.units_sold OR t.views <> product_category_totals.views)`,
          bindings: [workspaceId, ...(part ?? [])],
        });
        await deferWrite(dialect, trx, trx.raw(sql, bindings));
      }
    },

    /**
     * The rows of these products (all the workspace's when `keys` is null) become what the catalog says: one per
     * category of each product with that key that is not manual, with the product's current totals.
     */
    async syncCatalog(trx: Db, workspaceId: string, keys: string[] | null): Promise<void> {
      for (const part of chunks(keys)) {
        const keyBindings = part ?? [];
        await dialect.lockRows(
          // The totals rows of these products, locked (created at zero when absent): a concurrent write that
          // adds to them waits for this transaction, or this one waits for it and copies what it committed.
          trx.raw(
            `INSERT INTO product_activity_totals (workspace_id, product_key, units_sold, views, score)
             SELECT DISTINCT workspace_id, external_id, 0, 0, 0 FROM products
             WHERE workspace_id = ? AND platform <> ?${keyFilter('external_id', part)}
             ORDER BY external_id
             ON CONFLICT (workspace_id, product_key) DO UPDATE SET units_sold = product_activity_totals.units_sold`,
            [workspaceId, MANUAL_PLATFORM, ...keyBindings],
          ),
        );
        await trx.raw(
          `DELETE FROM product_category_totals
           WHERE workspace_id = ?${keyFilter('product_key', part)}
             AND NOT EXISTS (
               SELECT 1 FROM products p JOIN product_categories c ON c.product_id = p.id
               WHERE p.workspace_id = product_category_totals.workspace_id AND p.external_id = product_category_totals.product_key
                 AND p.platform <> ? AND c.category = product_category_totals.category)`,
          [workspaceId, ...keyBindings, MANUAL_PLATFORM],
        );
        await trx.raw(
          `INSERT INTO product_category_totals (workspace_id, product_key, category, units_sold, views, score)
           SELECT DISTINCT p.workspace_id, p.external_id, c.category, COALESCE(t.units_sold, 0), COALESCE(t.views, 0), COALESCE(t.score, 0)
           FROM products p
           JOIN product_categories c ON c.product_id = p.id
           LEFT JOIN product_activity_totals t ON t.workspace_id = p.workspace_id AND t.product_key = p.external_id
           WHERE p.workspace_id = ? AND p.platform <> ?${keyFilter('p.external_id', part)}
           ON CONFLICT (workspace_id, product_key, category) DO NOTHING`,
          [workspaceId, MANUAL_PLATFORM, ...keyBindings],
        );
      }
    },

    /**
     * The top product keys (distinct) of these categories by `column`, above zero, in the totals' own order:
     * the column, then the key, both descending.
     */
    async top(db: Db, workspaceId: string, categories: string[], column: TotalsColumn, limit: number): Promise<string[]> {
      const query = db('product_category_totals')
        .where('workspace_id', workspaceId)
        .whereIn('category', categories)
        .where(column, '>', 0)
        .orderBy([
          { column, order: 'desc' },
          { column: 'product_key', order: 'desc' },
        ])
        .limit(limit);
      // A product in several of the categories has one row in each, all with the same totals.
      if (categories.length > 1) query.distinct('product_key', column);
      else query.select('product_key', column);
      return (await query).map((row: { product_key: string }) => row.product_key);
    },
  };
}

export type CategoryTotals = ReturnType<typeof createCategoryTotals>;
