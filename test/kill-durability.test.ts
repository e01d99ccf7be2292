import { execFile, spawn, type ChildProcess } from 'node:child_process';
import http from 'node:http';
import { resolve } from 'node:path';
import { promisify } from 'node:util';
import { afterEach, describe, expect, it } from 'vitest';
import { openDatabase } from '../src/domain/db/database.js';
import { EMK_BIN, LOAD_TEST_SERVER_ENV } from './helpers/cli.js';
import { createTestDatabase, DIALECTS, type TestDatabase } from './helpers/test-databases.js';

/**
 * Durability under kill -9 (issue 16): a real `emk serve` takes a stream of event writes on three routes from
 * concurrent keep-alive clients (group commits with held writes, the in-process worker consuming) and is
 * killed with SIGKILL mid-stream. Every write acknowledged with a 2xx must be in the database afterwards.
 */

const ROOT = resolve(import.meta.dirname, '..');
const BIN = EMK_BIN;
const execFileAsync = promisify(execFile);

const CHILD_ENV: NodeJS.ProcessEnv = { ...LOAD_TEST_SERVER_ENV, EMK_LIMIT_WEBHOOK_PER_INTEGRATION: '0', EMK_LIMIT_WEBHOOK_PER_IP: '0' };

const CLIENTS_PER_ROUTE = 4;
/** Acknowledged writes per route before the kill: enough that many group commits with several items ran. */
const ACKNOWLEDGED_BEFORE_KILL = 60;
const START_TIMEOUT_MS = 20_000;

interface Init {
  site_id: string;
  api_key: string;
  integration: { id: string; api_key: string };
}

function startServer(databaseUrl: string): Promise<{ child: ChildProcess; port: number }> {
  const child = spawn(process.execPath, [BIN, 'serve', '--db', databaseUrl, '--port', '0', '--host', '127.0.0.1'], {
    cwd: ROOT,
    env: CHILD_ENV,
    stdio: ['ignore', 'ignore', 'pipe'],
  });
  let stderr = '';
  return new Promise((done, fail) => {
    const timer = setTimeout(() => fail(new Error(`emk serve did not start: ${stderr}`)), START_TIMEOUT_MS);
    child.stderr!.on('data', (chunk: Buffer) => {
      stderr += chunk.toString();
      const match = /emk listening on http:\/\/[^:\s]+:(\d+)/.exec(stderr);
      if (match) {
        clearTimeout(timer);
        done({ child, port: Number(match[1]) });
      }
    });
  });
}

/** One request; resolves with its status, or null when the connection died (the kill). */
function post(agent: http.Agent, port: number, path: string, headers: Record<string, string>, body: unknown): Promise<number | null> {
  const payload = JSON.stringify(body);
  return new Promise((done) => {
    const request = http.request(
      { host: '127.0.0.1', port, path, method: 'POST', agent, headers: { 'content-type': 'application/json', 'content-length': Buffer.byteLength(payload), ...headers } },
      (response) => {
        response.resume();
        response.on('end', () => done(response.statusCode ?? null));
        response.on('error', () => done(null));
      },
    );
    request.on('error', () => done(null));
    request.end(payload);
  });
}

const cleanups: Array<() => Promise<void> | void> = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

