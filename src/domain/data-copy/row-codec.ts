import { createHash } from 'node:crypto';
import type { Dialect } from '../db/dialect/dialect.js';
import type { CatalogColumn } from '../db/dialect/schema-catalog.js';

/**
 * A row as both databases agree it reads: JSON documents parsed (a JSON null is no document: NULL), booleans as
 * booleans, numbers as numbers (pg reads bigint and numeric as text), text as text. The copy writes these values
 * and the verification hashes them, read alike from either side.
 */
export type PlainRow = Record<string, unknown>;

export function plainRow(dialect: Dialect, columns: readonly CatalogColumn[], stored: Record<string, unknown>): PlainRow {
  const row: PlainRow = {};
  for (const { name, kind } of columns) {
    const value = stored[name];
    if (value === null || value === undefined) row[name] = null;
    else if (kind === 'json') row[name] = dialect.readJson(value) ?? null;
    else if (kind === 'boolean') row[name] = dialect.readBoolean(value);
    else if (kind === 'number') row[name] = dialect.readNumber(value);
    else row[name] = value;
  }
  return row;
}

/** The row as the target stores it: JSON documents encoded by its codec, everything else as read. */
export function storableRow(dialect: Dialect, columns: readonly CatalogColumn[], row: PlainRow): Record<string, unknown> {
  const stored: Record<string, unknown> = { ...row };
  for (const { name, kind } of columns) if (kind === 'json' && row[name] !== null) stored[name] = dialect.writeJson(row[name]);
  return stored;
}

/** JSON with every object's keys in order: the same row gives the same text on either side. */
function canonicalJson(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(canonicalJson).join(',')}]`;
  if (value !== null && typeof value === 'object') {
    const entries = Object.entries(value as Record<string, unknown>).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
    return `{${entries.map(([key, item]) => `${JSON.stringify(key)}:${canonicalJson(item)}`).join(',')}}`;
  }
  return JSON.stringify(value ?? null);
}

const MOD = 1n << 64n;

/**
 * A table's row count and checksum: the sum (mod 2^64) of the first 64 bits of each row's SHA-256 over its
 * canonical JSON (columns by name). A sum does not depend on the order rows are read in (the databases order
 * text keys by their own collations), and unlike a XOR two equal rows do not cancel out.
 */
export class TableChecksum {
  rows = 0;
  private sum = 0n;
  /** The columns by name, each with its JSON key written once (rows are many, columns few). */
  private readonly keys: Array<[column: string, prefix: string]>;

  constructor(columns: readonly string[]) {
    this.keys = [...columns].sort().map((column, i) => [column, `${i === 0 ? '{' : ','}${JSON.stringify(column)}:`]);
  }

  add(row: PlainRow): void {
    let text = '';
    for (const [column, prefix] of this.keys) text += prefix + canonicalJson(row[column]);
    const digest = createHash('sha256').update(`${text}}`).digest();
    this.sum = (this.sum + digest.readBigUInt64BE(0)) % MOD;
    this.rows += 1;
  }

  get hex(): string {
    return this.sum.toString(16).padStart(16, '0');
  }
}
