import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createServices, type Services } from '../src/domain/create-services.js';
import { openDatabase } from '../src/domain/db/database.js';
import type { Product } from '../src/domain/products/product.schema.js';
import { runEmk } from './helpers/cli.js';
import { createTestDatabase, DIALECTS, type TestDatabase } from './helpers/test-databases.js';

const FIXTURES = resolve(import.meta.dirname, '../fixtures');
const CSV_FIXTURE = join(FIXTURES, 'products.csv');
const JSONL_FIXTURE = join(FIXTURES, 'products.jsonl');

for (const dialect of DIALECTS) {
  describe(`emk products import [${dialect}]`, () => {
    let database: TestDatabase;
    let services: Services;
    let dir: string;

    beforeAll(async () => {
      database = await createTestDatabase(dialect);
      services = createServices(openDatabase(database.url));
      dir = mkdtempSync(join(tmpdir(), 'emk-products-'));
    });
    afterAll(async () => {
      await services.close();
      await database.drop();
      rmSync(dir, { recursive: true, force: true });
    });

    /** A workspace of its own per test, so the tests stay apart (made in this process: `emk init` has tests of its own). */
    async function workspace(): Promise<string> {
      return (await services.workspaces.bootstrap({ name: 'Shop', domain: 'shop.test' })).workspace.id;
    }

    async function importFile(workspaceId: string, file: string) {
      const result = await runEmk(['products', 'import', '--db', database.url, '--workspace', workspaceId, '--file', file, '--json']);
      expect(result.code, result.stderr).toBe(0);
      return JSON.parse(result.stdout);
    }

    async function catalog(workspaceId: string): Promise<Map<string, Product>> {
      const page = await services.products.list(workspaceId, {}, { page: 1, perPage: 500 });
      expect(page.meta.total).toBe(page.data.length);
      return new Map(page.data.map((p) => [p.external_id, p]));
    }

    function file(name: string, content: string): string {
      const path = join(dir, name);
      writeFileSync(path, content);
      return path;
    }

    it('imports the CSV sample with every column converted from text', async () => {
      const ws = await workspace();
      expect(await importFile(ws, CSV_FIXTURE)).toEqual({ rows: 3, inserted: 3, updated: 0, unchanged: 0, skipped: 0, errors: [], dry_run: false });
      const products = await catalog(ws);
      expect(products.get('SKU-1001')).toMatchObject({
        title: 'Linen Shirt',
        price: 49,
        currency: 'EUR',
        url: 'https://shop.example.com/p/linen-shirt',
        image_url: 'https://cdn.example.com/linen-shirt.jpg',
        in_stock: true,
        stock_qty: 12,
        categories: ['Shirts', 'Summer'],
        compare_at_price: 59,
        description: 'Breathable linen, relaxed fit.',
        product_type: 'Apparel',
        weight: 0.3,
        variants: [],
        metadata: { brand: 'Acme', material: 'linen' },
        platform: 'manual',
        source: 'manual',
      });
      const sneakers = products.get('SKU-1002')!;
      expect(sneakers).toMatchObject({ categories: ['Shoes', 'Sale'], price: 59.5, stock_qty: 3, in_stock: true, currency: 'USD' });
      expect(sneakers.variants.map((v) => [v.external_id, v.options, v.price])).toEqual([
        ['V-1002-40', { size: '40' }, 65],
        ['V-1002-41', { size: '41' }, 59.5],
      ]);
      expect(products.get('SKU-1003')).toMatchObject({ in_stock: true, categories: ['Gifts'], image_url: null });
      expect(products.get('SKU-1003')!.metadata).toEqual({});
    });

    it('re-running a CSV import updates, never duplicates', async () => {
      const ws = await workspace();
      await importFile(ws, CSV_FIXTURE);
      const before = await catalog(ws);
      expect(await importFile(ws, CSV_FIXTURE)).toEqual({ rows: 3, inserted: 0, updated: 0, unchanged: 3, skipped: 0, errors: [], dry_run: false });
      const changed = file(
        'changed.csv',
        readFileSync(CSV_FIXTURE, 'utf8').replace('SKU-1001,Linen Shirt,49.00', 'SKU-1001,Linen Shirt,45.00'),
      );
      expect(await importFile(ws, changed)).toEqual({ rows: 3, inserted: 0, updated: 1, unchanged: 2, skipped: 0, errors: [], dry_run: false });
      const after = await catalog(ws);
      expect(after.size).toBe(3);
      expect(after.get('SKU-1001')).toMatchObject({ id: before.get('SKU-1001')!.id, price: 45 });
    });

    it('imports the JSON Lines sample, and a re-run changes nothing', async () => {
      const ws = await workspace();
      expect(await importFile(ws, JSONL_FIXTURE)).toEqual({ rows: 3, inserted: 3, updated: 0, unchanged: 0, skipped: 0, errors: [], dry_run: false });
      const products = await catalog(ws);
      expect(products.get('SKU-2001')).toMatchObject({
        price: 19.9,
        currency: 'GBP',
        stock_qty: 40,
        categories: ['Hats', 'Winter'],
        metadata: { brand: 'Acme', care: 'hand wash' },
      });
      expect(products.get('SKU-2002')).toMatchObject({ price: 110, stock_qty: 7 });
      expect(products.get('SKU-2002')!.variants.map((v) => v.sku)).toEqual(['RJ-S', 'RJ-M']);
      expect(await importFile(ws, JSONL_FIXTURE)).toEqual({ rows: 3, inserted: 0, updated: 0, unchanged: 3, skipped: 0, errors: [], dry_run: false });
      expect((await catalog(ws)).size).toBe(3);
    });

    it('CSV metadata may be one JSON column and categories a JSON array', async () => {
      const ws = await workspace();
      const csv = file('json-columns.csv', 'external_id,title,categories,metadata\nj-1,Jug,"[""Kitchen"",""A|B""]","{""brand"":""Acme"",""size"":2}"\n');
      await importFile(ws, csv);
      expect((await catalog(ws)).get('j-1')).toMatchObject({ categories: ['Kitchen', 'A|B'], metadata: { brand: 'Acme', size: '2' } });
    });

    it('rows without an external_id get a generated one', async () => {
      const ws = await workspace();
      const jsonl = file('no-ids.jsonl', '{"title":"Sticker","price":2}\n{"title":"Poster","price":9}\n');
      expect(await importFile(ws, jsonl)).toMatchObject({ inserted: 2 });
      const ids = [...(await catalog(ws)).keys()];
      expect(ids).toHaveLength(2);
      for (const id of ids) expect(id).toMatch(/^man_[A-Za-z0-9]{20}$/);
    });

    it('bad rows are reported with their line and reason; the others are imported', async () => {
      const ws = await workspace();
      const csv = file(
        'bad.csv',
        ['external_id,title,price,stock_qty', 'ok-1,Good,5,1', 'bad-1,,5,1', 'bad-2,Priced,cheap,1', 'ok-2,Also good,6,', 'bad-3,Half,1,1.5'].join('\n'),
      );
      expect(await importFile(ws, csv)).toEqual({
        rows: 5,
        inserted: 2,
        updated: 0,
        unchanged: 0,
        skipped: 0,
        dry_run: false,
        errors: [
          // The file's lines: the header is line 1.
          { line: 3, error: 'title is required' },
          { line: 4, error: 'price must be a number (got string)' },
          { line: 6, error: expect.stringMatching(/^stock_qty /) },
        ],
      });
      expect([...(await catalog(ws)).keys()].sort()).toEqual(['ok-1', 'ok-2']);

      const jsonl = file('bad.jsonl', '{"external_id":"j-1","title":"Fine"}\n{not json\n[1]\n{"external_id":"j-2"}\n');
      expect(await importFile(ws, jsonl)).toEqual({
        rows: 4,
        inserted: 1,
        updated: 0,
        unchanged: 0,
        skipped: 0,
        dry_run: false,
        errors: [
          { line: 2, error: 'line is not valid JSON' },
          { line: 3, error: 'line is not a JSON object' },
          { line: 4, error: 'title is required' },
        ],
      });
    });

    it('a file of several chunks goes through in chunks of 1000, and a re-run finds every row unchanged', async () => {
      const ws = await workspace();
      const rows = Array.from({ length: 2500 }, (_, i) => `big-${i},Item ${i},${(i % 50) + 1},${i % 7},Cat${i % 3}|All`);
      const csv = file('big.csv', ['external_id,title,price,stock_qty,categories', ...rows].join('\n'));
      expect(await importFile(ws, csv)).toEqual({ rows: 2500, inserted: 2500, updated: 0, unchanged: 0, skipped: 0, errors: [], dry_run: false });
      expect(await importFile(ws, csv)).toEqual({ rows: 2500, inserted: 0, updated: 0, unchanged: 2500, skipped: 0, errors: [], dry_run: false });
      const total = await services.db.knex('products').where({ workspace_id: ws }).count({ n: '*' });
      expect(Number(total[0]!.n)).toBe(2500);
    });

    it('usage errors exit 2: no --file, a file of unknown format, a missing file', async () => {
      const ws = await workspace();
      const base = ['products', 'import', '--db', database.url, '--workspace', ws, '--json'];
      const noFile = await runEmk(base);
      expect(noFile.code).toBe(2);
      expect(noFile.stdout).toBe('');
      const wrongKind = await runEmk([...base, '--file', file('products.xlsx', 'x')]);
      expect(wrongKind.code).toBe(2);
      expect(wrongKind.stderr).toMatch(/\.csv or \.jsonl/);
      const missing = await runEmk([...base, '--file', join(dir, 'nowhere.csv')]);
      expect(missing.code).toBe(2);
      expect(missing.stderr).toMatch(/no such file/);
    });

    it('without --json it prints a one-line summary and the refused rows', async () => {
      const ws = await workspace();
      const csv = file('human.csv', 'external_id,title\nh-1,Hat\nh-2,\n');
      const result = await runEmk(['products', 'import', '--db', database.url, '--workspace', ws, '--file', csv]);
      expect(result.code, result.stderr).toBe(0);
      expect(result.stdout).toMatch(/^2 rows: 1 inserted, 0 updated, 0 unchanged, 1 refused\n  line 3: title is required\n$/);
    });
  });
}
