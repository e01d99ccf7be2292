import { chunk, chunkSizeFor, insertRows } from './bulk.js';
import type { Db } from './database.js';
import type { Dialect } from './dialect/dialect.js';

/**
 * Multi-row inserts of the bulk writers (imports, historical sync, the event and outbox writes), each
 * database's fastest way. Every row carries every column; values of `jsonColumns` are documents (objects),
 * encoded here as each database stores them.
 *
 * PostgreSQL reads the rows from one JSON parameter, typed by the table (`json_populate_recordset`): a
 * VALUES list of thousands of bind parameters costs it about twice the server CPU to parse and plan, and the
 * driver twice the work to send. SQLite keeps knex's multi-row insert: there the B-tree work is the cost,
 * whatever form the rows come in.
 */

/** Rows per statement on PostgreSQL: one JSON document of a few MB at most. */
const ROWS_PER_JSON_DOCUMENT = 5_000;

/** The rows as SQLite stores them: JSON columns as text. */
const encodedForSqlite = (dialect: Dialect, rows: object[], jsonColumns: readonly string[]): Array<Record<string, unknown>> =>
  jsonColumns.length === 0
    ? (rows as Array<Record<string, unknown>>)
    : rows.map((row) => {
        const encoded: Record<string, unknown> = { ...row };
        for (const column of jsonColumns) encoded[column] = dialect.writeJson(encoded[column]);
        return encoded;
      });

/** `INSERT INTO table (columns) SELECT columns FROM json_populate_recordset(NULL::table, ?)` and its bindings. */
function insertFromJson(table: string, rows: object[]): { sql: string; bindings: string[] } {
  const columns = Object.keys(rows[0]!);
  const list = columns.map(() => '??').join(', ');
  return {
    sql: `INSERT INTO ?? (${list}) SELECT ${list} FROM json_populate_recordset(NULL::??, ?::json)`,
    bindings: [table, ...columns, ...columns, table, JSON.stringify(rows)],
  };
}

/** Inserts every row, in as few statements as the database takes. */
export async function bulkInsert<T extends object>(
  db: Db,
  dialect: Dialect,
  table: string,
  rows: T[],
  jsonColumns: ReadonlyArray<keyof T & string> = [],
): Promise<void> {
  if (rows.length === 0) return;
  if (dialect.name === 'postgres') {
    for (const part of chunk(rows, ROWS_PER_JSON_DOCUMENT)) {
      const { sql, bindings } = insertFromJson(table, part);
      await db.raw(sql, bindings);
    }
    return;
  }
  await insertRows(db, dialect, table, encodedForSqlite(dialect, rows, jsonColumns));
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
  if (dialect.name === 'postgres') {
    for (const part of chunk(rows, ROWS_PER_JSON_DOCUMENT)) {
      const { sql, bindings } = insertFromJson(table, part);
      const conflict = `ON CONFLICT (${uniqueKey.map(() => '??').join(', ')}) DO NOTHING RETURNING id`;
      const result = await db.raw(`${sql} ${conflict}`, [...bindings, ...uniqueKey]);
      for (const row of result.rows as Array<{ id: string }>) inserted.add(row.id);
    }
    return inserted;
  }
  const encoded = encodedForSqlite(dialect, rows, jsonColumns);
  for (const part of chunk(encoded, chunkSizeFor(dialect, Object.keys(rows[0]!).length))) {
    const returned = (await db(table).insert(part).onConflict([...uniqueKey]).ignore().returning('id')) as Array<{ id: string }>;
    for (const row of returned) inserted.add(row.id);
  }
  return inserted;
}
