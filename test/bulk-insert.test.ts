import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { insertRows } from '../src/domain/db/bulk.js';
import { bulkInsert, bulkInsertIgnoringConflicts } from '../src/domain/db/bulk-insert.js';
import { openDatabase, type Database } from '../src/domain/db/database.js';
import { createTestDatabase, DIALECTS, type TestDatabase } from './helpers/test-databases.js';

/** Values that an encoding of rows as text (JSON on PostgreSQL) could get wrong. */
const AWKWARD = [
  'plain',
  `quotes ' and " and \`back\``,
  'tab\there, newline\nthere, carriage\rreturn',
  'back\\slash \\n \\\\ \\u0041',
  'unicode: é ß 漢字 🙂 \u2028 \u00a0',
  '{"looks": "like json"}',
  '  spaces kept  ',
  '?, ?? and $1 placeholders',
];

interface ProbeRow {
  id: string;
  name: string | null;
  doc: unknown;
  at: number;
  amount: number | null;
  kind: string;
}

for (const dialect of DIALECTS) {
  describe(`bulk inserts [${dialect}]`, () => {
    let database: TestDatabase;
    let db: Database;
    beforeAll(async () => {
      database = await createTestDatabase(dialect);
      db = openDatabase(database.url);
      await db.knex.schema.createTable('bulk_probe', (t) => {
        t.string('id', 36).primary();
        t.string('name', 255).nullable();
        t.jsonb('doc').nullable();
        t.bigInteger('at').notNullable();
        t.decimal('amount', 18, 4).nullable();
        t.string('kind', 64).notNullable().unique();
      });
    });
    afterAll(async () => {
      await db.close();
      await database.drop();
    });

    const stored = async (): Promise<ProbeRow[]> =>
      (await db.knex('bulk_probe').orderBy('id')).map((row: Record<string, unknown>) => ({
        id: row.id as string,
        name: row.name as string | null,
        doc: db.dialect.readJson(row.doc),
        at: db.dialect.readNumber(row.at),
        amount: db.dialect.readNullableNumber(row.amount),
        kind: row.kind as string,
      }));

    it('stores awkward text, JSON documents, NULLs and numbers exactly as given', async () => {
      const rows: ProbeRow[] = AWKWARD.map((text, i) => ({
        id: `row-${i}`,
        name: text,
        doc: { text, nested: { list: [1, 'two', null, true, { deep: text }] }, empty: {}, number: 41.5, big: 2 ** 53 - 1 },
        at: 1_764_000_000_000 + i,
        amount: i % 2 ? 0.0001 : 123456789.1234,
        kind: `kind-${i}`,
      }));
      rows.push({ id: 'row-nulls', name: null, doc: null, at: 0, amount: null, kind: 'nulls' });
      rows.push({ id: 'row-array', name: '', doc: ['a', { b: 'c' }], at: -1, amount: -5, kind: 'array' });
      await db.writeTransaction((trx) => bulkInsert(trx, db.dialect, 'bulk_probe', rows, ['doc']));
      expect(await stored()).toEqual([...rows].sort((a, b) => (a.id < b.id ? -1 : 1)));
    });

    it('skips rows whose unique key is taken and returns the ids it inserted', async () => {
      const rows = [
        { id: 'conflict-1', name: 'new', doc: { n: 1 }, at: 1, amount: 1, kind: 'kind-0' },
        { id: 'conflict-2', name: 'new', doc: { n: 2 }, at: 2, amount: 2, kind: 'fresh' },
      ];
      const inserted = await db.writeTransaction((trx) => bulkInsertIgnoringConflicts(trx, db.dialect, 'bulk_probe', rows, ['kind'], ['doc']));
      expect([...inserted]).toEqual(['conflict-2']);
      const byKind = new Map((await stored()).map((row) => [row.kind, row]));
      expect(byKind.get('kind-0')!.id).toBe('row-0');
      expect(byKind.get('fresh')).toEqual(rows[1]);
    });

    it('a held insert, sent with the commit, stores the same awkward rows', async () => {
      const rows: ProbeRow[] = AWKWARD.map((text, i) => ({
        id: `held-${i}`,
        name: text,
        doc: { text, list: [text, 2 ** 31, -0.5] },
        at: 2 ** 31 + i,
        amount: i % 2 ? -0.0001 : 2 ** 40,
        kind: `held-kind-${i}`,
      }));
      await db.writeTransaction((trx) => bulkInsert(trx, db.dialect, 'bulk_probe', rows, ['doc'], { hold: true }));
      const held = (await stored()).filter((row) => row.id.startsWith('held-'));
      expect(held).toEqual([...rows].sort((a, b) => (a.id < b.id ? -1 : 1)));
    });

    it('rows of uneven shape, held, are stored as a plain insert stores them', async () => {
      // A later row with a column more, one with a column less, one with an undefined value: knex's insert
      // takes the union of the columns (a missing value is NULL), so the literal form must give way to it.
      const first = { id: 'uneven-1', name: 'first', at: 1, kind: 'uneven-1' };
      const batches: Array<Array<Record<string, unknown>>> = [
        [first, { id: 'uneven-2', name: 'second', at: 2, kind: 'uneven-2', amount: 7 }],
        [first, { id: 'uneven-3', at: 3, kind: 'uneven-3' }],
        [first, { id: 'uneven-4', name: undefined, at: 4, kind: 'uneven-4' }],
      ];
      for (const rows of batches) {
        await db.writeTransaction((trx) => insertRows(trx, db.dialect, 'bulk_probe', rows, { hold: true }));
        await db.knex('bulk_probe').where({ id: 'uneven-1' }).delete();
      }
      await db.knex('bulk_probe').insert(first);
      const uneven = (await stored()).filter((row) => row.id.startsWith('uneven-'));
      expect(uneven.map(({ id, name, amount }) => ({ id, name, amount }))).toEqual([
        { id: 'uneven-1', name: 'first', amount: null },
        { id: 'uneven-2', name: 'second', amount: 7 },
        { id: 'uneven-3', name: null, amount: null },
        { id: 'uneven-4', name: null, amount: null },
      ]);
    });

    it.runIf(dialect === 'sqlite')('a value without a literal form (text holding NUL) is still stored, held', async () => {
      const row = { id: 'nul', name: 'a\0b', at: 1, kind: 'nul' };
      await db.writeTransaction((trx) => insertRows(trx, db.dialect, 'bulk_probe', [row, { ...row, id: 'nul-2', kind: 'nul-2' }], { hold: true }));
      const nul = (await stored()).filter((r) => r.id.startsWith('nul'));
      expect(nul.map((r) => r.name)).toEqual(['a\0b', 'a\0b']);
    });

    it.runIf(dialect === 'postgres')('an over-long text is refused with the error a plain insert gets', async () => {
      const tooLong = { id: 'long', name: 'x'.repeat(256), doc: {}, at: 1, amount: 1, kind: 'long' };
      const plain = await db.writeTransaction((trx) => trx('bulk_probe').insert({ ...tooLong, doc: '{}' })).catch((error: unknown) => error);
      const bulk = await db.writeTransaction((trx) => bulkInsert(trx, db.dialect, 'bulk_probe', [tooLong], ['doc'])).catch((error: unknown) => error);
      expect(bulk).toBeInstanceOf(Error);
      expect(bulk).toEqual(plain);
      expect((await stored()).some((row) => row.id === 'long')).toBe(false);
    });
  });
}
