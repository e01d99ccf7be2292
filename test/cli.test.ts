import { spawnSync } from 'node:child_process';
import { accessSync, constants, readFileSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openDatabase } from '../src/domain/db/database.js';
import { hashSecret } from '../src/domain/shared/ids.js';
import { EMK_BIN, runEmk, runEmkInTerminal } from './helpers/cli.js';
import { createTestDatabase, DIALECTS, type TestDatabase } from './helpers/test-databases.js';

describe('emk command line', () => {
  it('bin/emk is executable and --help lists every command', async () => {
    accessSync(EMK_BIN, constants.X_OK);
    const { code, stdout } = await runEmk(['--help']);
    expect(code).toBe(0);
    for (const command of ['serve', 'migrate', 'init']) expect(stdout).toMatch(new RegExp(`^\\s+${command}\\b`, 'm'));
  });

  it('--version prints the version package.json gives (the built CLI reads it from there)', async () => {
    const { version } = JSON.parse(readFileSync(new URL('../package.json', import.meta.url), 'utf8')) as { version: string };
    const { code, stdout } = await runEmk(['--version']);
    expect(code).toBe(0);
    expect(stdout.trim()).toBe(version);
  });

  it('an unknown command or flag is a usage error: exit 2', async () => {
    expect((await runEmk(['frobnicate'])).code).toBe(2);
    expect((await runEmk(['init', '--frobnicate'])).code).toBe(2);
    expect((await runEmk(['--frobnicate'])).code).toBe(2);
  });

  it('a database url of an unknown kind is a usage error naming the accepted forms', async () => {
    const result = await runEmk(['migrate', '--db', 'mysql://x']);
    expect(result.code).toBe(2);
    expect(result.stderr).toMatch(/sqlite:<path> or postgres:\/\//);
  });
});

for (const dialect of DIALECTS) {
  describe(`emk init and migrate [${dialect}]`, () => {
    let database: TestDatabase;
    let fresh: TestDatabase;
    beforeAll(async () => {
      database = await createTestDatabase(dialect);
      // An empty database (not cloned from the migrated template) for `migrate`.
      fresh = dialect === 'sqlite' ? { url: database.url.replace(/\.db$/, '-fresh.db'), drop: async () => {} } : await createEmptyPostgres();
    });
    afterAll(async () => {
      await database.drop();
      await fresh.drop();
    });

    async function createEmptyPostgres(): Promise<TestDatabase> {
      const name = `emk_t_${process.pid}_empty_${Date.now()}`;
      const admin = openDatabase(process.env.EMK_TEST_DATABASE_URL!);
      await admin.knex.raw('CREATE DATABASE ??', [name]);
      await admin.close();
      const url = new URL(process.env.EMK_TEST_DATABASE_URL!);
      url.pathname = `/${name}`;
      return {
        url: url.toString(),
        drop: async () => {
          const again = openDatabase(process.env.EMK_TEST_DATABASE_URL!);
          await again.knex.raw('DROP DATABASE IF EXISTS ?? WITH (FORCE)', [name]);
          await again.close();
        },
      };
    }

    it('migrate applies every migration to an empty database, then finds nothing to do', async () => {
      const first = await runEmk(['migrate', '--db', fresh.url, '--json']);
      expect(first.code).toBe(0);
      expect(JSON.parse(first.stdout).applied.length).toBeGreaterThanOrEqual(4);
      const again = await runEmk(['migrate', '--db', fresh.url, '--json']);
      expect(JSON.parse(again.stdout)).toEqual({ applied: [] });
    });

    it('init --json prints exactly the contract shape, and the keys work and are stored only as hashes', async () => {
      const { code, stdout, stderr } = await runEmk(['init', '--db', database.url, '--json', '--name', 'Shop', '--domain', 'shop.example']);
      expect(code, stderr).toBe(0);
      const out = JSON.parse(stdout);
      expect(Object.keys(out).sort()).toEqual(['api_key', 'integration', 'site_id', 'workspace_id']);
      expect(Object.keys(out.integration).sort()).toEqual(['api_key', 'domain', 'id', 'platform']);
      expect(out.api_key).toMatch(/^emk_[A-Za-z0-9]{40}$/);
      expect(out.integration).toMatchObject({ platform: 'website', domain: 'shop.example' });
      expect(out.integration.api_key).not.toMatch(/^emk_/);

      const db = openDatabase(database.url);
      try {
        const keys = await db.knex('api_keys').where({ workspace_id: out.workspace_id });
        expect(keys).toHaveLength(1);
        expect(keys[0].key_hash).toBe(hashSecret(out.api_key));
        expect(JSON.stringify(keys)).not.toContain(out.api_key);
        const integrations = await db.knex('integrations').where({ workspace_id: out.workspace_id });
        expect(integrations[0].api_key_hash).toBe(hashSecret(out.integration.api_key));
        expect(JSON.stringify(integrations)).not.toContain(out.integration.api_key);
        const workspace = await db.knex('workspaces').where({ id: out.workspace_id }).first();
        expect(workspace.site_id).toBe(out.site_id);
      } finally {
        await db.close();
      }
    });

    it('init without --name/--domain and without a terminal exits 2 with a hint, printing nothing on stdout', async () => {
      const result = await runEmk(['init', '--db', database.url, '--json']);
      expect(result.code).toBe(2);
      expect(result.stdout).toBe('');
      expect(result.stderr).toMatch(/--name and --domain/);
    });

    it.skipIf(spawnSync('script', ['--version']).status !== 0)('init at a terminal prompts for what is missing', async () => {
      const result = await runEmkInTerminal(['init', '--db', database.url], [
        ['Workspace name', 'Prompted Shop\r'],
        ["Shop's domain", 'prompted.example\r'],
      ]);
      expect(result.code).toBe(0);
      expect(result.stdout).toMatch(/api key\s+emk_/);
      const db = openDatabase(database.url);
      try {
        const workspace = await db.knex('workspaces').where({ name: 'Prompted Shop' }).first();
        expect(workspace).toBeDefined();
        const integration = await db.knex('integrations').where({ workspace_id: workspace.id }).first();
        expect(integration.domain).toBe('prompted.example');
      } finally {
        await db.close();
      }
    });
  });
}
