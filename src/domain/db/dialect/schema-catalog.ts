import type { Db } from '../types.js';

/**
 * What a whole-database copy (`emk copy-data`, src/domain/data-copy/) reads of a schema, in each database's own
 * catalog: our tables, their columns by the codec they need, their primary keys (keyset pagination) and the
 * tables their foreign keys point at (the order rows can be written in).
 */

/** The codec a column's values pass through: JSON documents, booleans, numbers (pg reads numeric as text), text. */
export type ColumnKind = 'json' | 'boolean' | 'number' | 'text';

export interface CatalogColumn {
  name: string;
  kind: ColumnKind;
}

export interface CatalogTable {
  name: string;
  /** In the table's order. */
  columns: CatalogColumn[];
  /** The primary key's columns, in key order (every table of ours has one). */
  primaryKey: string[];
  /** Tables this one's foreign keys reference (itself excluded). */
  references: string[];
}

export interface SchemaCatalog {
  /** Every table of ours: not the migrator's (knex_migrations*) nor the database's own (sqlite_*). */
  tables(db: Db): Promise<CatalogTable[]>;
  /**
   * After rows were written with their own ids: moves each sequence the table's columns draw from past the
   * largest id (PostgreSQL). SQLite's AUTOINCREMENT follows the ids inserted by itself: nothing to do there.
   */
  advanceSequences(db: Db, table: string): Promise<void>;
}

/** Tables the migrator keeps for itself: each database has its own record of the migrations it ran. */
export const isMigratorTable = (name: string): boolean => name.startsWith('knex_migrations');

/** A column's kind from its declared type, as either catalog names it (`json`/`jsonb`, `double precision`, …). */
export function columnKindOf(declaredType: string): ColumnKind {
  const type = declaredType.toLowerCase();
  if (type.startsWith('json')) return 'json';
  if (type === 'boolean') return 'boolean';
  if (/^(integer|int|bigint|smallint|float|double|real|decimal|numeric)/.test(type)) return 'number';
  return 'text';
}
