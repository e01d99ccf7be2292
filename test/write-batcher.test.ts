import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { openDatabase, type Database } from '../src/domain/db/database.js';
import { WriteBatcher, type BatchHandler } from '../src/domain/db/write-batcher.js';
import { ConflictError, ValidationError } from '../src/domain/errors.js';
import { createTestDatabase, DIALECTS, type TestDatabase } from './helpers/test-databases.js';

for (const dialect of DIALECTS) {
  describe(`group-commit writer [${dialect}]`, () => {
    let database: TestDatabase;
    let db: Database;
    let transactions = 0;

    beforeAll(async () => {
      database = await createTestDatabase(dialect);
      db = openDatabase(database.url);
      await db.knex.schema.createTable('batch_probe', (t) => {
        t.string('value', 64).primary();
      });
    });
    afterAll(async () => {
      await db.close();
      await database.drop();
    });

    const insertProbe: BatchHandler<string, string> = async (trx, values) => {
      transactions++;
      await trx('batch_probe').insert(values.map((value) => ({ value })));
      return values.map((value) => `stored:${value}`);
    };

    it('commits the writes of concurrent callers in a few transactions, answering each in order', async () => {
      const concurrency = db.dialect.writeConcurrency;
      const writer = new WriteBatcher(db, { concurrency });
      transactions = 0;
      const results = await Promise.all(Array.from({ length: 300 }, (_, i) => writer.submit(insertProbe, `a${i}`)));
      expect(results).toEqual(Array.from({ length: 300 }, (_, i) => `stored:a${i}`));
      // All arrived in one turn of the event loop: the flush starts on the next macrotask, so they share one commit.
      expect(transactions).toBe(1);
      expect(await db.knex('batch_probe').where('value', 'like', 'a%')).toHaveLength(300);
    });

    it('never runs more transactions at once than its concurrency', async () => {
      const writer = new WriteBatcher(db, { concurrency: 2 });
      const expected = dialect === 'sqlite' ? 1 : 2;
      let running = 0;
      let most = 0;
      // Every transaction waits until as many run as allowed: the limit is surely reached, and one more would show.
      let full!: () => void;
      const reached = new Promise<void>((r) => (full = r));
      const slow: BatchHandler<string, string> = async (trx, values) => {
        most = Math.max(most, ++running);
        if (running >= expected) full();
        await reached;
        await trx('batch_probe').insert(values.map((value) => ({ value })));
        running--;
        return values;
      };
      // The first flush takes what arrived in its turn; a backlog arriving while it runs starts the second.
      const first = writer.submit(slow, 'first-m');
      await new Promise((resolve) => setImmediate(resolve));
      await Promise.all([first, ...Array.from({ length: 40 }, (_, i) => writer.submit(slow, `m${i}`))]);
      expect(most).toBe(expected);
      expect(await db.knex('batch_probe').where('value', 'like', 'm%')).toHaveLength(40);
    });

    it('a second transaction does not start for a lone item while the first runs: it joins the next group', async () => {
      const writer = new WriteBatcher(db, { concurrency: 2 });
      const groups: string[][] = [];
      let release!: () => void;
      const held = new Promise<void>((r) => (release = r));
      let started!: () => void;
      const firstStarted = new Promise<void>((r) => (started = r));
      const record: BatchHandler<string, string> = async (trx, values) => {
        groups.push(values);
        if (values.includes('l-first')) {
          started();
          await held;
        }
        await trx('batch_probe').insert(values.map((value) => ({ value })));
        return values;
      };
      const first = writer.submit(record, 'l-first');
      await firstStarted;
      const lone = [writer.submit(record, 'l-1'), writer.submit(record, 'l-2')];
      // A turn later the two are still queued behind the running flush, on both databases.
      await new Promise((resolve) => setImmediate(resolve));
      expect(groups).toEqual([['l-first']]);
      release();
      await Promise.all([first, ...lone]);
      expect(groups).toEqual([['l-first'], ['l-1', 'l-2']]);
    });

    it("starts the next group before the committed group's callers resume: the database works while they are answered", async () => {
      const writer = new WriteBatcher(db, { concurrency: 1 });
      const started: string[] = [];
      let release!: () => void;
      const held = new Promise<void>((r) => (release = r));
      let signal!: () => void;
      const firstStarted = new Promise<void>((r) => (signal = r));
      const record: BatchHandler<string, string> = async (trx, values) => {
        started.push(...values);
        if (values.includes('n-first')) {
          signal();
          await held;
        }
        await trx('batch_probe').insert(values.map((value) => ({ value })));
        return values;
      };
      // What had started when the first caller resumed.
      const first = writer.submit(record, 'n-first').then(() => [...started]);
      await firstStarted;
      const next = writer.submit(record, 'n-next');
      release();
      expect(await first).toEqual(['n-first', 'n-next']);
      await next;
      expect(await db.knex('batch_probe').whereIn('value', ['n-first', 'n-next'])).toHaveLength(2);
    });

    it('a batch of many rows is a group by itself, and runs beside a running one at once where there are two writers', async () => {
      const writer = new WriteBatcher(db, { concurrency: 2 });
      const started: string[] = [];
      let release!: () => void;
      const held = new Promise<void>((r) => (release = r));
      let firstStarted!: () => void;
      const firstRunning = new Promise<void>((r) => (firstStarted = r));
      const chunk = (name: string) => async (trx: Parameters<BatchHandler<string, string>>[0]) => {
        started.push(name);
        if (name === 'chunk-1') {
          firstStarted();
          await held;
        }
        await trx('batch_probe').insert(Array.from({ length: 3 }, (_, i) => ({ value: `bulk-${name}-${i}` })));
        return name;
      };
      const first = writer.run(chunk('chunk-1'), 1000);
      await firstRunning;
      const second = writer.run(chunk('chunk-2'), 1000);
      // A lone request would wait for the running commit (above); a 1000-row chunk does not, where a second
      // connection exists (PostgreSQL; SQLite's one connection takes it once the first commits).
      if (dialect === 'postgres') await vi.waitFor(() => expect(started).toEqual(['chunk-1', 'chunk-2']));
      release();
      expect(await Promise.all([first, second])).toEqual(['chunk-1', 'chunk-2']);
      // Two chunks submitted together still commit in two groups (a group takes 1000 rows' worth).
      const third = writer.run(chunk('chunk-3'), 600);
      const fourth = writer.run(chunk('chunk-4'), 600);
      await Promise.all([third, fourth]);
      expect(writer.groupCommitStats.groups).toBe(4);
      // A single writer has nothing to run beside: it commits both in one group, as it does small items.
      const single = new WriteBatcher(db, { concurrency: 1 });
      await Promise.all([single.run(chunk('chunk-5'), 600), single.run(chunk('chunk-6'), 600)]);
      expect(single.groupCommitStats.groups).toBe(1);
    });

    it('is under pressure while groups carry a backlog, not while writes trickle in one at a time', async () => {
      const writer = new WriteBatcher(db, { concurrency: 1 });
      for (let i = 0; i < 16; i++) await writer.submit(insertProbe, `p-trickle-${i}`);
      expect(writer.underPressure()).toBe(false);
      for (let round = 0; round < 16; round++) {
        await Promise.all(Array.from({ length: 10 }, (_, i) => writer.submit(insertProbe, `p-burst-${round}-${i}`)));
      }
      expect(writer.underPressure()).toBe(true);
    });

    it('answers only after the commit: the row is readable from another connection when the promise resolves', async () => {
      const writer = new WriteBatcher(db, { concurrency: db.dialect.writeConcurrency });
      await writer.submit(insertProbe, 'durable-1');
      const other = openDatabase(database.url);
      try {
        expect(await other.knex('batch_probe').where({ value: 'durable-1' })).toHaveLength(1);
      } finally {
        await other.close();
      }
    });

    it('a failing item fails alone; the rest of its group is committed', async () => {
      const writer = new WriteBatcher(db, { concurrency: db.dialect.writeConcurrency });
      await writer.submit(insertProbe, 'dup');
      const outcomes = await Promise.allSettled(['b1', 'dup', 'b2', 'b3'].map((v) => writer.submit(insertProbe, v)));
      expect(outcomes.map((o) => o.status)).toEqual(['fulfilled', 'rejected', 'fulfilled', 'fulfilled']);
      expect((outcomes[1] as PromiseRejectedResult).reason).toBeInstanceOf(ConflictError);
      const stored = await db.knex('batch_probe').whereIn('value', ['b1', 'b2', 'b3']);
      expect(stored).toHaveLength(3);
    });

    it('run(): a unit that throws is undone alone (savepoint), its neighbours commit', async () => {
      const writer = new WriteBatcher(db, { concurrency: db.dialect.writeConcurrency });
      const outcomes = await Promise.allSettled([
        writer.run((trx) => trx('batch_probe').insert({ value: 'u1' })),
        writer.run(async (trx) => {
          await trx('batch_probe').insert({ value: 'u-undone' });
          throw new ValidationError('invalid request: nope');
        }),
        writer.run((trx) => trx('batch_probe').insert({ value: 'u2' })),
      ]);
      expect(outcomes.map((o) => o.status)).toEqual(['fulfilled', 'rejected', 'fulfilled']);
      expect((outcomes[1] as PromiseRejectedResult).reason).toBeInstanceOf(ValidationError);
      const values = (await db.knex('batch_probe').whereIn('value', ['u1', 'u2', 'u-undone'])).map((r) => r.value).sort();
      expect(values).toEqual(['u1', 'u2']);
    });

    it('drain() waits for everything submitted', async () => {
      const writer = new WriteBatcher(db, { concurrency: db.dialect.writeConcurrency });
      const pending = Array.from({ length: 50 }, (_, i) => writer.submit(insertProbe, `c${i}`));
      await writer.drain();
      expect(await db.knex('batch_probe').where('value', 'like', 'c%')).toHaveLength(50);
      await Promise.all(pending);
    });
  });
}
