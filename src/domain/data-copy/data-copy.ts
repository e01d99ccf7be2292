import { openDatabase, type Database, type Db } from '../db/database.js';
import { insertRows } from '../db/bulk.js';
import { bulkInsert } from '../db/bulk-insert.js';
import type { Dialect } from '../db/dialect/dialect.js';
import { migrateToLatest } from '../db/migrate.js';
import type { CatalogTable } from '../db/dialect/schema-catalog.js';
import { EmkError } from '../errors.js';
import { plainRow, storableRow, TableChecksum, type PlainRow } from './row-codec.js';

/*
 * `emk copy-data`: every row of one emk database into another (SQLite to PostgreSQL, the way a shop outgrows
 * its file), ids, secrets, signing keys, tokens, jobs and outbox included, so links in mail already sent keep
 * working. docs/operations.md, "From SQLite to PostgreSQL".
 *
 * Restarting is safe because the whole copy is one transaction on the target: rows, sequences and the
 * verification commit together or not at all. An interrupted copy (Ctrl-C, a crash, a lost connection, a failed
 * verification) leaves the target migrated and empty, so running the same command again starts over.
 */

/** Written by `emk copy-data --json` (CONTRACT §8.5). */
export interface DataCopyResult {
  /** Rows copied per table. */
  tables: Record<string, number>;
  rows: number;
  verified: true;
}

export interface DataCopyProgress {
  /** Copying pages, then verifying tables (reading back both sides: the copy's second half of the time). */
  phase: 'copying' | 'verifying';
  table: string;
  /** Rows of this table copied (or verified) so far, and its rows at the start. */
  copied: number;
  total: number;
  /** The same over every table. */
  copiedAll: number;
  totalAll: number;
}

export interface DataCopyOptions {
  /** Rows read from the source per keyset page (each page is one or a few multi-row inserts). */
  pageRows?: number;
  /** Called (and awaited) after each page is written; a throw stops the copy and rolls it back. */
  onProgress?(progress: DataCopyProgress): void | Promise<void>;
}

const DEFAULT_PAGE_ROWS = 2_000;

/** A failure of the copy that leaves the target as it found it: exit 1. */
export class DataCopyError extends EmkError {
  constructor(message: string) {
    super(message, 'data_copy_failed', 409, 1);
  }
}

/** copyDatabase between the databases of two urls (`sqlite:<path>`, `postgres://…`), opened here and closed after. */
export async function copyData(fromUrl: string, toUrl: string, options: DataCopyOptions = {}): Promise<DataCopyResult> {
  const source = openDatabase(fromUrl);
  try {
    const target = openDatabase(toUrl);
    try {
      return await copyDatabase(source, target, options);
    } finally {
      await target.close();
    }
  } finally {
    await source.close();
  }
}

/**
 * Migrates both databases, refuses a target holding any row, copies every table in an order its foreign keys
 * accept, advances the target's sequences, then verifies each table before committing: the target's copy and
 * the source as it is now must both give the row count and checksum of the rows read. Writers to the source
 * must be stopped first; a source that changed is refused. Each table then held what was copied from the start
 * of the last table's copy to the first check: the copy is of one moment.
 */
export async function copyDatabase(source: Database, target: Database, options: DataCopyOptions = {}): Promise<DataCopyResult> {
  const pageRows = options.pageRows ?? DEFAULT_PAGE_ROWS;
  await migrateToLatest(source.knex);
  await migrateToLatest(target.knex);
  const tables = writeOrder(await target.dialect.catalog.tables(target.knex));
  await checkSameTables(source, tables);
  await refuseNonEmpty(target.knex, tables);

  const totals = new Map<string, number>();
  for (const table of tables) totals.set(table.name, await countRows(source.knex, table.name));
  const totalAll = [...totals.values()].reduce((sum, n) => sum + n, 0);

  const result = await target.knex.transaction(async (trx) => {
    const sourceSums = new Map<string, TableChecksum>();
    let copiedAll = 0;
    for (const table of tables) {
      const sum = new TableChecksum(columnNames(table));
      sourceSums.set(table.name, sum);
      for await (const page of keysetPages(source.knex, table, pageRows)) {
        const rows = page.map((stored) => plainRow(source.dialect, table.columns, stored));
        for (const row of rows) sum.add(row);
        await writePage(trx, target.dialect, table, rows);
        copiedAll += rows.length;
        await options.onProgress?.({ phase: 'copying', table: table.name, copied: sum.rows, total: totals.get(table.name)!, copiedAll, totalAll });
      }
      await target.dialect.catalog.advanceSequences(trx, table.name);
    }
    const copied: Record<string, number> = {};
    let verifiedAll = 0;
    for (const table of tables) {
      const expected = sourceSums.get(table.name)!;
      const [found, sourceNow] = await Promise.all([checksumOf(trx, target.dialect, table, pageRows), checksumOf(source.knex, source.dialect, table, pageRows)]);
      if (found.rows !== expected.rows || found.hex !== expected.hex) {
        throw new DataCopyError(
          `verification failed for table ${table.name}: the target holds ${found.rows} rows (checksum ${found.hex}), ` +
            `the source gave ${expected.rows} (checksum ${expected.hex}); nothing was kept`,
        );
      }
      if (sourceNow.rows !== expected.rows || sourceNow.hex !== expected.hex) {
        throw new DataCopyError(
          `the source changed while it was copied (table ${table.name}): stop emk serve and every worker, then run ` +
            'copy-data again; nothing was kept',
        );
      }
      copied[table.name] = found.rows;
      verifiedAll += found.rows;
      await options.onProgress?.({ phase: 'verifying', table: table.name, copied: found.rows, total: found.rows, copiedAll: verifiedAll, totalAll: copiedAll });
    }
    return { tables: copied, rows: copiedAll, verified: true as const };
  });
  // A freshly filled PostgreSQL table looks empty to the planner until analysed.
  await target.dialect.analyzeAfterBulkLoad(target.knex, tables.map((table) => table.name));
  return result;
}

