import type { Knex } from 'knex';

/**
 * A message row carries its rendered HTML (13 KB for an MJML message), which PostgreSQL compresses into TOAST as
 * each message is recorded. Its default, pglz, costs the campaign bench about a tenth of its MJML rate; lz4
 * compresses about as well several times faster (docs/email.md, What it costs). Only new values are written
 * with it; older rows stay pglz and read the same. lz4 needs PostgreSQL 14 or later built with it: elsewhere the
 * column keeps pglz, which works the same, only slower to write. SQLite stores text as written.
 */
const isPostgres = (knex: Knex) => knex.client.dialect === 'postgresql';

/** Whether the database can choose a column's compression: PostgreSQL 14 and later. */
async function choosesCompression(knex: Knex): Promise<boolean> {
  if (!isPostgres(knex)) return false;
  const { rows } = (await knex.raw("SELECT current_setting('server_version_num')::int AS version")) as { rows: Array<{ version: number }> };
  return rows[0]!.version >= 140_000;
}

/** feature_not_supported: a server built without lz4. */
const FEATURE_NOT_SUPPORTED = '0A000';

export async function up(knex: Knex): Promise<void> {
  if (!(await choosesCompression(knex))) return;
  try {
    // A savepoint of its own: a refusal must not abort the migration's transaction.
    await knex.transaction((trx) => trx.raw('ALTER TABLE messages ALTER COLUMN html SET COMPRESSION lz4'));
  } catch (error) {
    if ((error as { code?: string }).code !== FEATURE_NOT_SUPPORTED) throw error;
  }
}

export async function down(knex: Knex): Promise<void> {
  if (await choosesCompression(knex)) await knex.raw('ALTER TABLE messages ALTER COLUMN html SET COMPRESSION default');
}
