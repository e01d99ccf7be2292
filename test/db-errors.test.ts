import type { Knex } from 'knex';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openDatabase, type Database } from '../src/domain/db/database.js';
import { postgresDialect } from '../src/domain/db/dialect/postgres.js';
import { sqliteDialect } from '../src/domain/db/dialect/sqlite.js';
import { domainErrorOf } from '../src/domain/db/driver-errors.js';
import { WriteBatcher } from '../src/domain/db/write-batcher.js';
import { ConflictError, EmkError, UnavailableError, ValidationError } from '../src/domain/errors.js';
import { takeRacedQueries } from './helpers/query-race-guard.js';
import { createTestDatabase, DIALECTS, type TestDatabase } from './helpers/test-databases.js';

/** Neither SQL nor the driver's words may reach a message a client reads. */
const DRIVER_TEXT = /insert|update|select|probe|sqlite|violates|duplicate|invalid byte|overflow|syntax|\bkey\b \(/i;

async function failureOf(promise: Promise<unknown>): Promise<unknown> {
  try {
    await promise;
  } catch (error) {
    return error;
  }
  throw new Error('expected a failure');
}

function expectDomainError<E extends EmkError>(error: unknown, type: new (...args: never[]) => E, status: number): E {
  expect(error).toBeInstanceOf(type);
  const domain = error as E;
  expect(domain.httpStatus).toBe(status);
  expect(domain.message).not.toMatch(DRIVER_TEXT);
  return domain;
}

/** A lock the next write needs, held by another connection until released. */
interface HeldLock {
  release(): Promise<void>;
}

for (const dialect of DIALECTS) {
  describe(`driver errors become domain errors [${dialect}]`, () => {
    let database: TestDatabase;
    let db: Database;
    let holderDb: Database;
    // Connections that give up on a lock after 50 ms; the retry's pauses are the test's own (no sleeping).
    let pauses: number[] = [];
    let onPause: () => Promise<void> = async () => {};
    let busyDb: Database;

    beforeAll(async () => {
      database = await createTestDatabase(dialect);
      db = openDatabase(database.url);
      holderDb = openDatabase(database.url);
      busyDb = openDatabase(database.url, {
        lockTimeoutMs: 50,
        retry: {
          pause: async (ms) => {
            pauses.push(ms);
            await onPause();
          },
        },
      });
      await db.knex.schema.createTable('probe', (t) => {
        t.increments('seq');
        t.string('name', 16).notNullable().unique();
        t.string('label', 8);
        t.decimal('amount', 14, 2);
        t.text('body');
        t.jsonb('data');
      });
      await db.knex('probe').insert({ name: 'locked' });
    });
    afterAll(async () => {
      await busyDb.close();
      await holderDb.close();
      await db.close();
      await database.drop();
    });

    /**
     * A write of another connection's open transaction: on SQLite it holds the database's write lock (its held
     * BEGIN IMMEDIATE is sent with the write), on PostgreSQL the row's lock.
     */
    async function holdLock(): Promise<HeldLock> {
      const trx: Knex.Transaction = await holderDb.knex.transaction();
      await trx('probe').where({ name: 'locked' }).update({ name: 'locked' });
      return {
        release: async () => {
          await trx.commit();
        },
      };
    }

    const touchLockedRow = (trx: Knex.Transaction) => trx('probe').where({ name: 'locked' }).update({ label: 'touched' });

    describe('a unique violation is a 409 ConflictError', () => {
      it('from writeTransaction', async () => {
        await db.writeTransaction((trx) => trx('probe').insert({ name: 'dup-1' }));
        const error = await failureOf(db.writeTransaction((trx) => trx('probe').insert({ name: 'dup-1' })));
        expectDomainError(error, ConflictError, 409);
      });

      it('from the group-commit writer: only the culprit fails, with the domain error', async () => {
        const writer = new WriteBatcher(db, { concurrency: db.dialect.writeConcurrency });
        const insert = async (trx: Knex.Transaction, names: string[]) => {
          await trx('probe').insert(names.map((name) => ({ name })));
          return names;
        };
        await writer.submit(insert, 'dup-2');
        const outcomes = await Promise.allSettled(['ok-1', 'dup-2', 'ok-2'].map((name) => writer.submit(insert, name)));
        expect(outcomes.map((o) => o.status)).toEqual(['fulfilled', 'rejected', 'fulfilled']);
        expectDomainError((outcomes[1] as PromiseRejectedResult).reason, ConflictError, 409);
      });

      it('from a unit of writer.run(), its neighbours committed', async () => {
        const writer = new WriteBatcher(db, { concurrency: db.dialect.writeConcurrency });
        const outcomes = await Promise.allSettled([
          writer.run((trx) => trx('probe').insert({ name: 'run-1' })),
          writer.run((trx) => trx('probe').insert({ name: 'run-1' })),
          writer.run((trx) => trx('probe').insert({ name: 'run-2' })),
        ]);
        expect(outcomes.map((o) => o.status)).toEqual(['fulfilled', 'rejected', 'fulfilled']);
        expectDomainError((outcomes[1] as PromiseRejectedResult).reason, ConflictError, 409);
      });
    });

    describe('a value the column cannot hold is a 400 ValidationError', () => {
      const invalid = async (row: Record<string, unknown>) =>
        expectDomainError(
          await failureOf(db.writeTransaction((trx) => trx('probe').insert({ name: `bad-${Math.random()}`.slice(0, 16), ...row }))),
          ValidationError,
          400,
        );

      if (dialect === 'postgres') {
        it('NUL in text, NUL in JSON, a number past the column, a string past its length', async () => {
          expect((await invalid({ body: 'a\u0000b' })).message).toBe(
            'invalid request: a value contains a character that cannot be stored (NUL or an invalid encoding)',
          );
          expect((await invalid({ data: JSON.stringify({ note: 'a\u0000b' }) })).message).toMatch(/NUL or an invalid encoding/);
          expect((await invalid({ amount: 1e14 })).message).toBe('invalid request: a value is out of the storable range');
          expect((await invalid({ label: 'x'.repeat(9) })).message).toBe('invalid request: a value is too long to be stored');
        });

        it('through the group-commit writer too', async () => {
          const writer = new WriteBatcher(db, { concurrency: db.dialect.writeConcurrency });
          const error = await failureOf(writer.run((trx) => trx('probe').insert({ name: 'nul-run', body: '\u0000' })));
          expectDomainError(error, ValidationError, 400);
        });
      } else {
        it('a non-integer into an integer key (SQLITE_MISMATCH)', async () => {
          expect((await invalid({ seq: 'not a number' })).message).toBe('invalid request: a value has a format that cannot be stored');
        });

        it('a text past the connection\'s length limit (SQLITE_TOOBIG)', async () => {
          const limited = openDatabase(database.url);
          try {
            // SQLite's own limit is 1 GB: lower it on this connection to meet it with a small value.
            const connection = (await limited.knex.client.acquireConnection()) as { configure(option: 'limit', id: number, value: number): void };
            connection.configure('limit', 0 /* SQLITE_LIMIT_LENGTH */, 1000);
            await limited.knex.client.releaseConnection(connection);
            const error = await failureOf(limited.writeTransaction((trx) => trx('probe').insert({ name: 'too-big', body: 'x'.repeat(2000) })));
            expect(expectDomainError(error, ValidationError, 400).message).toBe('invalid request: a value is too long to be stored');
          } finally {
            await limited.close();
          }
        });
      }
    });

    describe('a lock held elsewhere is retried, then a 503 UnavailableError', () => {
      it('writeTransaction runs the whole transaction again and succeeds once the lock is released', async () => {
        const lock = await holdLock();
        pauses = [];
        onPause = () => lock.release();
        let runs = 0;
        const result = await busyDb.writeTransaction(async (trx) => {
          runs++;
          await touchLockedRow(trx);
          return 'written';
        });
        expect(result).toBe('written');
        expect(pauses).toHaveLength(1);
        // The first attempt meets the lock at its write: SQLite's held BEGIN IMMEDIATE, sent with it, waits for
        // the write lock; PostgreSQL's update for the row's.
        expect(runs).toBe(2);
        expect(await db.knex('probe').where({ name: 'locked' }).first()).toMatchObject({ label: 'touched' });
      });

      it('writeTransaction gives up after its attempts with a 503 and Retry-After', async () => {
        const lock = await holdLock();
        pauses = [];
        onPause = async () => {};
        try {
          const error = expectDomainError(await failureOf(busyDb.writeTransaction(touchLockedRow)), UnavailableError, 503);
          expect(error.retryAfterSeconds).toBeGreaterThan(0);
          expect(pauses).toHaveLength(2);
        } finally {
          await lock.release();
        }
      });

      it('the group-commit writer retries the group whole and fails every caller alike, none singled out', async () => {
        const writer = new WriteBatcher(busyDb, { concurrency: 1 });
        const lock = await holdLock();
        pauses = [];
        onPause = async () => {};
        let handled = 0;
        const touch = async (trx: Knex.Transaction, labels: string[]) => {
          handled += labels.length;
          await touchLockedRow(trx);
          return labels;
        };
        try {
          const outcomes = await Promise.allSettled(['a', 'b', 'c'].map((label) => writer.submit(touch, label)));
          for (const outcome of outcomes) {
            expect(outcome.status).toBe('rejected');
            expectDomainError((outcome as PromiseRejectedResult).reason, UnavailableError, 503);
          }
          // One group (the three arrived in one turn of the event loop), three attempts; never split item by item.
          expect(pauses).toHaveLength(2);
          expect(handled).toBe(9);
        } finally {
          await lock.release();
        }
        expect(await writer.submit(touch, 'd')).toBe('d');
      });

      it('a unit of writer.run() that meets the lock is retried with its group, not failed alone', async () => {
        const writer = new WriteBatcher(busyDb, { concurrency: 1 });
        const lock = await holdLock();
        pauses = [];
        onPause = () => lock.release();
        await writer.run(touchLockedRow);
        expect(pauses).toHaveLength(1);
      });
    });

    it('anything else stays an unexpected error (a 500 with internals hidden)', async () => {
      const error = await failureOf(db.writeTransaction((trx) => trx.raw('select * from no_such_table')));
      expect(error).not.toBeInstanceOf(EmkError);
    });

    if (dialect === 'postgres') {
      it('bigint columns read as numbers on our connections, with no process-wide type parser', async () => {
        const { rows } = await db.knex.raw('select 9007199254740991::bigint as big');
        expect(rows[0].big).toBe(9007199254740991);
        expect(pg.types.getTypeParser(pg.types.builtins.INT8)('1')).toBe('1');
      });

      it('the test guard notices two statements racing on one connection', async () => {
        await db.knex.transaction((trx) => Promise.all([trx.raw('select 1'), trx.raw('select 2')]));
        expect(takeRacedQueries()).toHaveLength(1);
      });
    }
  });
}

describe('the translation of driver codes no test above provokes', () => {
  const driverError = (fields: Record<string, unknown>) => Object.assign(new Error('raw driver text: insert into "orders"'), fields);

  it('names the column when PostgreSQL says which', () => {
    const error = domainErrorOf(postgresDialect(''), driverError({ code: '22003', column: 'total_amount' }));
    expect(expectDomainError(error, ValidationError, 400).message).toBe('invalid request: total_amount is out of the storable range');
  });

  it('serialization failures and deadlocks are lock conflicts; SQLITE_LOCKED too', () => {
    for (const code of ['40001', '40P01', '55P03']) {
      expectDomainError(domainErrorOf(postgresDialect(''), driverError({ code })), UnavailableError, 503);
    }
    expectDomainError(domainErrorOf(sqliteDialect(''), driverError({ code: 'SQLITE_LOCKED' })), UnavailableError, 503);
  });

  it('other constraint failures stay unexpected', () => {
    const notNull = driverError({ code: 'SQLITE_CONSTRAINT', message: 'SQLITE_CONSTRAINT: NOT NULL constraint failed: probe.name' });
    expect(domainErrorOf(sqliteDialect(''), notNull)).toBe(notNull);
    const foreignKey = driverError({ code: '23503' });
    expect(domainErrorOf(postgresDialect(''), foreignKey)).toBe(foreignKey);
  });
});
