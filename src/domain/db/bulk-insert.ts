import type { Knex } from 'knex';
import { chunk, chunkSizeFor, encodedAsText, insertRows, literalInsert } from './bulk.js';
import type { Db } from './types.js';
import { deferWrite } from './deferred-writes.js';
import type { Dialect } from './dialect/dialect.js';

/**
 * Multi-row inserts of the bulk writers (imports, historical sync, the event and outbox writes), each
 * database's fastest way. Every row carries every column; values of `jsonColumns` are documents (objects),
 * encoded here as each database stores them.
 *
 * Where the dialect reads rows from one JSON parameter typed by the table (`Dialect.jsonRecordset`:
 * PostgreSQL), that is the form: a VALUES list of thousands of bind parameters costs the server far more CPU to
 * parse and plan, and the driver more work to send. SQLite keeps the multi-row insert: there the B-tree work is
 * the cost, whatever form the rows come in (docs/performance.md#the-nightly-jobs-at-the-insert-ceiling).
 */

/** Rows per statement on PostgreSQL: one JSON document of a few MB at most. */
const ROWS_PER_JSON_DOCUMENT = 5_000;

/** `INSERT INTO table (columns) SELECT columns FROM <recordset>` and its bindings. */
function insertFromJson(recordset: string, table: string, rows: object[]): { sql: string; bindings: string[] } {
  const columns = Object.keys(rows[0]!);
  const list = columns.map(() => '??').join(', ');
  return {
    sql: `INSERT INTO ?? (${list}) SELECT ${list} FROM ${recordset}`,
    bindings: [table, ...columns, ...columns, table, JSON.stringify(rows)],
  };
}

/**
 * Inserts every row, in as few statements as the database takes. With `hold`, the statements are held until
 * the transaction's next statement (deferred-writes.ts): for rows with ids of their own whose insert can only
 * fail on a value the whole group fails for anyway.
 */
export async function bulkInsert<T extends object>(
  db: Db,
  dialect: Dialect,
  table: string,
  rows: T[],
  jsonColumns: ReadonlyArray<keyof T & string> = [],
  options: { hold?: boolean } = {},
): Promise<void> {
  if (rows.length === 0) return;
  const recordset = dialect.jsonRecordset;
  if (recordset !== null) {
    for (const part of chunk(rows, ROWS_PER_JSON_DOCUMENT)) {
      const { sql, bindings } = insertFromJson(recordset, table, part);
      const query: Knex.Raw = db.raw(sql, bindings);
      if (options.hold) await deferWrite(dialect, db, query);
      else await query;
    }
    return;
  }
  await insertRows(db, dialect, table, rows as Array<Record<string, unknown>>, { ...options, jsonColumns });
}

/**
 * bulkInsert, yielding to a unique key: a row whose key is taken (by a concurrent writer) is skipped. Returns
 * the `id`s of the rows inserted.
 */
export async function bulkInsertIgnoringConflicts<T extends object>(
  db: Db,
  dialect: Dialect,
  table: string,
  rows: T[],
  uniqueKey: ReadonlyArray<keyof T & string>,
  jsonColumns: ReadonlyArray<keyof T & string> = [],
): Promise<Set<string>> {
  const inserted = new Set<string>();
  if (rows.length === 0) return inserted;
  const recordset = dialect.jsonRecordset;
  if (recordset !== null) {
    for (const part of chunk(rows, ROWS_PER_JSON_DOCUMENT)) {
      const { sql, bindings } = insertFromJson(recordset, table, part);
      const conflict = `ON CONFLICT (${uniqueKey.map(() => '??').join(', ')}) DO NOTHING RETURNING id`;
      const result = await db.raw(`${sql} ${conflict}`, [...bindings, ...uniqueKey]);
      for (const row of dialect.rowsOf<{ id: string }>(result)) inserted.add(row.id);
    }
    return inserted;
  }
  const json = new Set<string>(jsonColumns);
  for (const part of chunk(rows as Array<Record<string, unknown>>, chunkSizeFor(dialect, Object.keys(rows[0]!).length))) {
    // Written with literals where it can be, like a held insert: no bind parameters to convert one by one.
    const literal = literalInsert(dialect, table, part, json);
    const returned = (
      literal !== null
        ? await db.raw(`${literal} ON CONFLICT (${uniqueKey.map((c) => `"${c}"`).join(', ')}) DO NOTHING RETURNING "id"`)
        : await db(table).insert(encodedAsText(dialect, part, json)).onConflict([...uniqueKey]).ignore().returning('id')
    ) as Array<{ id: string }>;
    for (const row of returned) inserted.add(row.id);
  }
  return inserted;
}
