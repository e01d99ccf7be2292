import { execFile, spawn, type ChildProcess } from 'node:child_process';
import { resolve } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestDatabase, type TestDatabase } from './helpers/test-databases.js';

/**
 * Limits hold across several `emk serve` processes sharing one PostgreSQL database.
 * Runs the compiled CLI (`npm run build` first; `npm test` does it in `pretest`).
 */

const ROOT = resolve(import.meta.dirname, '..');
const EMK = resolve(ROOT, 'bin/emk');
const run = promisify(execFile);

interface Server {
  child: ChildProcess;
  url: string;
  stderr: () => string;
  exited: Promise<number | null>;
}

function startServer(databaseUrl: string, env: Record<string, string>): Promise<Server> {
  const child = spawn(process.execPath, [EMK, 'serve', '--db', databaseUrl, '--port', '0', '--host', '127.0.0.1'], {
    cwd: ROOT,
    env: { ...process.env, EMK_LOG_LEVEL: 'warn', EMK_DRAIN_GRACE_MS: '0', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let stderr = '';
  const exited = new Promise<number | null>((done) => child.once('exit', (code) => done(code)));
  return new Promise<Server>((ready, fail) => {
    const timer = setTimeout(() => fail(new Error(`emk serve did not start within 20 s:\n${stderr}`)), 20_000);
    child.stdout!.resume();
    child.stderr!.setEncoding('utf8');
    child.stderr!.on('data', (chunk: string) => {
      stderr += chunk;
      const match = /emk listening on (\S+)/.exec(stderr);
      if (match) {
        clearTimeout(timer);
        ready({ child, url: match[1]!.replace(/\/+$/, ''), stderr: () => stderr, exited });
      }
    });
    void exited.then((code) => {
      clearTimeout(timer);
      fail(new Error(`emk serve exited with ${code} before listening:\n${stderr}`));
    });
  });
}


describe.skipIf(!process.env.EMK_TEST_DATABASE_URL)('rate limits across two emk serve processes [postgres]', () => {
  let database: TestDatabase;
  const servers: Server[] = [];

  beforeAll(async () => {
    database = await createTestDatabase('postgres');
  });

  afterAll(async () => {
    for (const server of servers) {
      if (server.child.exitCode === null && server.child.signalCode === null) server.child.kill('SIGKILL');
    }
    await Promise.all(servers.map((s) => s.exited));
    await database?.drop();
  });

  it('EMK_LIMIT_COLLECT_PER_SITE=10 is one budget shared by both processes', { timeout: 90_000 }, async () => {
    const { stdout } = await run(process.execPath, [EMK, 'init', '--db', database.url, '--json', '--name', 'Two procs', '--domain', 'd.test'], {
      cwd: ROOT,
      env: { ...process.env, EMK_LOG_LEVEL: 'warn' },
    });
    const init = JSON.parse(stdout) as { workspace_id: string; site_id: string; api_key: string };
    expect(init.site_id).toEqual(expect.any(String));

    const env = { EMK_LIMIT_COLLECT_PER_SITE: '10', EMK_LIMIT_COLLECT_PER_IP: '0', EMK_LIMIT_COLLECT_PER_IP_SITE: '0' };
    servers.push(...(await Promise.all([startServer(database.url, env), startServer(database.url, env)])));
    const [a, b] = servers as [Server, Server];
    expect(a.url).not.toBe(b.url);

    // The two processes read the system clock, and the burst may cross a minute boundary: it does not matter.
    // Crossing after e ms, the k requests of the old window count k·(60000 − e)/60000, so while k·e < 60000
    // (a burst well under 6 s) the same requests pass, with the same RateLimit-Remaining, as inside one window.
    const results: Array<{ server: 'a' | 'b'; status: number; remaining: string | null; retryAfter: string | null }> = [];
    for (let i = 0; i < 12; i++) {
      const server = i % 2 === 0 ? a : b;
      const res = await fetch(`${server.url}/collect/event`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ site_id: init.site_id, event_name: 'page_view', anonymous_id: `v${i}` }),
      });
      const body = await res.text();
      expect([200, 429], body).toContain(res.status);
      if (res.status === 429) {
        expect(JSON.parse(body).error).toBe('rate limit exceeded');
        expect(res.headers.get('content-type')).toMatch(/^application\/json/);
      }
      results.push({
        server: i % 2 === 0 ? 'a' : 'b',
        status: res.status,
        remaining: res.headers.get('ratelimit-remaining'),
        retryAfter: res.headers.get('retry-after'),
      });
    }

    expect(results.filter((r) => r.status === 200)).toHaveLength(10);
    // Sequential requests: the first 10 pass (5 on each process), the last 2 are refused, one on each.
    expect(results.map((r) => r.status)).toEqual([...Array(10).fill(200), 429, 429]);
    expect(results.filter((r) => r.status === 200 && r.server === 'a')).toHaveLength(5);
    // One counter: the remaining count goes down across both processes.
    expect(results.map((r) => r.remaining)).toEqual(['9', '8', '7', '6', '5', '4', '3', '2', '1', '0', '0', '0']);
    for (const refused of results.slice(10)) expect(Number(refused.retryAfter)).toBeGreaterThanOrEqual(1);

    // The events the processes accepted are all stored, the refused ones are not.
    const events = await fetch(`${a.url}/api/v1/events?perPage=100`, { headers: { 'x-api-key': init.api_key } });
    expect(events.status).toBe(200);
    expect(((await events.json()) as { meta: { total: number } }).meta.total).toBe(10);

    for (const server of [a, b]) server.child.kill('SIGTERM');
    const codes = await Promise.all([a.exited, b.exited]);
    expect(codes, `${a.stderr()}\n${b.stderr()}`).toEqual([0, 0]);
  });
});
