import { mkdtempSync, rmSync, writeFileSync, existsSync, copyFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import knexFactory from 'knex';
import { afterAll, expect, it } from 'vitest';
import { runEmk } from './helpers/cli.js';
import { describeEachDatabase } from './helpers/harness.js';

/** Reads a SQLite file read-only (no pragmas of ours, nothing written). */
async function readSqlite<T>(file: string, read: (knex: ReturnType<typeof knexFactory>) => Promise<T>): Promise<T> {
  const filename = `${pathToFileURL(file).href}?mode=ro`;
  const knex = knexFactory({ client: 'sqlite3', connection: { filename, flags: ['OPEN_URI'] }, useNullAsDefault: true });
  try {
    return await read(knex);
  } finally {
    await knex.destroy();
  }
}

describeEachDatabase('emk backup and restore', (h, dialect) => {
  const dir = mkdtempSync(join(tmpdir(), 'emk-backup-'));
  afterAll(() => rmSync(dir, { recursive: true, force: true }));
  const db = () => ['--db', h().database.url];

  it.runIf(dialect === 'sqlite')(
    'a backup taken while the app keeps writing holds every row acknowledged before it began, and passes integrity_check',
    async () => {
      const ws = await h().workspace();
      const contact = await h().request({ method: 'POST', url: '/api/v1/contacts', key: ws.apiKey, json: { email: 'load@example.com' } });
      const contactId = contact.json().id as string;
      const acknowledged: string[] = [];
      let writing = true;
      let firstAcks!: () => void;
      const twentyAcknowledged = new Promise<void>((resolve) => (firstAcks = resolve));
      const writer = (async () => {
        for (let n = 0; writing; n++) {
          const reply = await h().request({ method: 'POST', url: '/api/v1/events', key: ws.apiKey, json: { contact_id: contactId, event_name: 'Load', properties: { n } } });
          expect(reply.statusCode).toBe(201);
          acknowledged.push(reply.json().id);
          if (acknowledged.length === 20) firstAcks();
        }
      })();
      // A writer that fails stops waiting at once (its error is thrown below).
      await Promise.race([twentyAcknowledged, writer]);
      const before = [...acknowledged];
      const file = join(dir, 'under-load.db');
      const backup = await runEmk(['backup', ...db(), '--to', file, '--json']);
      const duringBackup = acknowledged.length - before.length;
      writing = false;
      await writer;
      expect(backup.stderr).toBe('');
      expect(backup.code).toBe(0);
      expect(JSON.parse(backup.stdout)).toMatchObject({ file, integrity: 'ok' });
      // The app kept writing while the backup ran: a backup of an idle database would prove nothing.
      expect(duringBackup).toBeGreaterThan(0);
      const { integrity, ids } = await readSqlite(file, async (knex) => ({
        integrity: ((await knex.raw('PRAGMA integrity_check')) as Array<{ integrity_check: string }>)[0]!.integrity_check,
        ids: new Set((await knex('events').where({ workspace_id: ws.id, event_name: 'Load' }).pluck('id')) as string[]),
      }));
      expect(integrity).toBe('ok');
      expect(before.filter((id) => !ids.has(id))).toEqual([]);
      expect(existsSync(`${file}.partial`)).toBe(false);
      // An existing file is never overwritten.
      const again = await runEmk(['backup', ...db(), '--to', file]);
      expect(again.code).toBe(1);
      expect(again.stderr).toContain('already exists');
    },
  );

  it.runIf(dialect === 'sqlite')(
    'restore puts a backup in place; refuses an existing database without --force, one in use even with it, and a file that is no sound database',
    async () => {
      const ws = await h().workspace('Restored shop');
      const backup = join(dir, 'for-restore.db');
      expect((await runEmk(['backup', ...db(), '--to', backup])).code).toBe(0);

      const fresh = join(dir, 'fresh.db');
      const restored = await runEmk(['restore', '--db', `sqlite:${fresh}`, '--from', backup, '--json']);
      expect(restored.stderr).toBe('');
      expect(restored.code).toBe(0);
      expect(JSON.parse(restored.stdout)).toEqual({ database: fresh, from: backup });
      expect(await readSqlite(fresh, (knex) => knex('workspaces').where({ id: ws.id }).pluck('name'))).toEqual(['Restored shop']);

      const other = join(dir, 'other.db');
      copyFileSync(backup, other);
      const refused = await runEmk(['restore', '--db', `sqlite:${fresh}`, '--from', other]);
      expect(refused.code).toBe(1);
      expect(refused.stderr).toContain('pass --force');
      expect((await runEmk(['restore', '--db', `sqlite:${fresh}`, '--from', other, '--force'])).code).toBe(0);

      // The harness's app has the database open: its -wal and -shm files exist.
      const inUse = await runEmk(['restore', ...db(), '--from', backup, '--force']);
      expect(inUse.code).toBe(1);
      expect(inUse.stderr).toContain('looks in use');
      expect((await h().request({ method: 'GET', url: '/api/v1/contacts', key: ws.apiKey })).statusCode).toBe(200);

      const junk = join(dir, 'junk.db');
      writeFileSync(junk, 'not a database, only some text that is long enough to look like a header '.repeat(100));
      const unsound = await runEmk(['restore', '--db', `sqlite:${join(dir, 'never.db')}`, '--from', junk]);
      expect(unsound.code).toBe(1);
      expect(unsound.stderr).toContain('is not a sound SQLite database');
      expect(existsSync(join(dir, 'never.db'))).toBe(false);
    },
  );

  it.runIf(dialect === 'postgres')('on PostgreSQL, backup and restore exit 1 pointing at pg_dump, base backups and docs/operations.md', async () => {
    const backup = await runEmk(['backup', ...db(), '--to', join(dir, 'pg.db')]);
    expect(backup.code).toBe(1);
    expect(backup.stderr).toMatch(/pg_dump.*docs\/operations\.md/);
    expect(existsSync(join(dir, 'pg.db'))).toBe(false);
    const restore = await runEmk(['restore', ...db(), '--from', join(dir, 'pg.db')]);
    expect(restore.code).toBe(1);
    expect(restore.stderr).toMatch(/pg_dump.*docs\/operations\.md/);
  });
});
