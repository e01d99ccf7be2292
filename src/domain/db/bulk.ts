import type { Db } from './database.js';
import { deferWrite } from './deferred-writes.js';
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
 * Multi-row insert in as few statements as the bind limit allows. With `hold`, the statements are held until
 * the transaction's next statement (deferred-writes.ts): for rows with ids of their own whose insert can only
 * fail on a value the whole group fails for anyway.
 */
export async function insertRows(
  trx: Db,
  dialect: Dialect,
  table: string,
  rows: Record<string, unknown>[],
  options: { hold?: boolean } = {},
): Promise<void> {
  if (rows.length === 0) return;
  for (const part of chunk(rows, chunkSizeFor(dialect, Object.keys(rows[0]!).length))) {
    const query = trx(table).insert(part);
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
