import type { Db } from '../types.js';
import { columnKindOf, isMigratorTable, type CatalogTable, type SchemaCatalog } from './schema-catalog.js';

interface TableInfoRow {
  name: string;
  type: string;
  /** 1-based position in the primary key; 0 when not part of it. */
  pk: number;
}

/** SQLite's catalog: sqlite_master and the table_info / foreign_key_list pragmas. */
export const sqliteCatalog: SchemaCatalog = {
  async tables(db: Db): Promise<CatalogTable[]> {
    const names = (await db.raw(
      "SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite\\_%' ESCAPE '\\' ORDER BY name",
    )) as Array<{ name: string }>;
    const tables: CatalogTable[] = [];
    for (const { name } of names) {
      if (isMigratorTable(name)) continue;
      const columns = (await db.raw('SELECT name, type, pk FROM pragma_table_info(?)', [name])) as TableInfoRow[];
      const foreignKeys = (await db.raw('SELECT DISTINCT "table" AS parent FROM pragma_foreign_key_list(?)', [name])) as Array<{ parent: string }>;
      tables.push({
        name,
        columns: columns.map((column) => ({ name: column.name, kind: columnKindOf(column.type) })),
        primaryKey: columns.filter((column) => column.pk > 0).sort((a, b) => a.pk - b.pk).map((column) => column.name),
        references: foreignKeys.map((key) => key.parent).filter((parent) => parent !== name),
      });
    }
    return tables;
  },
  advanceSequences: async () => {},
};
