import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import { join, resolve } from 'node:path';
import { runLoad, type LoadResult } from './load.js';
import { createBenchDatabase, DEFAULT_BENCH_POSTGRES_URL } from './postgres.js';
import { killAll, runJson, startServer, STOP_TIMEOUT_MS, type ServerProcess } from './processes.js';

/**
 * `npm run bench`: emk's two event-ingestion routes on SQLite and PostgreSQL against a bare Fastify route that
 * only parses the same JSON body. Each target runs on a server process of its own (so its peak RSS is its own).
 *
 * Environment: BENCH_DURATION (seconds per target, default 10), BENCH_WARMUP (seconds, default 2),
 * BENCH_CONNECTIONS (default 50), EMK_BENCH_DATABASE_URL (a PostgreSQL server to create the bench database on,
 * default postgres://postgres@127.0.0.1:5432/postgres).
 */

const ROOT = resolve(import.meta.dirname, '../..');
const EMK = join(ROOT, 'bin/emk');
const BARE_SERVER = join(import.meta.dirname, 'bare-server.js');

const positiveNumber = (name: string, fallback: number, allowZero = false): number => {
  const raw = process.env[name];
  if (raw === undefined || raw === '') return fallback;
  const value = Number(raw);
  if (!Number.isFinite(value) || value < 0 || (!allowZero && value === 0)) throw new Error(`${name} must be a positive number`);
  return value;
};

const DURATION_S = positiveNumber('BENCH_DURATION', 10);
const WARMUP_S = positiveNumber('BENCH_WARMUP', 2, true);
const CONNECTIONS = positiveNumber('BENCH_CONNECTIONS', 50);
const CONTACTS = 50;
/** Huge, not 0: the limiter still runs on every request, as in production. */
const HUGE_LIMIT = '1000000000';
/** Pause between the end of a run and SIGTERM: autocannon drops its connections with requests still in flight. */
const SETTLE_MS = 500;

const EMK_ENV: NodeJS.ProcessEnv = {
  ...process.env,
  EMK_LOG_LEVEL: 'warn',
  EMK_LIMIT_WEBHOOK_PER_INTEGRATION: HUGE_LIMIT,
  EMK_LIMIT_WEBHOOK_PER_IP: HUGE_LIMIT,
  EMK_LIMIT_COLLECT_PER_IP: HUGE_LIMIT,
  EMK_LIMIT_COLLECT_PER_SITE: HUGE_LIMIT,
  EMK_LIMIT_COLLECT_PER_IP_SITE: HUGE_LIMIT,
  EMK_LIMIT_AUTH_PER_IP: HUGE_LIMIT,
  EMK_LIMIT_CP_PER_IP: HUGE_LIMIT,
};

type Route = 'collect' | 'events';

interface Row {
  target: string;
  database: string;
  result: LoadResult;
  /** The bare route's requests/s with the same body. */
  bareRps: number;
  peakRssKib: number | null;
}

const log = (message: string) => process.stderr.write(`${message}\n`);

// ---------------------------------------------------------------------------------------------------------
// Request bodies

const PROPERTIES = {
  product_id: 'sku-1042',
  title: 'Merino wool beanie',
  price: 24.9,
  currency: 'EUR',
  url: 'https://shop.bench.test/products/merino-wool-beanie',
  categories: ['accessories', 'winter'],
};

interface Workspace {
  siteId: string;
  apiKey: string;
  contacts: Array<{ id: string; email: string }>;
}

function bodiesFor(route: Route, workspace: Workspace): string[] {
  return workspace.contacts.map((contact) =>
    JSON.stringify(
      route === 'collect'
        ? { site_id: workspace.siteId, event_name: 'viewed_product', email: contact.email, properties: PROPERTIES }
        : { contact_id: contact.id, event_name: 'viewed_product', properties: PROPERTIES },
    ),
  );
}

/** Same shapes, for the bare route, without a workspace. */
function bareBodies(route: Route): string[] {
  return bodiesFor(route, {
    siteId: 'site_0123456789abcdefghij',
    apiKey: '',
    contacts: Array.from({ length: CONTACTS }, (_, i) => ({
      id: `01a1fd88-7e40-7f88-9c98-${String(i).padStart(12, '0')}`,
      email: `bench-${i}@example.com`,
    })),
  });
}

