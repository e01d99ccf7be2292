import { spawn } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { createServices } from '../src/domain/create-services.js';
import { openDatabase } from '../src/domain/db/database.js';
import { EMK_BIN, runEmk, type CliResult } from './helpers/cli.js';
import { createTestDatabase, databaseUrlWithName, DIALECTS, type TestDatabase } from './helpers/test-databases.js';

/** A failure a person reads: one line on stderr, no stack, no SQL, nothing on stdout. */
function expectOneLineFailure(result: CliResult, code: number, message: RegExp) {
  expect(result.code, result.stderr).toBe(code);
  expect(result.stdout).toBe('');
  const lines = result.stderr.trimEnd().split('\n');
  expect(lines, result.stderr).toHaveLength(1);
  expect(lines[0]).toMatch(/^emk: /);
  expect(lines[0]).toMatch(message);
  expect(result.stderr).not.toMatch(/\n\s+at |select |insert |node_modules/i);
}

/** `emk serve --port 0` until it has said where it listens (and what else it says first), then SIGTERM. */
function serveOnce(databaseUrl: string): Promise<{ stderr: string; code: number | null; port: number }> {
  return new Promise((done, fail) => {
    const child = spawn(process.execPath, [EMK_BIN, 'serve', '--port', '0', '--host', '127.0.0.1', '--db', databaseUrl], {
      env: { ...process.env, EMK_LOG_LEVEL: 'silent', EMK_DRAIN_GRACE_MS: '0' },
    });
    let stderr = '';
    let port = 0;
    const timer = setTimeout(() => {
      child.kill('SIGKILL');
      fail(new Error(`emk serve did not start within 20 s:\n${stderr}`));
    }, 20_000);
    child.stderr.on('data', async (chunk) => {
      stderr += chunk;
      const listening = /emk listening on http:\/\/127\.0\.0\.1:(\d+) \(bound to 127\.0\.0\.1:(\d+)\)\n/.exec(stderr);
      // The hint (when there is one) is written right after the listening line: wait for the health of the
      // server, which answers only once both lines are out.
      if (listening && port === 0) {
        port = Number(listening[1]);
        expect(listening[2]).toBe(listening[1]);
        const res = await fetch(`http://127.0.0.1:${port}/api/v1/contacts`);
        expect(res.status).toBe(401);
        child.kill('SIGTERM');
      }
    });
    child.on('close', (code) => {
      clearTimeout(timer);
      done({ stderr, code, port });
    });
  });
}

