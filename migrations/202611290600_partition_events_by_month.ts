import type { Knex } from 'knex';

/**
 * On PostgreSQL, `events` becomes a table partitioned by month of `created_at` (docs/scaling.md, Monthly partitions
 * of events): the rows already stored move, in one INSERT … SELECT, into one partition per month from the oldest
 * (at most 36 months back; older ones go to `events_default`, as would any far in the future) through two months
 * ahead, and the worker creates the months after that (src/domain/db/dialect/postgres-partitions.ts names them
 * alike). The primary key becomes (id, created_at), as PostgreSQL requires of a partitioned table's keys: ids stay
 * unique by construction (each event's id is a UUIDv7 drawn where it is stored), and no unique index is lost (a
 * dedupe key is looked up, not enforced by one). No table references events by a foreign key; events' own two
 * (workspace, contact) are recreated, and so is every index, from the old table's definitions.
 *
 * SQLite's `events` stays as it is (its retention is batched deletes): on SQLite this migration does nothing.
 */
const TABLE = 'events';
const COLUMN = 'created_at';
const MAX_MONTHS_BACK = 36;
const MONTHS_AHEAD = 2;

const isPostgres = (knex: Knex) => knex.client.dialect === 'postgresql';
const rowsOf = <T>(result: unknown): T[] => (result as { rows: T[] }).rows;

function monthName(year: number, month: number): { name: string; from: number; to: number } {
  const from = Date.UTC(year, month, 1);
  const start = new Date(from);
  const name = `${TABLE}_p${start.getUTCFullYear()}${String(start.getUTCMonth() + 1).padStart(2, '0')}`;
  return { name, from, to: Date.UTC(start.getUTCFullYear(), start.getUTCMonth() + 1, 1) };
}

/** Index definitions other than the primary key's, as `pg_indexes` writes them (naming the table). */
async function indexDefinitions(knex: Knex): Promise<Array<{ name: string; definition: string }>> {
  return rowsOf(
    await knex.raw(
      `SELECT i.indexname AS name, i.indexdef AS definition FROM pg_indexes i
        WHERE i.schemaname = current_schema() AND i.tablename = ?
          AND NOT EXISTS (SELECT 1 FROM pg_constraint c WHERE c.conname = i.indexname AND c.connamespace = current_schema()::regnamespace AND c.contype = 'p')
        ORDER BY i.indexname`,
      [TABLE],
    ),
  );
}

/**
 * Renames `events` aside (with its indexes and primary key, whose names are the schema's), creates it anew by
 * `create`, copies the rows in one INSERT … SELECT, drops the old one, then gives the new one the old one's indexes
 * and foreign keys.
 */
async function rebuild(knex: Knex, create: (aside: string) => Promise<void>): Promise<void> {
  const aside = `${TABLE}_rebuilt_from`;
  const indexes = await indexDefinitions(knex);
  const keys = rowsOf<{ name: string; definition: string }>(
    await knex.raw(`SELECT conname AS name, pg_get_constraintdef(oid) AS definition FROM pg_constraint WHERE conrelid = ?::regclass AND contype = 'f' ORDER BY conname`, [TABLE]),
  );
  const [pkey] = rowsOf<{ name: string }>(await knex.raw(`SELECT conname AS name FROM pg_constraint WHERE conrelid = ?::regclass AND contype = 'p'`, [TABLE]));
  await knex.raw('ALTER TABLE ?? RENAME TO ??', [TABLE, aside]);
  for (const { name } of indexes) await knex.raw('ALTER INDEX ?? RENAME TO ??', [name, `${name}_rebuilt`]);
  if (pkey) await knex.raw('ALTER TABLE ?? RENAME CONSTRAINT ?? TO ??', [aside, pkey.name, `${pkey.name}_rebuilt`]);
  await create(aside);
  await knex.raw('INSERT INTO ?? SELECT * FROM ??', [TABLE, aside]);
  await knex.raw('DROP TABLE ??', [aside]);
  // The old definitions name the table by its name, now the new table's (a partitioned table's say ON ONLY).
  for (const { definition } of indexes) await knex.raw(definition.replace(' ON ONLY ', ' ON '));
  for (const { name, definition } of keys) await knex.raw(`ALTER TABLE ?? ADD CONSTRAINT ?? ${definition}`, [TABLE, name]);
  await knex.raw('ANALYZE ??', [TABLE]);
}

export async function up(knex: Knex): Promise<void> {
  if (!isPostgres(knex)) return;
  const now = new Date();
  const [range] = rowsOf<{ low: string | null }>(await knex.raw('SELECT min(??) AS low FROM ??', [COLUMN, TABLE]));
  const floor = Date.UTC(now.getUTCFullYear(), now.getUTCMonth() - MAX_MONTHS_BACK, 1);
  const oldest = new Date(range?.low == null ? now.getTime() : Math.min(now.getTime(), Math.max(Number(range.low), floor)));
  await rebuild(knex, async (aside) => {
    await knex.raw('CREATE TABLE ?? (LIKE ?? INCLUDING DEFAULTS) PARTITION BY RANGE (??)', [TABLE, aside, COLUMN]);
    await knex.raw('ALTER TABLE ?? ADD CONSTRAINT ?? PRIMARY KEY (id, ??)', [TABLE, `${TABLE}_pkey`, COLUMN]);
    await knex.raw('CREATE TABLE ?? PARTITION OF ?? DEFAULT', [`${TABLE}_default`, TABLE]);
    const last = Date.UTC(now.getUTCFullYear(), now.getUTCMonth() + MONTHS_AHEAD, 1);
    for (let k = 0; ; k++) {
      const month = monthName(oldest.getUTCFullYear(), oldest.getUTCMonth() + k);
      if (month.from > last) break;
      await knex.raw(`CREATE TABLE ?? PARTITION OF ?? FOR VALUES FROM (${month.from}) TO (${month.to})`, [month.name, TABLE]);
    }
  });
}

export async function down(knex: Knex): Promise<void> {
  if (!isPostgres(knex)) return;
  await rebuild(knex, async (aside) => {
    await knex.raw('CREATE TABLE ?? (LIKE ?? INCLUDING DEFAULTS)', [TABLE, aside]);
    await knex.raw('ALTER TABLE ?? ADD CONSTRAINT ?? PRIMARY KEY (id)', [TABLE, `${TABLE}_pkey`]);
  });
}
