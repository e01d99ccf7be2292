import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { openDatabase } from '../src/domain/db/database.js';
import { runEmk } from './helpers/cli.js';
import { createTestDatabase, DIALECTS, type TestDatabase } from './helpers/test-databases.js';

const FIXTURES = join(import.meta.dirname, '../fixtures');

for (const dialect of DIALECTS) {
  describe(`emk sync-orders [${dialect}]`, () => {
    let database: TestDatabase;
    beforeAll(async () => {
      database = await createTestDatabase(dialect);
      const init = await runEmk(['init', '--db', database.url, '--json', '--name', 'Sync', '--domain', 'sync.test']);
      expect(init.code, init.stderr).toBe(0);
    });
    afterAll(() => database.drop());

    const totals = async () => {
      const db = openDatabase(database.url);
      try {
        const orders = await db.knex('orders').select('external_id', 'total_amount', 'ordered_at').orderBy('external_id');
        const contacts = await db.knex('contacts').select('email_key', 'lifetime_revenue', 'orders_count').orderBy('email_key');
        const items = await db.knex('order_items').count({ n: '*' });
        return {
          orders: orders.map((o) => [o.external_id, Number(o.total_amount), Number(o.ordered_at)]),
          contacts: contacts.map((c) => [c.email_key, Number(c.lifetime_revenue), Number(c.orders_count)]),
          items: Number(items[0]!.n),
        };
      } finally {
        await db.close();
      }
    };

    it('the sample CSV syncs with the API’s counts; re-running it never double counts', async () => {
      const first = await runEmk(['sync-orders', '--db', database.url, '--file', join(FIXTURES, 'orders.csv'), '--json']);
      expect(first.code, first.stderr).toBe(0);
      expect(JSON.parse(first.stdout)).toEqual({ rows: 3, inserted: 3, updated: 0, skipped: 0, errors: [], dry_run: false });
      const after = await totals();
      expect(after.orders).toEqual([
        ['1001', 59.9, Date.parse('2026-09-01T10:15:00Z')],
        ['1002', 18, Date.parse('2026-09-02T08:00:00Z')],
        ['1003', 120, Date.parse('2026-09-03T16:30:00Z')],
      ]);
      expect(after.contacts).toEqual([
        ['ann@example.com', 179.9, 2],
        ['bob@example.com', 18, 1],
      ]);
      expect(after.items).toBe(3);

      const again = await runEmk(['sync-orders', '--db', database.url, '--file', join(FIXTURES, 'orders.csv'), '--json']);
      expect(JSON.parse(again.stdout)).toMatchObject({ inserted: 0, updated: 0, skipped: 3 });
      expect(await totals()).toEqual(after);
    });

    it('the JSON Lines sample holds the same orders: syncing it after the CSV changes nothing', async () => {
      const result = await runEmk(['sync-orders', '--db', database.url, '--file', join(FIXTURES, 'orders.jsonl'), '--json']);
      expect(result.code, result.stderr).toBe(0);
      expect(JSON.parse(result.stdout)).toMatchObject({ rows: 3, inserted: 0, updated: 0, skipped: 3 });
    });

    it('bad rows are reported with their line and reason; --dry-run writes nothing', async () => {
      const file = join(inject('tmpDir'), `bad-orders-${dialect}.jsonl`);
      writeFileSync(
        file,
        [
          JSON.stringify({ email: 'new@example.com', external_id: 'n1', order_number: 'n1', total_amount: 5, currency: 'EUR', ordered_at: '2026-09-05T00:00:00Z' }),
          '{broken',
          JSON.stringify({ email: 'new@example.com', external_id: 'n2', order_number: 'n2', total_amount: 5, currency: 'EUR', ordered_at: 'tomorrow' }),
        ].join('\n'),
      );
      const before = await totals();
      const dry = await runEmk(['sync-orders', '--db', database.url, '--file', file, '--dry-run', '--json']);
      expect(dry.code, dry.stderr).toBe(0);
      const summary = JSON.parse(dry.stdout);
      // A dry run counts what a real run would write now, and writes nothing.
      expect(summary).toMatchObject({ rows: 3, inserted: 1, updated: 0, dry_run: true });
      expect(summary.errors.map((e: { line: number }) => e.line)).toEqual([2, 3]);
      expect(summary.errors[1].error).toMatch(/ordered_at/);
      expect(await totals()).toEqual(before);

      const real = JSON.parse((await runEmk(['sync-orders', '--db', database.url, '--file', file, '--json'])).stdout);
      expect(real).toMatchObject({ rows: 3, inserted: 1 });
      expect(real.errors).toHaveLength(2);
    });

    it('no --file, or a file that does not exist, is a usage error (exit 2) like the other imports', async () => {
      expect((await runEmk(['sync-orders', '--db', database.url])).code).toBe(2);
      const missing = await runEmk(['sync-orders', '--db', database.url, '--file', '/nonexistent/orders.csv', '--json']);
      expect(missing.code).toBe(2);
      expect(missing.stderr).toBe('emk: no such file: /nonexistent/orders.csv\n');
      expect(missing.stdout).toBe('');
    });
  });
}