for (const dialect of DIALECTS) {
  describe(`the operator's first hour [${dialect}]`, () => {
    let database: TestDatabase;
    beforeAll(async () => {
      database = await createTestDatabase(dialect);
    });
    afterAll(() => database.drop());
    const emk = (args: string[]) => runEmk([...args, '--db', database.url]);
    const json = async (args: string[]) => {
      const result = await emk([...args, '--json']);
      expect(result.code, result.stderr).toBe(0);
      return JSON.parse(result.stdout);
    };

    it('serve on an empty database says where it really listens and, in one line, how to get in', async () => {
      const { stderr, code, port } = await serveOnce(database.url);
      expect(code).toBe(0);
      expect(port).toBeGreaterThan(0);
      expect(stderr).toMatch(/^no workspace yet: create one with `npx emk init`/m);
      // … or see it work with data first.
      expect(stderr).toMatch(/^no workspace yet: .*, or try a demo shop with data: `npx emk seed`$/m);
    });

    it('workspaces list and api-keys create|list|revoke: a lost key or a second init never locks the operator out', async () => {
      const first = await json(['init', '--name', 'First', '--domain', 'first.test']);
      expect((await json(['workspaces', 'list'])).data.map((w: { id: string }) => w.id)).toEqual([first.workspace_id]);
      const second = await json(['init', '--name', 'Second', '--domain', 'second.test']);

      // Two workspaces: every command says how to choose.
      expectOneLineFailure(await emk(['api-keys', 'list']), 2, /2 workspaces: pass --workspace <id> \(`npx emk workspaces list` shows them\)/);
      const listed = (await json(['workspaces', 'list'])).data;
      expect(listed.map((w: { id: string; site_id: string }) => [w.id, w.site_id]).sort()).toEqual(
        [
          [first.workspace_id, first.site_id],
          [second.workspace_id, second.site_id],
        ].sort(),
      );
      const human = await emk(['workspaces', 'list']);
      expect(human.stdout).toContain(`${second.workspace_id}  ${second.site_id}  Second`);

      const created = await json(['api-keys', 'create', '--workspace', first.workspace_id, '--name', 'ops']);
      expect(created.key).toMatch(/^emk_/);
      expect(created).toMatchObject({ name: 'ops', prefix: created.key.slice(0, 12), revoked_at: null });
      const keys = (await json(['api-keys', 'list', '--workspace', first.workspace_id])).data;
      expect(keys.map((k: { name: string }) => k.name)).toEqual(['default', 'ops']);
      expect(JSON.stringify(keys)).not.toContain(created.key);

      const authenticate = async (key: string) => {
        const services = createServices(openDatabase(database.url));
        try {
          return await services.apiKeys.authenticate(key);
        } finally {
          await services.close();
        }
      };
      expect(await authenticate(created.key)).toBe(first.workspace_id);
      expect(await json(['api-keys', 'revoke', created.id, '--workspace', first.workspace_id])).toEqual({ id: created.id, revoked: true });
      const after = (await json(['api-keys', 'list', '--workspace', first.workspace_id])).data;
      expect(after.find((k: { id: string }) => k.id === created.id).revoked_at).not.toBeNull();
      await expect(authenticate(created.key)).rejects.toThrow('invalid api key');
      // Another workspace's key, or none at all: not found.
      expectOneLineFailure(await emk(['api-keys', 'revoke', created.id, '--workspace', second.workspace_id]), 1, /^emk: API key \S+ not found$/);
    });

    it('every failure is one line without a stack, with the right exit code', async () => {
      const ws = (await json(['workspaces', 'list'])).data[0].id as string;
      const missing = join(inject('tmpDir'), `${dialect}-missing.csv`);
      expectOneLineFailure(await emk(['sync-orders', '--file', missing, '--workspace', ws]), 2, /no such file: .*missing\.csv/);
      expectOneLineFailure(await emk(['products', 'import', '--file', missing, '--workspace', ws]), 2, /no such file/);
      expectOneLineFailure(await emk(['events', 'import', '--file', missing, '--workspace', ws]), 2, /no such file/);
      expectOneLineFailure(await emk(['serve', '--port', 'abc']), 2, /--port must be a number \(got "abc"\)/);
      expectOneLineFailure(await emk(['serve', '--port', '70000']), 2, /--port must be at most 65535/);
      const orders = join(inject('tmpDir'), `${dialect}-orders.jsonl`);
      writeFileSync(orders, '{"email":"o@example.com","external_id":"1","order_number":"1","total_amount":5,"currency":"EUR","ordered_at":"2026-09-05T00:00:00Z"}\n');
      for (const value of ['0', '-1', '1.5', 'many']) {
        expectOneLineFailure(await emk(['sync-orders', '--file', orders, '--concurrency', value, '--workspace', ws]), 2, /--concurrency must/);
      }
      const dry = await emk(['sync-orders', '--file', orders, '--dry-run', '--workspace', ws]);
      expect(dry.code, dry.stderr).toBe(0);
      expect(dry.stdout.trim()).toBe('dry run, nothing written: of 1 order 1 would be inserted, 0 updated, 0 left unchanged, 0 rejected');
    });

    it.skipIf(dialect !== 'postgres')('a PostgreSQL database that does not exist, or a server that does not answer, is one line in our words', async () => {
      const absent = databaseUrlWithName(process.env.EMK_TEST_DATABASE_URL!, `emk_absent_${process.pid}`);
      expectOneLineFailure(await runEmk(['migrate', '--db', absent]), 1, /^emk: the database does not exist/);
      const nobody = 'postgres://postgres@127.0.0.1:1/test';
      expectOneLineFailure(await runEmk(['workspaces', 'list', '--db', nobody]), 1, /^emk: cannot connect to the database/);
    });
  });
}