// ---------------------------------------------------------------------------------------------------------
// Running one target

async function postJson(url: string, body: unknown, headers: Record<string, string> = {}): Promise<{ status: number; json: unknown }> {
  const response = await fetch(url, {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...headers },
    body: JSON.stringify(body),
  });
  return { status: response.status, json: await response.json() };
}

/** Checks the route accepts the body before hammering it (a 4xx run measures nothing useful). */
async function checkAccepted(url: string, body: string, headers: Record<string, string>): Promise<void> {
  const { status, json } = await postJson(url, JSON.parse(body), headers);
  if (status < 200 || status >= 300) throw new Error(`${url} answered ${status} ${JSON.stringify(json)}`);
}

async function measure(server: ServerProcess, path: string, bodies: string[], headers: Record<string, string>) {
  const url = `${server.url}${path}`;
  await checkAccepted(url, bodies[0]!, headers);
  if (WARMUP_S > 0) await runLoad({ url, connections: CONNECTIONS, duration: WARMUP_S, headers, bodies });
  const result = await runLoad({ url, connections: CONNECTIONS, duration: DURATION_S, headers, bodies });
  await new Promise((resolve) => setTimeout(resolve, SETTLE_MS));
  const peakRssKib = server.peakRssKib();
  return { result, peakRssKib };
}

async function runBare(route: Route): Promise<Row> {
  log(`bare route, ${route} body…`);
  const server = await startServer('bare server', [BARE_SERVER], { ...process.env, PORT: '0', HOST: '127.0.0.1' }, ROOT);
  try {
    const { result, peakRssKib } = await measure(server, '/bare/event', bareBodies(route), {});
    return {
      target: `bare POST (${route === 'collect' ? '/collect/event' : '/api/v1/events'} body)`,
      database: '-',
      result,
      bareRps: result.requestsPerSecond,
      peakRssKib,
    };
  } finally {
    await server.stop();
  }
}

function startEmk(databaseUrl: string): Promise<ServerProcess> {
  return startServer('emk serve', [EMK, 'serve', '--db', databaseUrl, '--port', '0', '--host', '127.0.0.1'], EMK_ENV, ROOT);
}

/** `emk init --json`, then the contacts the events name, created through the API. */
async function bootstrap(databaseUrl: string): Promise<Workspace> {
  const init = await runJson<{ site_id: string; api_key: string }>(
    [EMK, 'init', '--db', databaseUrl, '--json', '--name', 'Bench shop', '--domain', 'shop.bench.test'],
    EMK_ENV,
    ROOT,
  );
  const server = await startEmk(databaseUrl);
  try {
    const contacts: Workspace['contacts'] = [];
    for (let i = 0; i < CONTACTS; i++) {
      const email = `bench-${i}@example.com`;
      const { status, json } = await postJson(`${server.url}/api/v1/contacts`, { email, properties: { first_name: `Bench ${i}` } }, {
        'x-api-key': init.api_key,
      });
      if (status !== 201 && status !== 200) throw new Error(`creating a contact answered ${status} ${JSON.stringify(json)}`);
      contacts.push({ id: (json as { id: string }).id, email });
    }
    return { siteId: init.site_id, apiKey: init.api_key, contacts };
  } finally {
    await server.stop();
  }
}

async function runEmk(databaseLabel: string, databaseUrl: string, bare: Record<Route, number>, notes: string[]): Promise<Row[]> {
  log(`emk on ${databaseLabel}: bootstrapping…`);
  const workspace = await bootstrap(databaseUrl);
  const targets: Array<{ route: Route; path: string; headers: Record<string, string> }> = [
    { route: 'collect', path: '/collect/event', headers: {} },
    { route: 'events', path: '/api/v1/events', headers: { 'x-api-key': workspace.apiKey } },
  ];
  const rows: Row[] = [];
  for (const { route, path, headers } of targets) {
    log(`emk on ${databaseLabel}: POST ${path}…`);
    const server = await startEmk(databaseUrl);
    try {
      const { result, peakRssKib } = await measure(server, path, bodiesFor(route, workspace), headers);
      rows.push({ target: `emk POST ${path}`, database: databaseLabel, result, bareRps: bare[route], peakRssKib });
    } finally {
      const { code, killed } = await server.stop();
      const where = `emk serve (${databaseLabel}, POST ${path})`;
      if (killed) notes.push(`${where} had not exited ${STOP_TIMEOUT_MS} ms after SIGTERM and was killed`);
      else if (code !== 0) notes.push(`${where} exited with code ${code} after SIGTERM`);
    }
  }
  return rows;
}

