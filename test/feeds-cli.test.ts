import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openDatabase } from '../src/domain/db/database.js';
import { runEmk } from './helpers/cli.js';
import { createTestDatabase, DIALECTS, type TestDatabase } from './helpers/test-databases.js';

const FIXTURES = join(import.meta.dirname, '../fixtures');

/** fixtures/products.jsonl: Wool Beanie 19.9 [Hats, Winter], Rain Jacket 110 [Jackets], Sticker Pack 3.5 [Extras]. */
for (const dialect of DIALECTS) {
  describe(`emk feeds create|list|preview [${dialect}]`, () => {
    let database: TestDatabase;
    beforeAll(async () => {
      database = await createTestDatabase(dialect);
      const init = await runEmk(['init', '--db', database.url, '--json', '--name', 'Feeds', '--domain', 'feeds.test']);
      expect(init.code, init.stderr).toBe(0);
      const products = await runEmk(['products', 'import', '--db', database.url, '--file', join(FIXTURES, 'products.jsonl'), '--json']);
      expect(products.code, products.stderr).toBe(0);
    });
    afterAll(() => database.drop());

    const emk = async (args: string[]) => {
      const result = await runEmk([...args, '--db', database.url, '--json']);
      expect(result.code, result.stderr).toBe(0);
      return JSON.parse(result.stdout);
    };

    it('create: options mirror the feed fields; --json prints the API reply', async () => {
      const created = await emk([
        'feeds',
        'create',
        '--name',
        'Cheap hats and extras',
        '--recommendation-type',
        'newest',
        '--max-items',
        '5',
        '--categories',
        'Hats,Extras',
        '--price-max',
        '20',
        '--stock-status',
        'in_stock',
        '--metadata',
        '[{"key":"brand","operator":"not_equals","value":"Other"}]',
      ]);
      expect(created.feed).toMatchObject({
        name: 'Cheap hats and extras',
        recommendation_type: 'newest',
        max_items: 5,
        categories: ['Hats', 'Extras'],
        price_max: 20,
        stock_status: 'in_stock',
        sort_by: 'newest',
        metadata: [{ key: 'brand', operator: 'not_equals', value: 'Other' }],
      });
      expect(created.product_count).toBe(2);
    });

    it('create: variant options, sort and stock bounds', async () => {
      const created = await emk([
        'feeds',
        'create',
        '--name',
        'Navy M in stock',
        '--sort-by',
        'price_desc',
        '--stock-min',
        '1',
        '--variant-options',
        '{"size":["M"],"color":["Navy"]}',
        '--variant-in-stock',
      ]);
      expect(created.feed).toMatchObject({ sort_by: 'price_desc', stock_min: 1, variant_options: { size: ['M'], color: ['Navy'] }, variant_in_stock: true });
      expect(created.product_count).toBe(1);
    });

    it('list: every feed with its product count, human and --json', async () => {
      const listed = await emk(['feeds', 'list']);
      expect(listed.data.map((d: { feed: { name: string }; product_count: number }) => [d.feed.name, d.product_count])).toEqual([
        ['Navy M in stock', 1],
        ['Cheap hats and extras', 2],
      ]);
      expect(listed.meta.total).toBe(2);
      const human = await runEmk(['feeds', 'list', '--db', database.url]);
      expect(human.code).toBe(0);
      expect(human.stdout).toContain('Cheap hats and extras');
      expect(human.stdout).toContain('2 products');
    });

    it('preview: the feed and its first N products in plain order', async () => {
      const { feed } = await emk(['feeds', 'create', '--name', 'By price', '--sort-by', 'price_asc']);
      const preview = await emk(['feeds', 'preview', feed.id, '--n', '2']);
      expect(preview.product_count).toBe(3);
      expect(preview.products.map((p: { title: string }) => p.title)).toEqual(['Sticker Pack', 'Wool Beanie']);
      const fallback = await emk(['feeds', 'preview', feed.id]);
      expect(fallback.products).toHaveLength(3);
      const human = await runEmk(['feeds', 'preview', feed.id, '--db', database.url]);
      expect(human.code).toBe(0);
      expect(human.stdout.split('\n')[1]).toContain('Sticker Pack');
    });

    it('flag errors exit 2 naming the field; an unknown feed exits 1', async () => {
      for (const args of [
        ['feeds', 'create', '--name', 'x', '--max-items', '500'],
        ['feeds', 'create', '--name', 'x', '--max-items', 'ten'],
        ['feeds', 'create', '--name', 'x', '--recommendation-type', 'top'],
        ['feeds', 'create', '--name', 'x', '--price-min', '9', '--price-max', '1'],
        ['feeds', 'create', '--name', 'x', '--metadata', 'not json'],
        ['feeds', 'create'],
        ['feeds', 'preview'],
      ]) {
        const result = await runEmk([...args, '--db', database.url, '--json']);
        expect(result.code, args.join(' ')).toBe(2);
        expect(result.stdout).toBe('');
      }
      const bad = await runEmk(['feeds', 'create', '--name', 'x', '--max-items', '500', '--db', database.url]);
      expect(bad.stderr).toContain('max_items');
      const preview = await runEmk(['feeds', 'preview', 'nope', '--n', '0', '--db', database.url]);
      expect(preview.code).toBe(2);
      const missing = await runEmk(['feeds', 'preview', 'nope', '--db', database.url]);
      expect(missing.code).toBe(1);
      expect(missing.stderr).toContain('not found');
    });

    it('rebuild-activity recomputes the ranking aggregates from stored orders', async () => {
      const recent = new Date(Date.now() - 86_400_000).toISOString();
      const file = join(mkdtempSync(join(tmpdir(), 'emk-activity-')), 'orders.jsonl');
      writeFileSync(
        file,
        [
          { external_id: 'r1', items: [{ external_id: 'beanie', quantity: 2 }, { external_id: 'jacket', quantity: 1 }] },
          { external_id: 'r2', items: [{ external_id: 'beanie', quantity: 1 }] },
        ]
          .map((o) => JSON.stringify({ email: 'r@example.com', order_number: o.external_id, total_amount: 5, currency: 'EUR', status: 'paid', ordered_at: recent, ...o }))
          .join('\n'),
      );
      expect((await emk(['sync-orders', '--file', file])).inserted).toBe(2);
      // Aggregates lost (a restore of the orders alone), then rebuilt from the stored orders.
      const db = openDatabase(database.url);
      try {
        const kept = await db.knex('product_activity_totals').orderBy('product_key').select('product_key', 'units_sold');
        await db.knex('product_activity_totals').delete();
        await db.knex('product_activity_daily').delete();
        await db.knex('product_pairs_daily').delete();
        const rebuilt = await emk(['feeds', 'rebuild-activity']);
        expect(rebuilt).toEqual({ products: 2, since: new Date(Date.now() - 89 * 86_400_000).toISOString().slice(0, 10) });
        const totals = await db.knex('product_activity_totals').orderBy('product_key').select('product_key', 'units_sold');
        expect(totals.map((t) => [t.product_key, Number(t.units_sold)])).toEqual([
          ['beanie', 3],
          ['jacket', 1],
        ]);
        expect(totals).toEqual(kept);
        const pairs = await db.knex('product_pairs_daily').orderBy('product_key').select('product_key', 'other_key', 'orders');
        expect(pairs.map((p) => [p.product_key, p.other_key, Number(p.orders)])).toEqual([
          ['beanie', 'jacket', 1],
          ['jacket', 'beanie', 1],
        ]);
      } finally {
        await db.close();
      }
    });

    it('reindex-filters refills the filter tables of products stored without them (older databases)', async () => {
      const create = async () => (await emk(['feeds', 'create', '--name', 'Hats only', '--categories', 'Hats'])).product_count;
      expect(await create()).toBe(1);
      const db = openDatabase(database.url);
      try {
        await db.knex('product_categories').delete();
        expect(await create()).toBe(0);
        expect(await emk(['feeds', 'reindex-filters'])).toEqual({ products: 3 });
        expect(await create()).toBe(1);
      } finally {
        await db.close();
      }
    });
  });
}
