import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openDatabase, type Database } from '../src/domain/db/database.js';
import { migrateToLatest, rollbackAll } from '../src/domain/db/migrate.js';
import { migrations } from '../migrations/index.js';
import { createTestDatabase, DIALECTS, type TestDatabase } from './helpers/test-databases.js';
import * as partitionEvents from '../migrations/202611290600_partition_events_by_month.js';
import * as compressMessageHtml from '../migrations/202611300100_compress_message_html_with_lz4.js';
import { attachedTo, monthFrom, rowsOf } from './helpers/partitions.js';

const DAY = 86_400_000;

for (const dialect of DIALECTS) {
  describe(`migrations [${dialect}]`, () => {
    let database: TestDatabase;
    let db: Database;
    beforeAll(async () => {
      database = await createTestDatabase(dialect);
      db = openDatabase(database.url);
    });
    afterAll(async () => {
      await db.close();
      await database.drop();
    });

    it('down then up again on a database that holds data: every migration runs both ways', async () => {
      await db.knex('workspaces').insert({ id: 'w', name: 'n', site_id: 's', created_at: 1 });
      await rollbackAll(db.knex);
      expect(await db.knex.schema.hasTable('workspaces')).toBe(false);
      expect(await db.knex.schema.hasTable('events')).toBe(false);
      const applied = await migrateToLatest(db.knex);
      expect(applied).toEqual(migrations.map(([name]) => name));
      expect(await migrateToLatest(db.knex)).toEqual([]);
    });

    it('migrations are named YYYYMMDDHHMM_verb_noun and listed in order', () => {
      const names = migrations.map(([name]) => name);
      for (const name of names) expect(name).toMatch(/^\d{12}_[a-z]+(_[a-z0-9]+)+$/);
      expect([...names].sort()).toEqual(names);
    });

    it('several processes migrating at once all succeed', async () => {
      await rollbackAll(db.knex);
      const others = [openDatabase(database.url), openDatabase(database.url)];
      try {
        const results = await Promise.all([db, ...others].map((d) => migrateToLatest(d.knex)));
        expect(results.flat().sort()).toEqual(migrations.map(([name]) => name).sort());
      } finally {
        await Promise.all(others.map((o) => o.close()));
      }
    });

    it('JSON columns hold the same objects on both databases', async () => {
      await db.knex('workspaces').insert({ id: 'w2', name: 'n', site_id: 's2', created_at: 1 });
      const properties = { text: 'ünïcødé 🎉', n: 1.5, nested: { list: [1, 'two', null, true] } };
      await db.knex('contacts').insert({
        id: 'c',
        workspace_id: 'w2',
        email: 'a@b',
        email_key: 'a@b',
        properties: db.dialect.writeJson(properties),
        subscription_status: 'subscribed',
        created_at: 1,
        updated_at: 1,
      });
      const row = await db.knex('contacts').where({ id: 'c' }).first();
      expect(db.dialect.readJson(row.properties)).toEqual(properties);
      expect(db.dialect.readNumber(row.lifetime_revenue)).toBe(0);
    });

    it.runIf(dialect === 'postgres')('PostgreSQL: the events partitioning converts a populated events table and back, rows, indexes and foreign keys kept', async () => {
      const knex = db.knex;
      const indexes = async () =>
        rowsOf<{ name: string; def: string }>(
          await knex.raw(`SELECT indexname AS name, replace(indexdef, ' ON ONLY ', ' ON ') AS def FROM pg_indexes WHERE tablename = 'events' ORDER BY 1`),
        );
      const keys = async () =>
        rowsOf<{ name: string; def: string }>(await knex.raw(`SELECT conname AS name, pg_get_constraintdef(oid) AS def FROM pg_constraint WHERE conrelid = 'events'::regclass ORDER BY 1`));
      const partitioned = async () => Number(rowsOf<{ n: unknown }>(await knex.raw(`SELECT count(*) AS n FROM pg_partitioned_table WHERE partrelid = 'events'::regclass`))[0]!.n) === 1;
      expect(await partitioned()).toBe(true);
      const partitionedIndexes = await indexes();

      await partitionEvents.down(knex);
      expect(await partitioned()).toBe(false);
      const plainIndexes = await indexes();
      expect(plainIndexes.find((index) => index.name === 'events_pkey')?.def).toMatch(/\(id\)$/);
      const plainKeys = await keys();

      await knex('workspaces').insert({ id: 'wp', name: 'n', site_id: 'sp', created_at: 1 });
      await knex('contacts').insert({ id: 'cp', workspace_id: 'wp', email: 'p@b', email_key: 'p@b', properties: '{}', subscription_status: 'subscribed', created_at: 1, updated_at: 1 });
      const now = Date.now();
      const at = [Date.UTC(2001, 0, 1), now - 400 * DAY, now - 40 * DAY, now, now + 200 * DAY];
      const rows = at.map((createdAt, i) => ({
        id: `e${i}`,
        workspace_id: 'wp',
        contact_id: i % 2 ? 'cp' : null,
        anonymous_id: 'v',
        event_name: 'viewed',
        properties: JSON.stringify({ i }),
        dedupe_key: i === 1 ? 'k' : null,
        created_at: createdAt,
        received_at: now,
      }));
      await knex('events').insert(rows);

      await partitionEvents.up(knex);
      expect(await partitioned()).toBe(true);
      const stored = rowsOf<{ id: string; part: string }>(await knex.raw("SELECT id, tableoid::regclass::text AS part FROM events WHERE workspace_id = 'wp' ORDER BY id"));
      expect(stored).toEqual([
        { id: 'e0', part: 'events_default' },
        { id: 'e1', part: monthFrom(at[1]!, 0).name },
        { id: 'e2', part: monthFrom(at[2]!, 0).name },
        { id: 'e3', part: monthFrom(now, 0).name },
        { id: 'e4', part: 'events_default' },
      ]);
      const attached = await attachedTo(knex);
      expect(attached[0]).toBe('events_default');
      // From the oldest row's month, but at most 36 months back (the 2001 row went to the default), to 2 months ahead.
      expect(attached.slice(1)).toEqual(Array.from({ length: 39 }, (_, k) => monthFrom(now, k - 36).name));
      expect(await indexes()).toEqual(partitionedIndexes);
      expect((await keys()).filter((key) => key.name !== 'events_pkey')).toEqual(plainKeys.filter((key) => key.name !== 'events_pkey'));
      // The foreign keys hold: an erased contact's events go with it, through every partition.
      await knex('contacts').where({ id: 'cp' }).delete();
      expect((await knex('events').where({ workspace_id: 'wp' }).orderBy('id').select('id')).map((row: { id: string }) => row.id)).toEqual(['e0', 'e2', 'e4']);

      await partitionEvents.down(knex);
      expect(await partitioned()).toBe(false);
      expect(await indexes()).toEqual(plainIndexes);
      expect((await knex('events').where({ workspace_id: 'wp' }).orderBy('id').select('id')).map((row: { id: string }) => row.id)).toEqual(['e0', 'e2', 'e4']);
      await partitionEvents.up(knex);
      expect(await partitioned()).toBe(true);
    });

    it.runIf(dialect === 'postgres')('PostgreSQL: a message\'s HTML is compressed with lz4, back to the default down, and a message written under either reads the same', async () => {
      const knex = db.knex;
      const method = async () =>
        rowsOf<{ method: string }>(await knex.raw(`SELECT attcompression AS method FROM pg_attribute WHERE attrelid = 'messages'::regclass AND attname = 'html'`))[0]!.method;
      const html = `<p>${'Hello, reader. '.repeat(1_000)}</p>`;
      await knex('workspaces').insert({ id: 'wz', name: 'n', site_id: 'sz', created_at: 1 }).onConflict('id').ignore();
      await knex('contacts').insert({ id: 'cz', workspace_id: 'wz', email: 'z@example.com', email_key: 'z@example.com', properties: '{}', subscription_status: 'subscribed', created_at: 1, updated_at: 1 });
      const message = (id: string) => ({
        id, workspace_id: 'wz', contact_id: 'cz', dedupe_key: id, message_type: 'marketing', to_email: 'z@example.com', status: 'captured', html, created_at: 1, updated_at: 1,
      });
      expect(await method()).toBe('l');
      await knex('messages').insert(message('mz-lz4'));
      await compressMessageHtml.down(knex);
      // '' is the server's default (pglz unless default_toast_compression says otherwise).
      expect(await method()).toBe('');
      await knex('messages').insert(message('mz-default'));
      await compressMessageHtml.up(knex);
      expect(await method()).toBe('l');
      const stored = rowsOf<{ id: string; html: string; method: string }>(
        await knex.raw(`SELECT id, html, pg_column_compression(html) AS method FROM messages WHERE workspace_id = 'wz' ORDER BY id`),
      );
      expect(stored.map((row) => [row.id, row.method, row.html === html])).toEqual([['mz-default', 'pglz', true], ['mz-lz4', 'lz4', true]]);
    });
  });
}
