import { spawn } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { openDatabase } from '../src/domain/db/database.js';
import { EMK_BIN, runEmk } from './helpers/cli.js';
import { createTestDatabase, DIALECTS, type TestDatabase } from './helpers/test-databases.js';

const FIXTURES = join(import.meta.dirname, '../fixtures');

for (const dialect of DIALECTS) {
  describe(`emk events import|correct [${dialect}]`, () => {
    let database: TestDatabase;
    beforeAll(async () => {
      database = await createTestDatabase(dialect);
      const init = await runEmk(['init', '--db', database.url, '--json', '--name', 'Events', '--domain', 'events.test']);
      expect(init.code, init.stderr).toBe(0);
      // ann@ and bob@ become contacts through the orders sample.
      const orders = await runEmk(['sync-orders', '--db', database.url, '--file', join(FIXTURES, 'orders.csv'), '--json']);
      expect(orders.code, orders.stderr).toBe(0);
    });
    afterAll(() => database.drop());

    const withDb = async <T>(fn: (knex: ReturnType<typeof openDatabase>['knex']) => Promise<T>): Promise<T> => {
      const db = openDatabase(database.url);
      try {
        return await fn(db.knex);
      } finally {
        await db.close();
      }
    };
    const events = () =>
      withDb(async (knex) =>
        (
          await knex('events')
            .join('contacts', 'contacts.id', 'events.contact_id')
            .select('contacts.email_key', 'events.event_name', 'events.dedupe_key', 'events.source', 'events.created_at', 'events.properties')
            .orderBy(['events.dedupe_key', 'events.id'])
        ).map((e) => ({
          ...e,
          created_at: Number(e.created_at),
          properties: typeof e.properties === 'string' ? JSON.parse(e.properties) : e.properties,
        })),
      );
    const outboxCount = () => withDb(async (knex) => Number((await knex('trigger_outbox').where({ subject_type: 'event' }).count({ n: '*' }))[0]!.n));
    const contactCount = () => withDb(async (knex) => Number((await knex('contacts').count({ n: '*' }))[0]!.n));
    const emk = async (args: string[]) => {
      const result = await runEmk([...args, '--db', database.url, '--json']);
      expect(result.code, result.stderr).toBe(0);
      return JSON.parse(result.stdout);
    };

    it('imports the CSV sample (triggers fired); the JSON Lines sample holds the same events and is skipped', async () => {
      const first = await emk(['events', 'import', '--file', join(FIXTURES, 'events.csv')]);
      expect(first).toEqual({ rows: 3, processed: 3, skipped: 0, errors: [], backfill: false, interrupted: false });
      const stored = await events();
      expect(stored.map((e) => [e.email_key, e.event_name, e.dedupe_key, e.source, e.created_at])).toEqual([
        ['ann@example.com', 'paid_invoice', 'inv-7', 'billing', Date.parse('2026-09-03T12:00:00Z')],
        ['ann@example.com', 'Loyalty Joined', 'loyal-ann', 'crm', Date.parse('2026-09-01T10:00:00Z')],
        ['bob@example.com', 'viewed_product', 'view-bob-1', 'shop', Date.parse('2026-09-02T08:30:00Z')],
      ]);
      expect(stored[0]!.properties).toEqual({ invoice: 'inv-7', amount: 59.9, dedupe_key: 'inv-7' });
      expect(await outboxCount()).toBe(3);

      const again = await emk(['events', 'import', '--file', join(FIXTURES, 'events.jsonl')]);
      expect(again).toMatchObject({ rows: 3, processed: 0, skipped: 3, errors: [] });
      expect(await events()).toEqual(stored);
    });

    it('corrects with the sample; re-running the correction is idempotent and fires nothing', async () => {
      const outbox = await outboxCount();
      const first = await emk(['events', 'correct', '--file', join(FIXTURES, 'events-correct.csv')]);
      expect(first).toEqual({ rows: 2, updated: 2, inserted: 0, skipped: 0, errors: [], interrupted: false });
      const stored = await events();
      expect(stored[0]).toMatchObject({
        event_name: 'paid_invoice',
        source: 'billing-fixed',
        created_at: Date.parse('2026-09-03T12:05:00Z'),
        properties: { invoice: 'inv-7', note: 'amount corrected', dedupe_key: 'inv-7' },
      });
      expect(stored[2]).toMatchObject({ event_name: 'viewed_product', source: 'web', created_at: Date.parse('2026-09-02T08:30:00Z') });
      expect(stored[2]!.properties).toEqual({ product_id: 'mug-1', dedupe_key: 'view-bob-1' });

      const again = await emk(['events', 'correct', '--file', join(FIXTURES, 'events-correct.csv')]);
      expect(again).toMatchObject({ rows: 2, updated: 0, inserted: 0, skipped: 2 });
      expect(await events()).toEqual(stored);
      expect(await outboxCount()).toBe(outbox);
    });

    it('rejected rows are reported by line and written to --errors; no contact is created', async () => {
      const dir = inject('tmpDir');
      const file = join(dir, `bad-events-${dialect}.jsonl`);
      const errorsFile = join(dir, `bad-events-${dialect}.errors.csv`);
      writeFileSync(
        file,
        [
          JSON.stringify({ email: 'ann@example.com', event_name: 'ok_row' }),
          JSON.stringify({ email: 'stranger@example.com', event_name: 'nope' }),
          '{broken',
          JSON.stringify({ email: 'bob@example.com' }),
          JSON.stringify({ email: 'bob@example.com', event_name: 'bad, "time"', timestamp: 'soon' }),
        ].join('\n'),
      );
      const contacts = await contactCount();
      const summary = await emk(['events', 'import', '--file', file, '--errors', errorsFile]);
      expect(summary).toMatchObject({ rows: 5, processed: 1, skipped: 0 });
      expect(summary.errors).toEqual([
        { line: 2, error: 'contact not found' },
        { line: 3, error: 'line is not valid JSON' },
        { line: 4, error: 'invalid request: event_name is required' },
        { line: 5, error: expect.stringMatching(/^invalid request: timestamp/) },
      ]);
      const csv = readFileSync(errorsFile, 'utf8').trim().split('\n');
      expect(csv[0]).toBe('line,email,event_name,error');
      expect(csv[1]).toBe('2,stranger@example.com,nope,contact not found');
      expect(csv[2]).toBe('3,,,line is not valid JSON');
      expect(csv[3]).toBe('4,bob@example.com,,invalid request: event_name is required');
      expect(csv[4]).toMatch(/^5,bob@example.com,"bad, ""time""",/);
      expect(await contactCount()).toBe(contacts);
    });

    it('--backfill stores events without triggers; a large file goes through in chunks', async () => {
      const file = join(inject('tmpDir'), `history-${dialect}.csv`);
      const lines = ['email,event_name,timestamp,dedupe_key,properties.n'];
      for (let i = 0; i < 2500; i++) lines.push(`${i % 2 ? 'ann' : 'BOB'}@example.com,history,2025-01-01T00:00:00Z,h${i},${i}`);
      writeFileSync(file, `${lines.join('\n')}\n`);
      const outbox = await outboxCount();
      const summary = await emk(['events', 'import', '--file', file, '--backfill']);
      expect(summary).toEqual({ rows: 2500, processed: 2500, skipped: 0, errors: [], backfill: true, interrupted: false });
      expect(await outboxCount()).toBe(outbox);
      const stored = (await events()).filter((e) => e.event_name === 'history');
      expect(stored).toHaveLength(2500);
      expect(stored.find((e) => e.dedupe_key === 'h7')!.properties).toEqual({ dedupe_key: 'h7', n: '7' });
      // Re-running after a crash is safe: rows already stored are skipped through their dedupe_key.
      expect(await emk(['events', 'import', '--file', file, '--backfill'])).toMatchObject({ processed: 0, skipped: 2500 });
    });

    it.runIf(dialect === 'postgres')('an import that grows the events table by 10,000 rows leaves their statistics current', async () => {
      const file = join(inject('tmpDir'), `growth-${dialect}.csv`);
      const lines = ['email,event_name,dedupe_key'];
      for (let i = 0; i < 10_500; i++) lines.push(`ann@example.com,growth,g${i}`);
      writeFileSync(file, `${lines.join('\n')}\n`);
      const reltuples = () => withDb(async (knex) => Number((await knex.raw(`SELECT reltuples FROM pg_class WHERE oid = to_regclass('events')`)).rows[0].reltuples));
      // The test server may run without autovacuum: then only the import's own analysis updates them.
      const before = await reltuples();
      expect(await emk(['events', 'import', '--file', file, '--backfill'])).toMatchObject({ processed: 10_500 });
      // Analysed again whenever the table has grown by half: the statistics count at least two thirds of it, far
      // more than before the import.
      const rows = await withDb(async (knex) => Number((await knex('events').count({ n: '*' }))[0]!.n));
      expect(await reltuples()).toBeGreaterThanOrEqual(Math.max(rows / 1.5, Math.max(before, 0) + 5_000));
    });

    it('correct --upsert inserts unmatched rows; without it they are errors', async () => {
      const file = join(inject('tmpDir'), `upsert-${dialect}.csv`);
      writeFileSync(file, 'email,event_name,dedupe_key,source\nann@example.com,refund,r-1,pos\nghost@example.com,refund,r-2,pos\n');
      // Every row refused: the summary, then exit 1.
      const refused = await runEmk(['events', 'correct', '--file', file, '--db', database.url, '--json']);
      expect([refused.code, refused.stderr]).toEqual([1, 'emk: all 2 rows were refused\n']);
      const strict = JSON.parse(refused.stdout);
      expect(strict).toMatchObject({ rows: 2, updated: 0, inserted: 0 });
      expect(strict.errors).toEqual([
        { line: 2, error: 'no stored event matches email, event_name and dedupe_key' },
        { line: 3, error: 'contact not found' },
      ]);
      const outbox = await outboxCount();
      const upsert = await emk(['events', 'correct', '--file', file, '--upsert']);
      expect(upsert).toMatchObject({ rows: 2, updated: 0, inserted: 1, errors: [{ line: 3, error: 'contact not found' }] });
      expect(await outboxCount()).toBe(outbox);
      expect(await emk(['events', 'correct', '--file', file, '--upsert'])).toMatchObject({ inserted: 0, skipped: 1 });
    });

    it('Ctrl-C stops reading: chunks in flight commit, the summary says how far it got (exit 130)', async () => {
      const file = join(inject('tmpDir'), `interrupt-${dialect}.csv`);
      const lines = ['email,event_name,dedupe_key'];
      for (let i = 0; i < 300_000; i++) lines.push(`ann@example.com,interrupted,i${i}`);
      writeFileSync(file, `${lines.join('\n')}\n`);
      const child = spawn(process.execPath, [EMK_BIN, 'events', 'import', '--file', file, '--backfill', '--db', database.url, '--json']);
      let stdout = '';
      child.stdout.on('data', (d) => (stdout += d));
      const exited = new Promise<number | null>((done) => child.on('close', done));
      // Interrupted once its first chunk is committed (a fact, whatever the machine's speed): far from the end.
      await withDb(async (knex) => {
        const committed = async () => Number((await knex('events').where({ event_name: 'interrupted' }).count({ n: '*' }))[0]!.n);
        while ((await committed()) === 0) await new Promise((r) => setTimeout(r, 20));
      });
      child.kill('SIGINT');
      expect(await exited).toBe(130);
      const summary = JSON.parse(stdout);
      expect(summary.interrupted).toBe(true);
      expect(summary.rows).toBeGreaterThan(0);
      expect(summary.rows).toBeLessThan(300_000);
      expect(summary.rows % 1000).toBe(0);
      // Exactly the committed chunks are stored.
      expect((await events()).filter((e) => e.event_name === 'interrupted')).toHaveLength(summary.processed);
      expect(summary.processed).toBe(summary.rows);
    }, 60_000);

    it('a missing --file is a usage error; an unknown file or format fails without output', async () => {
      expect((await runEmk(['events', 'import', '--db', database.url])).code).toBe(2);
      expect((await runEmk(['events', 'correct', '--db', database.url])).code).toBe(2);
      const missing = await runEmk(['events', 'import', '--db', database.url, '--file', '/nonexistent/events.csv', '--json']);
      expect(missing.code).toBe(2);
      expect(missing.stdout).toBe('');
      expect((await runEmk(['events', 'import', '--db', database.url, '--file', 'events.txt', '--json'])).code).toBe(2);
    });
  });
}
