import { spawn } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import net from 'node:net';
import { join, resolve } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { runEmk } from './helpers/cli.js';
import { createTestDatabase, DIALECTS, TEST_TMP_ROOT } from './helpers/test-databases.js';

/**
 * Rough edges of the CLI (issue 37, point 5): a port in use, `npm start` under SIGTERM, and `--db sqlite:` paths
 * that cannot hold a database. Every case runs the built `bin/emk` (npm run build first).
 */

const ROOT = resolve(import.meta.dirname, '..');
const CHILD_TIMEOUT_MS = 30_000;

mkdirSync(TEST_TMP_ROOT, { recursive: true });
const scratch = mkdtempSync(join(TEST_TMP_ROOT, 'rough-edges-'));
afterAll(() => rmSync(scratch, { recursive: true, force: true }));

function listen(server: net.Server, port = 0): Promise<number> {
  return new Promise((done, fail) => {
    server.once('error', fail);
    server.listen(port, '127.0.0.1', () => done((server.address() as net.AddressInfo).port));
  });
}

async function freePort(): Promise<number> {
  const server = net.createServer();
  const port = await listen(server);
  await new Promise((done) => server.close(done));
  return port;
}

describe.each(DIALECTS)('emk serve on a port in use (%s)', (dialect) => {
  it('prints the port, exits 2, and leaves nothing running', async () => {
    const database = await createTestDatabase(dialect);
    const occupier = net.createServer();
    const port = await listen(occupier);
    try {
      // runEmk resolves only once the process exits: a worker or pool left open would hang it past the timeout.
      const result = await runEmk(['serve', '--db', database.url, '--port', String(port), '--host', '127.0.0.1']);
      expect(result.stderr).toContain(`emk: port ${port} is in use`);
      expect(result.stderr).not.toContain('unexpected error');
      expect(result.code).toBe(2);
    } finally {
      await new Promise((done) => occupier.close(done));
      await database.drop();
    }
  }, CHILD_TIMEOUT_MS);
});

describe('npm start', () => {
  it('passes SIGTERM to the server: it drains, stops answering, and the process tree exits 0', async () => {
    const port = await freePort();
    const child = spawn('npm', ['start', '--silent'], {
      cwd: ROOT,
      env: { ...process.env, PORT: String(port), HOST: '127.0.0.1', EMK_DATABASE_URL: `sqlite:${join(scratch, 'npm-start.db')}`, EMK_DRAIN_GRACE_MS: '0' },
      stdio: ['ignore', 'pipe', 'pipe'],
      // Its own process group, so a server that outlives npm (the failure tested) can still be cleaned up.
      detached: true,
    });
    let stdout = '';
    let stderr = '';
    child.stdout!.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
    child.stderr!.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
    const exited = new Promise<number | null>((done) => child.once('exit', (code) => done(code)));
    const healthz = `http://127.0.0.1:${port}/healthz`;
    try {
      await waitUntil(async () => (await fetch(healthz).catch(() => null))?.ok === true, () => stderr);
      child.kill('SIGTERM');
      expect(await exited).toBe(0);
      // npm waits for its script, so once npm is gone the server must be gone too.
      await expect(fetch(healthz)).rejects.toThrow();
      expect(stdout).toContain('emk stopped');
    } finally {
      try {
        process.kill(-child.pid!, 'SIGKILL');
      } catch {
        // The whole group is gone: the case that passes.
      }
    }
  }, CHILD_TIMEOUT_MS);
});

async function waitUntil(ready: () => Promise<boolean>, log: () => string): Promise<void> {
  const deadline = Date.now() + 20_000;
  while (!(await ready())) {
    if (Date.now() > deadline) throw new Error(`the server did not answer /healthz; stderr:\n${log()}`);
    await new Promise((done) => setTimeout(done, 100));
  }
}

describe('--db sqlite: paths that cannot hold a database', () => {
  it.each([
    ['a folder /proc cannot hold', 'sqlite:/proc/nope/x.db', 'emk: cannot create the database at /proc/nope/x.db: that place cannot hold folders'],
    ['a path under a file', 'sqlite:/dev/null/x.db', 'emk: cannot open the database at /dev/null/x.db: a part of the path is a file, not a folder'],
  ])('%s: one line, exit 1, quickly', async (_case, url, line) => {
    const result = await runEmk(['init', '--name', 'Shop', '--domain', 'shop.example', '--db', url, '--json']);
    expect(result.stderr).toBe(`${line}\n`);
    expect(result.code).toBe(1);
  }, CHILD_TIMEOUT_MS);

  it('a file that is not a database: one line, exit 1', async () => {
    const file = join(scratch, 'notes.db');
    writeFileSync(file, 'not a database, just some notes\n'.repeat(10));
    const result = await runEmk(['workspaces', 'list', '--db', `sqlite:${file}`]);
    expect(result.stderr).toBe('emk: the file given in --db / EMK_DATABASE_URL is not a SQLite database\n');
    expect(result.code).toBe(1);
  }, CHILD_TIMEOUT_MS);

  it('a folder: one line, exit 1', async () => {
    const result = await runEmk(['workspaces', 'list', '--db', `sqlite:${scratch}`]);
    expect(result.stderr).toBe(`emk: cannot open the database at ${scratch}: it is a folder\n`);
    expect(result.code).toBe(1);
  }, CHILD_TIMEOUT_MS);

  it('only init, seed, migrate and serve create a missing database; others say to run emk init', async () => {
    const folder = join(scratch, 'fresh');
    const file = join(folder, 'emk.db');
    for (const args of [['workspaces', 'list'], ['status']]) {
      const result = await runEmk([...args, '--db', `sqlite:${file}`]);
      expect(result.stderr, args.join(' ')).toBe(`emk: no database at ${file}: run emk init\n`);
      expect(result.code, args.join(' ')).toBe(1);
      expect(existsSync(folder), args.join(' ')).toBe(false);
    }
    const migrated = await runEmk(['migrate', '--db', `sqlite:${file}`]);
    expect(migrated.code).toBe(0);
    expect(existsSync(file)).toBe(true);
    const listed = await runEmk(['workspaces', 'list', '--db', `sqlite:${file}`, '--json']);
    expect(listed.code).toBe(0);
  }, CHILD_TIMEOUT_MS);
});
