import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openDatabase, type Database } from '../src/domain/db/database.js';
import { migrateToLatest, rollbackAll } from '../src/domain/db/migrate.js';
import { migrations } from '../migrations/index.js';
import { createTestDatabase, DIALECTS, type TestDatabase } from './helpers/test-databases.js';

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
  });
}
