import type { Db } from '../types.js';
import { columnKindOf, isMigratorTable, type CatalogTable, type SchemaCatalog } from './schema-catalog.js';

const rowsOf = <T>(result: unknown): T[] => (result as { rows: T[] }).rows;

/** PostgreSQL's catalog, for the tables of the connection's current schema. */
export const postgresCatalog: SchemaCatalog = {
  async tables(db: Db): Promise<CatalogTable[]> {
    const columns = rowsOf<{ table_name: string; column_name: string; data_type: string }>(
      await db.raw(
        `SELECT c.table_name, c.column_name, c.data_type
           FROM information_schema.columns c
           JOIN information_schema.tables t ON t.table_schema = c.table_schema AND t.table_name = c.table_name
          WHERE c.table_schema = current_schema() AND t.table_type = 'BASE TABLE'
            -- A partition's rows are its partitioned table's: copied, counted and compared through it.
            AND NOT EXISTS (SELECT 1 FROM pg_inherits i JOIN pg_class p ON p.oid = i.inhrelid
                             WHERE p.relname = c.table_name AND p.relnamespace = current_schema()::regnamespace)
          ORDER BY c.table_name, c.ordinal_position`,
      ),
    );
    const keys = rowsOf<{ table_name: string; column_name: string }>(
      await db.raw(
        `SELECT k.table_name, k.column_name
           FROM information_schema.table_constraints c
           JOIN information_schema.key_column_usage k
             ON k.constraint_schema = c.constraint_schema AND k.constraint_name = c.constraint_name AND k.table_name = c.table_name
          WHERE c.table_schema = current_schema() AND c.constraint_type = 'PRIMARY KEY'
          ORDER BY k.table_name, k.ordinal_position`,
      ),
    );
    const references = rowsOf<{ child: string; parent: string }>(
      await db.raw(
        `SELECT DISTINCT child.relname AS child, parent.relname AS parent
           FROM pg_constraint f
           JOIN pg_class child ON child.oid = f.conrelid
           JOIN pg_class parent ON parent.oid = f.confrelid
          WHERE f.contype = 'f' AND f.connamespace = current_schema()::regnamespace`,
      ),
    );
    const tables = new Map<string, CatalogTable>();
    for (const column of columns) {
      if (isMigratorTable(column.table_name)) continue;
      let table = tables.get(column.table_name);
      if (!table) tables.set(column.table_name, (table = { name: column.table_name, columns: [], primaryKey: [], references: [] }));
      table.columns.push({ name: column.column_name, kind: columnKindOf(column.data_type) });
    }
    for (const key of keys) tables.get(key.table_name)?.primaryKey.push(key.column_name);
    for (const { child, parent } of references) if (child !== parent) tables.get(child)?.references.push(parent);
    return [...tables.values()];
  },
  async advanceSequences(db: Db, table: string): Promise<void> {
    const sequences = rowsOf<{ column_name: string; sequence: string }>(
      await db.raw(
        `SELECT column_name, pg_get_serial_sequence(quote_ident(table_name), column_name) AS sequence
           FROM information_schema.columns
          WHERE table_schema = current_schema() AND table_name = ?`,
        [table],
      ),
    ).filter((column) => column.sequence !== null);
    // The next value drawn is one past the largest id copied (1 on an empty table).
    for (const { column_name: column, sequence } of sequences) {
      await db.raw('SELECT setval(?::regclass, COALESCE((SELECT max(??) FROM ??), 0) + 1, false)', [sequence, column, table]);
    }
  },
};