/**
 * One page into the target. Where the database reads a page from one JSON document (PostgreSQL's
 * json_populate_recordset, bulkInsert: far cheaper to parse than a VALUES list of thousands of parameters, and a
 * JSON null lands as SQL NULL), the JSON columns go as documents; elsewhere as a multi-row insert with the
 * documents encoded as text and NULL kept NULL (bulkInsert would store the text `null`, which readers of a
 * nullable column do not take for NULL).
 */
async function writePage(trx: Db, dialect: Dialect, table: CatalogTable, rows: PlainRow[]): Promise<void> {
  if (dialect.jsonRecordset !== null) {
    await bulkInsert(trx, dialect, table.name, rows, table.columns.filter((column) => column.kind === 'json').map((column) => column.name));
  } else {
    await insertRows(trx, dialect, table.name, rows.map((row) => storableRow(dialect, table.columns, row)));
  }
}

const columnNames = (table: CatalogTable) => table.columns.map((column) => column.name);

/** A table's row count and checksum as read now. */
async function checksumOf(db: Db, dialect: Dialect, table: CatalogTable, pageRows: number): Promise<TableChecksum> {
  const sum = new TableChecksum(columnNames(table));
  for await (const page of keysetPages(db, table, pageRows)) for (const stored of page) sum.add(plainRow(dialect, table.columns, stored));
  return sum;
}

/** The tables with every table after those its foreign keys reference (parents first). */
export function writeOrder(tables: CatalogTable[]): CatalogTable[] {
  const byName = new Map(tables.map((table) => [table.name, table]));
  const ordered: CatalogTable[] = [];
  const state = new Map<string, 'visiting' | 'done'>();
  const visit = (table: CatalogTable) => {
    const seen = state.get(table.name);
    if (seen === 'done') return;
    if (seen === 'visiting') throw new DataCopyError(`foreign keys form a cycle through table ${table.name}`);
    state.set(table.name, 'visiting');
    for (const parent of table.references) {
      const referenced = byName.get(parent);
      if (referenced) visit(referenced);
    }
    state.set(table.name, 'done');
    ordered.push(table);
  };
  for (const table of [...tables].sort((a, b) => (a.name < b.name ? -1 : 1))) visit(table);
  return ordered;
}

/** Both databases ran the same migrations, so their tables and columns match; anything else is refused before writing. */
async function checkSameTables(source: Database, tables: CatalogTable[]): Promise<void> {
  const sourceTables = new Map((await source.dialect.catalog.tables(source.knex)).map((table) => [table.name, table]));
  for (const table of tables) {
    const columns = sourceTables.get(table.name)?.columns.map((column) => column.name).sort().join(',');
    if (columns !== table.columns.map((column) => column.name).sort().join(',')) {
      throw new DataCopyError(`the source and target schemas differ at table ${table.name}: are both on the same emk version?`);
    }
    if (table.primaryKey.length === 0) throw new DataCopyError(`table ${table.name} has no primary key to copy it by`);
    sourceTables.delete(table.name);
  }
  const extra = [...sourceTables.keys()];
  if (extra.length > 0) throw new DataCopyError(`the source has tables the target lacks: ${extra.join(', ')}`);
}

async function refuseNonEmpty(db: Db, tables: CatalogTable[]): Promise<void> {
  for (const table of tables) {
    if ((await db(table.name).select(db.raw('1')).limit(1)).length > 0) throw new DataCopyError('target database is not empty');
  }
}

async function countRows(db: Db, table: string): Promise<number> {
  const [row] = await db(table).count({ n: '*' });
  return Number(row?.n ?? 0);
}

/**
 * The table's rows in pages by primary key: each page starts after the last key of the one before (an index
 * range scan, however deep into the table), never at an offset. The next page is read while the caller writes
 * this one.
 */
async function* keysetPages(db: Db, table: CatalogTable, pageRows: number): AsyncGenerator<PlainRow[]> {
  const key = table.primaryKey;
  const columns = table.columns.map((column) => column.name);
  const order = key.map((column) => ({ column, order: 'asc' as const }));
  const read = (after: unknown[] | null): Promise<PlainRow[]> => {
    const query = db(table.name).select(columns).orderBy(order).limit(pageRows);
    if (after) query.whereRaw(`(${key.map(() => '??').join(', ')}) > (${key.map(() => '?').join(', ')})`, [...key, ...after] as never[]);
    const page = query.then((rows) => rows as PlainRow[]);
    // A caller that stops early never awaits the page read ahead: its failure must not go unhandled.
    page.catch(() => {});
    return page;
  };
  let next = read(null);
  for (;;) {
    const page = await next;
    const last = page.length === pageRows ? page[page.length - 1]! : null;
    if (last) next = read(key.map((column) => last[column]));
    if (page.length > 0) yield page;
    if (!last) return;
  }
}
