import type { Db } from './types.js';
import type { Knex } from 'knex';
import { deferWrite, holdStatements } from './deferred-writes.js';
import type { Dialect } from './dialect/dialect.js';

/** Rows per statement so that one multi-row insert stays under the database's bind-parameter and row limits. */
export function chunkSizeFor(dialect: Dialect, columnsPerRow: number): number {
  return Math.max(1, Math.min(dialect.maxRowsPerInsert, Math.floor(dialect.maxBindings / Math.max(1, columnsPerRow))));
}

export function chunk<T>(items: T[], size: number): T[][] {
  const out: T[][] = [];
  for (let i = 0; i < items.length; i += size) out.push(items.slice(i, i + size));
  return out;
}

/**
 * A multi-row insert written with literals, without knex: held inserts are the bulk of what a group commit
 * writes, and knex's placeholders filled in afterwards cost a large part of the sync's allocations (issue 16).
 * Null when a row lacks one of the first row's columns, has one more, or holds a value with no literal form
 * (the caller then goes through knex).
 */
export function literalInsert(dialect: Dialect, table: string, rows: ReadonlyArray<Record<string, unknown>>, jsonColumns: ReadonlySet<string>): string | null {
  const columns = Object.keys(rows[0]!);
  const isJson = columns.map((column) => jsonColumns.has(column));
  const tuples: string[] = new Array(rows.length);
  const literals: string[] = new Array(columns.length);
  for (let r = 0; r < rows.length; r++) {
    const row = rows[r]!;
    let keys = 0;
    for (const _ in row) keys++;
    if (keys !== columns.length) return null;
    for (let c = 0; c < columns.length; c++) {
      const value = row[columns[c]!];
      if (value === undefined) return null;
      const literal = dialect.literal(isJson[c] ? dialect.writeJson(value) : value);
      if (literal === null) return null;
      literals[c] = literal;
    }
    // Joined row by row: one flat string each, not a rope of every value of the statement.
    tuples[r] = `(${literals.join(', ')})`;
  }
  return `insert into "${table}" (${columns.map((c) => `"${c}"`).join(', ')}) values ${tuples.join(', ')}`;
}

/** The rows with their JSON columns encoded as text (the VALUES form of knex's insert). */
export function encodedAsText(dialect: Dialect, rows: Record<string, unknown>[], jsonColumns: ReadonlySet<string>): Record<string, unknown>[] {
  if (jsonColumns.size === 0) return rows;
  return rows.map((row) => {
    const encoded: Record<string, unknown> = { ...row };
    for (const column of jsonColumns) encoded[column] = dialect.writeJson(encoded[column]);
    return encoded;
  });
}

/**
 * Multi-row insert in as few statements as the bind limit allows; values of `jsonColumns` are documents, encoded
 * as the database stores them. With `hold`, the statements are held until the transaction's next statement
 * (deferred-writes.ts), written with literals where they can be: for rows with ids of their own whose insert can
 * only fail on a value the whole group fails for anyway.
 */
export async function insertRows(
  trx: Db,
  dialect: Dialect,
  table: string,
  rows: Record<string, unknown>[],
  options: { hold?: boolean; jsonColumns?: readonly string[] } = {},
): Promise<void> {
  if (rows.length === 0) return;
  const jsonColumns = new Set(options.jsonColumns);
  for (const part of chunk(rows, chunkSizeFor(dialect, Object.keys(rows[0]!).length))) {
    if (options.hold && trx.isTransaction) {
      const sql = literalInsert(dialect, table, part, jsonColumns);
      if (sql !== null) {
        await holdStatements(trx as Knex.Transaction, [sql]);
        continue;
      }
    }
    const query = trx(table).insert(encodedAsText(dialect, part, jsonColumns));
    if (options.hold) await deferWrite(dialect, trx, query);
    else await query;
  }
}

/**
 * (workspace, key) pairs grouped by workspace, in chunks: `workspace_id = ? AND key IN (…)` is served by a
 * (workspace_id, key) index on both databases, where a row-value `(a, b) IN (…)` list is not on PostgreSQL.
 */
export function byWorkspace(pairs: Array<readonly [string, string]>, size: number): Array<[workspaceId: string, keys: string[]]> {
  const groups = new Map<string, string[]>();
  for (const [workspaceId, key] of pairs) {
    const keys = groups.get(workspaceId) ?? [];
    keys.push(key);
    groups.set(workspaceId, keys);
  }
  return [...groups].flatMap(([workspaceId, keys]) => chunk(keys, size).map((part): [string, string[]] => [workspaceId, part]));
}

/** A table of typed rows both databases read: `VALUES (CAST(? AS …), …), …` and its bindings. */
export function valuesList(types: string[], rows: unknown[][]): { sql: string; bindings: unknown[] } {
  const tuple = `(${types.map((type) => `CAST(? AS ${type})`).join(', ')})`;
  return { sql: `VALUES ${rows.map(() => tuple).join(', ')}`, bindings: rows.flat() };
}
