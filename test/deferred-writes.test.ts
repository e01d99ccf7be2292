import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { insertRows } from '../src/domain/db/bulk.js';
import { openDatabase, type Database } from '../src/domain/db/database.js';
import { deferWrite } from '../src/domain/db/deferred-writes.js';
import { WriteBatcher, type BatchHandler } from '../src/domain/db/write-batcher.js';
import { ConflictError, ValidationError } from '../src/domain/errors.js';
import { createTestDatabase, DIALECTS, type TestDatabase } from './helpers/test-databases.js';

/** Values whose literal forms are easy to get wrong: quotes, backslashes, comment and placeholder look-alikes. */
const AWKWARD_TEXT = [
  "it's",
  "''",
  'back\\slash',
  "\\'; DROP TABLE held_probe; --",
  'what? ?? \\?',
  'tab\tnew\nline\r',
  'ünïcödé – 東京 😀',
  '$1 $$ E\'x\'',
  '',
  '-- not a comment',
  '/* nor this */',
];
const AWKWARD_NUMBERS = [0, -1, -0.5, 24.9, 1e21, -1e-7, 2 ** 53 - 1, -(2 ** 40), 1_700_000_000_123];

/** insertRows with its statements held (the form the write path uses). */
const holdRows = (...args: [Parameters<typeof insertRows>[0], Parameters<typeof insertRows>[1], string, Record<string, unknown>[]]) =>
  insertRows(...args, { hold: true });

