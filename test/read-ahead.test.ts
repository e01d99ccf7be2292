import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { openDatabase, type Database } from '../src/domain/db/database.js';
import { deferWrite } from '../src/domain/db/deferred-writes.js';
import { ValidationError } from '../src/domain/errors.js';
import { createTestDatabase, type TestDatabase } from './helpers/test-databases.js';

/**
 * SQLite: a write transaction's first reads run ahead of its held BEGIN IMMEDIATE, and the BEGIN carries a
 * guard against another connection's commit in between (src/domain/db/dialect/sqlite-read-ahead.ts).
 */
describe('reads ahead of BEGIN [sqlite]', () => {
  let database: TestDatabase;
  /** The connection under test, and another process's stand-in: a second connection to the same file. */
  let db: Database;
  let other: Database;
  const pauses: number[] = [];

  beforeAll(async () => {
    database = await createTestDatabase('sqlite');
    db = openDatabase(database.url, { retry: { pause: async (ms) => void pauses.push(ms) } });
    other = openDatabase(database.url);
    await db.knex.schema.createTable('accounts', (t) => {
      t.string('name', 16).primary();
      t.integer('balance').notNullable();
    });
  });
  afterAll(async () => {
    await other.close();
    await db.close();
    await database.drop();
  });
  beforeEach(async () => {
    pauses.length = 0;
    await db.knex('accounts').delete();
    await db.knex('accounts').insert({ name: 'a', balance: 100 });
  });

  const balance = async () => (await db.knex('accounts').where({ name: 'a' }).first()).balance as number;

  /** Reads the balance, lets `between` run, then writes the balance read plus `amount`. */
  const addTo = (amount: number, between: (attempt: number) => Promise<void>) => {
    let attempts = 0;
    const done = db.writeTransaction(async (trx) => {
      attempts++;
      const { balance: read } = await trx('accounts').where({ name: 'a' }).first();
      await between(attempts);
      await trx('accounts').where({ name: 'a' }).update({ balance: read + amount });
    });
    return done.then(() => attempts);
  };

  it('a read and a held write cost two driver calls: the read, then BEGIN, the write and COMMIT in one script', async () => {
    // The connection's own last commit (the insert above) does not make its next reads stale.
    await db.writeTransaction((trx) => trx('accounts').where({ name: 'a' }).update({ balance: 100 }));
    const before = db.writeStats.driverCalls;
    await db.writeTransaction(async (trx) => {
      const { balance: read } = await trx('accounts').where({ name: 'a' }).first();
      await deferWrite(db.dialect, trx, trx('accounts').where({ name: 'a' }).update({ balance: read + 1 }));
    });
    expect(db.writeStats.driverCalls - before).toBe(2);
    expect(await balance()).toBe(101);
    expect(pauses).toEqual([]);
  });

  it("a transaction that fails after reading ahead fails with its own error, and leaves nothing behind", async () => {
    const failed = db.writeTransaction(async (trx) => {
      await trx('accounts').where({ name: 'a' }).first();
      await deferWrite(db.dialect, trx, trx('accounts').where({ name: 'a' }).update({ balance: 0 }));
      throw new ValidationError('invalid request: changed my mind');
    });
    await expect(failed).rejects.toThrow('changed my mind');
    expect(await balance()).toBe(100);
    // The connection is free and outside any transaction: the next one begins and commits.
    await db.writeTransaction((trx) => trx('accounts').insert({ name: 'b', balance: 1 }));
    expect(await db.knex('accounts').count({ n: '*' })).toEqual([{ n: 2 }]);
  });

  it("another connection's commit between the read and the write: the transaction runs again on a fresh read", async () => {
    const attempts = await addTo(1, async (attempt) => {
      if (attempt === 1) await other.knex('accounts').where({ name: 'a' }).update({ balance: 500 });
    });
    // Not 101 (the other commit lost) nor 501 counted twice: the second attempt read 500.
    expect(await balance()).toBe(501);
    expect(attempts).toBe(2);
    expect(pauses).toHaveLength(1);
  });

  it('for a while after such a conflict, reads wait for BEGIN: another write between read and write waits its turn', async () => {
    // Runs right after the conflict above (well within READ_INSIDE_AFTER_CONFLICT_MS).
    const before = db.writeStats.driverCalls;
    const otherBefore = other.writeStats.driverCalls;
    let otherWrite: Promise<unknown> = Promise.resolve();
    const attempts = await addTo(10, async () => {
      // Not awaited here: it waits for the write lock this transaction took with its BEGIN, before its read.
      otherWrite = other.knex('accounts').where({ name: 'a' }).increment('balance', 1000);
    });
    await otherWrite;
    // BEGIN, the read, the update, COMMIT: four calls, the BEGIN first; and the other connection's update.
    expect(db.writeStats.driverCalls - before).toBe(4);
    expect(other.writeStats.driverCalls - otherBefore).toBe(1);
    expect(attempts).toBe(1);
    expect(await balance()).toBe(100 + 10 + 1000);
  });

});
