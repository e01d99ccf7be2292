import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { openDatabase, type Database } from '../src/domain/db/database.js';
import { createTableGrowth } from '../src/domain/db/table-growth.js';
import { closeHarness, createHarness, type Harness } from './helpers/harness.js';
import { createTestDatabase, DIALECTS, type TestDatabase } from './helpers/test-databases.js';

for (const dialect of DIALECTS) {
  describe(`planner statistics kept in step with bulk loads [${dialect}]`, () => {
    let database: TestDatabase;
    let db: Database;
    let inserted = 0;

    beforeAll(async () => {
      database = await createTestDatabase(dialect);
      db = openDatabase(database.url);
      await db.knex.schema.createTable('growth_probe', (t) => {
        t.integer('n').primary();
      });
    });
    afterAll(async () => {
      await db.close();
      await database.drop();
    });

    /** Inserts `rows` rows and reports them, as a bulk writer does after its commit; returns the ANALYZEs sent meanwhile. */
    const load = async (growth: ReturnType<typeof createTableGrowth>, rows: number) => {
      const analyses: string[] = [];
      const onQuery = (query: { sql: string }) => void (/^ANALYZE/i.test(query.sql) && analyses.push(query.sql));
      db.knex.on('query', onQuery);
      try {
        for (let done = 0; done < rows; done += 1000) {
          const part = Math.min(1000, rows - done);
          await db.knex('growth_probe').insert(Array.from({ length: part }, (_, i) => ({ n: inserted + i })));
          inserted += part;
          growth.added('growth_probe', part);
        }
        await growth.settled();
      } finally {
        db.knex.removeListener('query', onQuery);
      }
      return analyses;
    };
    const analysedRows = async (table = 'growth_probe') =>
      Number((await db.knex.raw(`SELECT reltuples FROM pg_class WHERE oid = to_regclass(?)`, [table])).rows[0].reltuples);

    it('analyses a table once it has grown by 1,000 rows, then by half of what it held (PostgreSQL; never on SQLite)', async () => {
      const growth = createTableGrowth(db.knex, db.dialect);
      const postgres = dialect === 'postgres';
      // 900 rows: below the minimum growth, nothing is analysed.
      expect(await load(growth, 900)).toEqual([]);
      // The 1,000th row: analysed, and the statistics now count the rows.
      expect(await load(growth, 100)).toHaveLength(postgres ? 1 : 0);
      if (postgres) expect(await analysedRows()).toBe(1_000);
      // Analysed at 1,000 rows, the next analysis is due 1,000 rows later (half is only 500).
      expect(await load(growth, 900)).toEqual([]);
      expect(await load(growth, 100)).toHaveLength(postgres ? 1 : 0);
      if (postgres) expect(await analysedRows()).toBe(2_000);
      // At 2,000 the rule is half: 1,000 more again; at 3,000 it is 1,500.
      expect(await load(growth, 1_000)).toHaveLength(postgres ? 1 : 0);
      expect(await load(growth, 1_400)).toEqual([]);
      expect(await load(growth, 100)).toHaveLength(postgres ? 1 : 0);
      if (postgres) expect(await analysedRows()).toBe(4_500);
    });

    it('a table already large is not analysed by an ordinary load (PostgreSQL reads its size from the statistics)', async () => {
      if (dialect === 'postgres') await db.knex.raw('ANALYZE growth_probe');
      // A new writer (a new process) holding 4,500 analysed rows: 2,000 rows more are under half of them.
      const growth = createTableGrowth(db.knex, db.dialect);
      expect(await load(growth, 2_000)).toEqual([]);
      expect(await load(growth, 300)).toHaveLength(dialect === 'postgres' ? 1 : 0);
    });

    it.runIf(dialect === 'postgres')('rows reported while an analysis runs are analysed after it, with no further report', async () => {
      await db.knex.schema.createTable('growth_race', (t) => {
        t.integer('n').primary();
      });
      const growth = createTableGrowth(db.knex, db.dialect);
      const analyses: string[] = [];
      let analysing!: () => void;
      const analyseSent = new Promise<void>((resolve) => (analysing = resolve));
      const onQuery = (query: { sql: string }) => {
        if (!/^ANALYZE/i.test(query.sql)) return;
        analyses.push(query.sql);
        analysing();
      };
      db.knex.on('query', onQuery);
      const rows = (from: number) => Array.from({ length: 1000 }, (_, i) => ({ n: from + i }));
      try {
        // ANALYZE waits for this lock, so the second report surely arrives while the first analysis runs.
        await db.knex.transaction(async (trx) => {
          await trx.raw('LOCK TABLE growth_race IN SHARE UPDATE EXCLUSIVE MODE');
          await db.knex('growth_race').insert(rows(0));
          growth.added('growth_race', 1000);
          await analyseSent;
          await db.knex('growth_race').insert(rows(1000));
          growth.added('growth_race', 1000);
        });
        await growth.settled();
      } finally {
        db.knex.removeListener('query', onQuery);
      }
      // The load is over; its last 1,000 rows (half of what the first analysis may have counted) are analysed all the same.
      expect(analyses).toHaveLength(2);
      expect(await analysedRows('growth_race')).toBe(2_000);
    });
  });
}

describe.runIf(DIALECTS.includes('postgres'))('planner statistics follow live webhook orders [postgres]', () => {
  let harness: Harness;
  beforeAll(async () => {
    harness = await createHarness('postgres');
  });
  afterAll(async () => {
    if (harness) await closeHarness(harness);
  });

  it('10,500 webhook orders leave the statistics of orders and of the trigger outbox current', async () => {
    const { services } = harness;
    const ws = await harness.workspace();
    const reltuples = async (table: string) =>
      Number((await services.db.knex.raw(`SELECT reltuples FROM pg_class WHERE oid = to_regclass(?)`, [table])).rows[0].reltuples);
    // The test server may run without autovacuum: then only emk's own analyses update them.
    const before = { orders: Math.max(0, await reltuples('orders')), outbox: Math.max(0, await reltuples('trigger_outbox')) };
    const integration = await services.integrations.authenticateWebhook(ws.integrationId, 'website', `Bearer ${ws.integrationKey}`);
    const ORDERS = 10_500;
    let next = 0;
    await Promise.all(
      Array.from({ length: 50 }, async () => {
        for (let n = next++; n < ORDERS; n = next++) {
          const body = { event_type: 'order_placed', email: `growth-${n}@example.com`, order: { external_id: `growth-${n}`, total_amount: 10, currency: 'EUR' } };
          expect(await services.webhook.handle(integration, JSON.stringify(body))).toMatchObject({ status: 'processed' });
        }
      }),
    );
    // The analyses run behind the writes: wait for them, not for a time.
    await vi.waitFor(
      async () => {
        expect(await reltuples('orders')).toBeGreaterThanOrEqual(before.orders + 10_000);
        // Two facts an order: the new contact's and order_placed.
        expect(await reltuples('trigger_outbox')).toBeGreaterThanOrEqual(before.outbox + 10_000);
      },
      { timeout: 30_000, interval: 100 },
    );
  }, 120_000);
});