for (const dialect of DIALECTS) {
  describe(`held writes [${dialect}]`, () => {
    let database: TestDatabase;
    let db: Database;

    beforeAll(async () => {
      database = await createTestDatabase(dialect);
      db = openDatabase(database.url);
      await db.knex.schema.createTable('held_probe', (t) => {
        t.string('id', 64).primary();
        t.text('label');
        t.double('amount');
        t.bigInteger('at');
        t.boolean('flag');
      });
    });
    afterAll(async () => {
      await db.close();
      await database.drop();
    });

    const rows = (prefix: string) => [
      ...AWKWARD_TEXT.map((label, i) => ({ id: `${prefix}t${i}`, label, amount: null, at: null, flag: i % 2 === 0 })),
      ...AWKWARD_NUMBERS.map((amount, i) => ({ id: `${prefix}n${i}`, label: null, amount, at: Number.isSafeInteger(amount) ? amount : null, flag: null })),
    ];
    const read = async (prefix: string) =>
      (await db.knex('held_probe').where('id', 'like', `${prefix}%`).orderBy('id')).map((r) => ({
        ...r,
        amount: r.amount === null ? null : Number(r.amount),
        at: r.at === null ? null : Number(r.at),
        flag: r.flag === null ? null : db.dialect.readBoolean(r.flag),
      }));

    it('stores every value exactly as the same insert with bindings does', async () => {
      await db.writeTransaction((trx) => holdRows(trx, db.dialect, 'held_probe', rows('h-')));
      await db.knex('held_probe').insert(rows('b-'));
      const held = await read('h-');
      const bound = await read('b-');
      expect(held).toHaveLength(AWKWARD_TEXT.length + AWKWARD_NUMBERS.length);
      expect(held.map((r) => ({ ...r, id: r.id.slice(2) }))).toEqual(bound.map((r) => ({ ...r, id: r.id.slice(2) })));
      expect(held.find((r) => r.id === 'h-t3')!.label).toBe("\\'; DROP TABLE held_probe; --");
    });

    it('a held write travels with the COMMIT: one driver call for the writes and the commit', async () => {
      const before = { ...db.writeStats };
      await db.writeTransaction(async (trx) => {
        await holdRows(trx, db.dialect, 'held_probe', [{ id: 'c-1', label: 'one', amount: 1, at: 1, flag: true }]);
        await deferWrite(db.dialect, trx, trx('held_probe').insert({ id: 'c-2', label: 'two', amount: 2, at: 2, flag: false }));
      });
      // Both databases hold the BEGIN too: one script of BEGIN, both inserts and the COMMIT.
      expect(db.writeStats.driverCalls - before.driverCalls).toBe(1);
      expect(db.writeStats.statements - before.statements).toBe(4);
      expect((await db.knex('held_probe').whereIn('id', ['c-1', 'c-2'])).length).toBe(2);
    });

    it('a read after a held write sees it: the connection keeps its order', async () => {
      const before = db.writeStats.driverCalls;
      const seen = await db.writeTransaction(async (trx) => {
        await holdRows(trx, db.dialect, 'held_probe', [{ id: 'o-1', label: "it's ordered", amount: 7, at: 7, flag: null }]);
        return trx('held_probe').where({ id: 'o-1', label: "it's ordered" }).where('amount', '>', -1).first('label', 'at');
      });
      expect({ ...seen, at: Number(seen.at) }).toEqual({ label: "it's ordered", at: 7 });
      // PostgreSQL sends the held BEGIN and insert with the read (written with literals) in one round trip, then
      // the COMMIT; SQLite's script call returns no rows, so there the script (BEGIN and insert), the read and the
      // COMMIT are three calls.
      expect(db.writeStats.driverCalls - before).toBe(dialect === 'postgres' ? 2 : 3);
    });

    it('a rollback drops what was held, and the next transaction on the connection does not inherit it', async () => {
      await expect(
        db.writeTransaction(async (trx) => {
          await holdRows(trx, db.dialect, 'held_probe', [{ id: 'r-1', label: 'dropped', amount: null, at: null, flag: null }]);
          throw new ValidationError('invalid request: no');
        }),
      ).rejects.toBeInstanceOf(ValidationError);
      await db.writeTransaction((trx) => trx('held_probe').insert({ id: 'r-2', label: 'kept' }));
      expect((await db.knex('held_probe').where('id', 'like', 'r-%')).map((r) => r.id)).toEqual(['r-2']);
    });

    it('a held write that fails at COMMIT fails the transaction whole and leaves the connection usable', async () => {
      await db.knex('held_probe').insert({ id: 'dup-1', label: 'first' });
      await expect(
        db.writeTransaction(async (trx) => {
          await trx('held_probe').insert({ id: 'f-1', label: 'sent at once' });
          await holdRows(trx, db.dialect, 'held_probe', [{ id: 'dup-1', label: 'again', amount: null, at: null, flag: null }]);
        }),
      ).rejects.toBeInstanceOf(ConflictError);
      expect(await db.knex('held_probe').where({ id: 'f-1' })).toHaveLength(0);
      await db.writeTransaction((trx) => holdRows(trx, db.dialect, 'held_probe', [{ id: 'f-2', label: 'after', amount: null, at: null, flag: null }]));
      expect(await db.knex('held_probe').where({ id: 'f-2' })).toHaveLength(1);
    });

    it('in a group commit, the item whose held write fails fails alone; its neighbours commit', async () => {
      await db.knex('held_probe').insert({ id: 'g-dup', label: 'first' });
      const writer = new WriteBatcher(db, { concurrency: db.dialect.writeConcurrency });
      const insertHeld: BatchHandler<string, string> = async (trx, ids) => {
        await holdRows(trx, db.dialect, 'held_probe', ids.map((id) => ({ id, label: 'group', amount: null, at: null, flag: null })));
        return ids;
      };
      const outcomes = await Promise.allSettled(['g-1', 'g-dup', 'g-2'].map((id) => writer.submit(insertHeld, id)));
      expect(outcomes.map((o) => o.status)).toEqual(['fulfilled', 'rejected', 'fulfilled']);
      expect((outcomes[1] as PromiseRejectedResult).reason).toBeInstanceOf(ConflictError);
      expect((await db.knex('held_probe').whereIn('id', ['g-1', 'g-2'])).length).toBe(2);
    });

    it('in run(), a unit whose held write fails at its savepoint is undone whole; the others commit', async () => {
      await db.knex('held_probe').insert({ id: 's-dup', label: 'first' });
      const writer = new WriteBatcher(db, { concurrency: db.dialect.writeConcurrency });
      const outcomes = await Promise.allSettled([
        writer.run((trx) => holdRows(trx, db.dialect, 'held_probe', [{ id: 's-1', label: 'u', amount: null, at: null, flag: null }])),
        writer.run(async (trx) => {
          await trx('held_probe').insert({ id: 's-undone', label: 'sent at once' });
          await holdRows(trx, db.dialect, 'held_probe', [{ id: 's-dup', label: 'again', amount: null, at: null, flag: null }]);
        }),
        writer.run((trx) => holdRows(trx, db.dialect, 'held_probe', [{ id: 's-2', label: 'u', amount: null, at: null, flag: null }])),
      ]);
      expect(outcomes.map((o) => o.status)).toEqual(['fulfilled', 'rejected', 'fulfilled']);
      expect((outcomes[1] as PromiseRejectedResult).reason).toBeInstanceOf(ConflictError);
      const ids = (await db.knex('held_probe').whereIn('id', ['s-1', 's-2', 's-undone'])).map((r) => r.id).sort();
      expect(ids).toEqual(['s-1', 's-2']);
    });

    it('a value without a literal form (text holding NUL) is sent at once, with its usual error', async () => {
      const outcome = db.writeTransaction(async (trx) => {
        await holdRows(trx, db.dialect, 'held_probe', [{ id: 'nul-1', label: 'a\u0000b', amount: null, at: null, flag: null }]);
      });
      if (dialect === 'postgres') await expect(outcome).rejects.toBeInstanceOf(ValidationError);
      else {
        // SQLite stores the NUL as bound: the literal path would have cut the text at it.
        await outcome;
        expect((await db.knex('held_probe').where({ id: 'nul-1' }).first('label')).label).toBe('a\u0000b');
      }
    });
  });
}