// ---------------------------------------------------------------------------------------------------------
// Output

function table(rows: Row[]): string {
  const header = ['target', 'database', 'requests/s', 'p99 (ms)', 'vs bare', 'non-2xx', 'errors', 'peak RSS (MiB)'];
  const lines = rows.map((row) => [
    row.target,
    row.database,
    row.result.requestsPerSecond.toFixed(0),
    row.result.p99LatencyMs.toFixed(0),
    row.bareRps > 0 ? `${((100 * row.result.requestsPerSecond) / row.bareRps).toFixed(1)} %` : '-',
    String(row.result.non2xx),
    String(row.result.errors),
    row.peakRssKib === null ? '-' : (row.peakRssKib / 1024).toFixed(0),
  ]);
  const widths = header.map((title, i) => Math.max(title.length, ...lines.map((line) => line[i]!.length)));
  const format = (cells: string[]) => cells.map((cell, i) => (i < 2 ? cell.padEnd(widths[i]!) : cell.padStart(widths[i]!))).join('  ');
  return [format(header), widths.map((w) => '-'.repeat(w)).join('  '), ...lines.map(format)].join('\n');
}

function machine(loadAtStart: number): string {
  const cpus = os.cpus();
  return [
    `machine: ${cpus.length} cores (${cpus[0]?.model.trim() ?? 'unknown cpu'}), ${(os.totalmem() / 2 ** 30).toFixed(1)} GiB RAM, ` +
      `${os.platform()} ${os.release()}; 1-min load average ${loadAtStart.toFixed(2)} at start, ${os.loadavg()[0]!.toFixed(2)} at end`,
    `node ${process.version}; autocannon: ${CONNECTIONS} connections, ${DURATION_S} s per target after ${WARMUP_S} s warm-up, ` +
      'load generator on the same machine',
  ].join('\n');
}

// ---------------------------------------------------------------------------------------------------------

async function main(): Promise<void> {
  const cleanups: Array<() => Promise<void>> = [];
  const cleanUp = async () => {
    for (const cleanup of cleanups.splice(0).reverse()) {
      try {
        await cleanup();
      } catch (error) {
        log(`cleanup failed: ${error instanceof Error ? error.message : String(error)}`);
      }
    }
  };
  const interrupted = () => {
    killAll();
    void cleanUp().finally(() => process.exit(130));
  };
  process.once('SIGINT', interrupted);
  process.once('SIGTERM', interrupted);

  const loadAtStart = os.loadavg()[0]!;
  const notes: string[] = [];
  const rows: Row[] = [];
  try {
    const bare: Record<Route, number> = { collect: 0, events: 0 };
    for (const route of ['collect', 'events'] as const) {
      const row = await runBare(route);
      bare[route] = row.result.requestsPerSecond;
      rows.push(row);
    }

    const dir = mkdtempSync(join(os.tmpdir(), 'emk-bench-'));
    cleanups.push(async () => rmSync(dir, { recursive: true, force: true }));
    rows.push(...(await runEmk('sqlite', `sqlite:${join(dir, 'bench.db')}`, bare, notes)));

    const postgresServer = process.env.EMK_BENCH_DATABASE_URL ?? DEFAULT_BENCH_POSTGRES_URL;
    const postgres = await createBenchDatabase(postgresServer);
    if ('unreachable' in postgres) {
      notes.push(`PostgreSQL skipped: could not create a database on ${postgresServer} (${postgres.unreachable})`);
    } else {
      cleanups.push(() => postgres.drop());
      rows.push(...(await runEmk('postgres', postgres.url, bare, notes)));
    }
  } finally {
    killAll();
    await cleanUp();
  }

  process.stdout.write(`\n${machine(loadAtStart)}\n\n${table(rows)}\n`);
  for (const note of notes) process.stdout.write(`${note}\n`);
  process.stdout.write(
    '\nrequests/s: autocannon mean of per-second samples; vs bare: requests/s relative to the bare Fastify route ' +
      'with the same body; errors: connection errors and timeouts; peak RSS: VmHWM of the server process.\n',
  );
}

await main();