for (const dialect of DIALECTS) {
  describe(`kill -9 [${dialect}]`, () => {
    it('every write acknowledged with a 2xx before the kill is stored', { timeout: 90_000 }, async () => {
      const database: TestDatabase = await createTestDatabase(dialect);
      cleanups.push(() => database.drop());
      const { stdout } = await execFileAsync(process.execPath, [BIN, 'init', '--db', database.url, '--json', '--name', 'Kill', '--domain', 'kill.test'], {
        cwd: ROOT,
        env: CHILD_ENV,
      });
      const init = JSON.parse(stdout) as Init;
      const server = await startServer(database.url);
      cleanups.push(() => void (server.child.exitCode === null && server.child.signalCode === null && server.child.kill('SIGKILL')));
      const killed = new Promise<void>((done) => server.child.once('exit', () => done()));

      const routes = {
        collect: (n: number) => ({
          path: '/collect/event',
          headers: {},
          body: { site_id: init.site_id, event_name: 'viewed_product', email: `kill-${n % 20}@example.com`, properties: { product_id: `sku-${n % 5}`, seq: n } },
        }),
        events: (n: number) => ({
          path: '/api/v1/events/batch',
          headers: { 'x-api-key': init.api_key },
          body: { events: [{ email: `kill-${n % 20}@example.com`, event_name: 'kill_batch', properties: { seq: n } }] },
        }),
        webhook: (n: number) => ({
          path: `/ecom/website/${init.integration.id}`,
          headers: { authorization: `Bearer ${init.integration.api_key}` },
          body: {
            event_type: 'order_placed',
            external_id: `kill-evt-${n}`,
            email: `buyer-${n}@example.com`,
            order: {
              external_id: `kill-order-${n}`,
              total_amount: 30,
              currency: 'EUR',
              status: 'paid',
              ordered_at: '2026-11-20T10:00:00Z',
              items: [{ external_id: `sku-${n % 5}`, title: 'Item', quantity: 2, price: 15 }],
            },
          },
        }),
      };
      const acknowledged: Record<keyof typeof routes, number[]> = { collect: [], events: [], webhook: [] };
      let seq = 0;
      let stop = false;
      let enough!: () => void;
      const reached = new Promise<void>((done) => (enough = done));
      const client = async (route: keyof typeof routes) => {
        const agent = new http.Agent({ keepAlive: true, maxSockets: 1 });
        try {
          while (!stop) {
            const n = seq++;
            const { path, headers, body } = routes[route](n);
            const status = await post(agent, server.port, path, headers, body);
            if (status === null) break;
            if (status >= 200 && status < 300) acknowledged[route].push(n);
            if (Object.values(acknowledged).every((list) => list.length >= ACKNOWLEDGED_BEFORE_KILL)) enough();
          }
        } finally {
          agent.destroy();
        }
      };
      // The events batch endpoint only knows existing contacts: a collect of each email first.
      const warm = new http.Agent({ keepAlive: true, maxSockets: 1 });
      for (let i = 0; i < 20; i++) {
        expect(await post(warm, server.port, '/collect/event', {}, { site_id: init.site_id, event_name: 'warm', email: `kill-${i}@example.com` })).toBe(200);
      }
      warm.destroy();

      const clients = (Object.keys(routes) as Array<keyof typeof routes>).flatMap((route) => Array.from({ length: CLIENTS_PER_ROUTE }, () => client(route)));
      await reached;
      server.child.kill('SIGKILL');
      await killed;
      stop = true;
      await Promise.all(clients);

      const db = openDatabase(database.url);
      try {
        const seqs = async (eventName: string) =>
          new Set(
            (await db.knex('events').where({ event_name: eventName }).select('properties')).map(
              (row) => (db.dialect.readJson<{ seq: number }>(row.properties)).seq,
            ),
          );
        const collected = await seqs('viewed_product');
        const batched = await seqs('kill_batch');
        const orders = new Set((await db.knex('orders').select('external_id')).map((row) => Number(String(row.external_id).slice('kill-order-'.length))));
        expect(acknowledged.collect.length).toBeGreaterThanOrEqual(ACKNOWLEDGED_BEFORE_KILL);
        expect(acknowledged.collect.filter((n) => !collected.has(n))).toEqual([]);
        expect(acknowledged.events.filter((n) => !batched.has(n))).toEqual([]);
        expect(acknowledged.webhook.filter((n) => !orders.has(n))).toEqual([]);
        // The revenue of every stored order reached its contact (the totals refresh is a held write of the same commit).
        const drift = await db.knex('contacts').whereRaw('lifetime_revenue <> orders_count * 30').count({ n: '*' });
        expect(Number(drift[0]!.n)).toBe(0);
      } finally {
        await db.close();
      }
    });
  });
}
