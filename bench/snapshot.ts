import { copyFileSync, rmSync } from 'node:fs';
import { openDatabase } from '../src/domain/db/database.js';
import { type BenchDatabase, withAdmin, quoteIdent } from './postgres.js';

/**
 * A copy of the bench's database as it stands now, for a measurement that must start from the same state as
 * the job it is compared with (the import's insert ceiling). Nothing may be writing to it: SQLite's file is
 * copied after a full checkpoint, PostgreSQL's database becomes the template of a new one (which needs no other
 * session on it).
 */
export async function snapshotDatabase(databaseUrl: string): Promise<BenchDatabase> {
  if (databaseUrl.startsWith('sqlite:')) {
    const path = databaseUrl.slice('sqlite:'.length);
    const copy = `${path}.snapshot`;
    const db = openDatabase(databaseUrl);
    try {
      await db.knex.raw('PRAGMA wal_checkpoint(TRUNCATE)');
      copyFileSync(path, copy);
    } finally {
      await db.close();
    }
    return { url: `sqlite:${copy}`, drop: async () => rmSync(copy, { force: true }) };
  }
  const source = new URL(databaseUrl);
  const name = `${source.pathname.slice(1)}_snapshot`;
  const copy = new URL(databaseUrl);
  copy.pathname = `/${name}`;
  const admin = new URL(databaseUrl);
  admin.pathname = '/postgres';
  await withAdmin(admin.toString(), async (client) => {
    await client.query(`DROP DATABASE IF EXISTS ${quoteIdent(name)}`);
    // PostgreSQL 15's default copy (WAL_LOG) writes the whole database into the WAL (706 MB for a database of 896
    // MB, measured), beyond max_wal_size for a bench database, and the checkpoints that forces would fall on the
    // measurements made next. FILE_COPY copies the files between two checkpoints and writes next to nothing to it.
    const { rows } = await client.query<{ version: number }>("SELECT current_setting('server_version_num')::int AS version");
    const strategy = rows[0]!.version >= 150_000 ? ' STRATEGY FILE_COPY' : '';
    await client.query(`CREATE DATABASE ${quoteIdent(name)} TEMPLATE ${quoteIdent(source.pathname.slice(1))}${strategy}`);
  });
  return {
    url: copy.toString(),
    drop: () => withAdmin(admin.toString(), async (client) => void (await client.query(`DROP DATABASE IF EXISTS ${quoteIdent(name)} WITH (FORCE)`))),
  };
}
