import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import { join, resolve } from 'node:path';
import { cpuBetween, cpuSecondsOf, cpuSnapshot, type CpuSplit } from './cpu-split.js';
import { boundsTable } from './bounds.js';
import { runLoad, type LoadOptions, type LoadResult } from './load.js';
import { runWritePath, type DomainCall, type WritePathRun } from './write-path.js';
import { createBenchDatabase, DEFAULT_BENCH_POSTGRES_URL } from './postgres.js';
import { killAll, runJson, startServer, STOP_TIMEOUT_MS, type ServerProcess, type MeasuredRun, type WriteCounters } from './processes.js';
import { measureBatchLatency, measureInsertCeiling, seedContacts, writeEventsFile } from './events-volume.js';
import { snapshotDatabase } from './snapshot.js';
import { measureSyncCeiling, runMeasured, runSync, writeOrdersFile, type SyncRun } from './sync-orders.js';
import { feedsTables, runFeedsBench, type FeedsRun } from './feeds.js';
import { benchFailures } from './verdict.js';
import { runRetentionBench } from './retention.js';
import { runCopyBench, runSizeBench, sizeTables, type CopyRun, type SizeRun, type SizeOptions } from './size.js';
import { automationTables, runAutomationBench, type AutomationOptions, type AutomationRuns } from './automation.js';
import {
  campaignTable,
  runCampaignSend,
  runCampaignWorkers,
  trackingPaths,
  workersTable,
  type CampaignBenchContext,
  type CampaignRow,
  type WorkersRow,
} from './campaign-rows.js';

/**
 * `npm run bench`: emk's two event-ingestion routes on SQLite and PostgreSQL against a bare Fastify route that
 * only parses the same JSON body. Each target runs on a server process of its own (so its peak RSS is its own).
 *
 * Environment: BENCH_DURATION (seconds per target, default 10), BENCH_WARMUP (seconds, default 2),
 * BENCH_CONNECTIONS (default 50), EMK_BENCH_DATABASE_URL (a PostgreSQL server to create the bench database on,
 * default postgres://postgres@127.0.0.1:5432/postgres), BENCH_SYNC_ORDERS (orders in the generated
 * `emk sync-orders` file, default 100000; 0 skips it), BENCH_SYNC_CUSTOMERS (default 20000), BENCH_EVENT_ROWS
 * (rows in the generated `emk events import` file, default 1000000; 0 skips the events-at-volume rows),
 * BENCH_FEEDS_SCALE (size of the generated store of the product-feeds rows relative to issue 5's, default 1;
 * 0 skips them; see feeds.ts), BENCH_FEED_REQUESTS (requests per product-feeds row, default 200),
 * BENCH_FEEDS_DATABASES (`sqlite,postgres` by default), BENCH_EVENT_ROUTES (1 by default; 0 skips the
 * event-route load rows and their bare rows), BENCH_CAMPAIGN_CONTACTS (subscribers of the issue-13 campaign send,
 * default 100000; 0 skips the campaign rows; see campaign-rows.ts), BENCH_CAMPAIGN_MJML (1 by default: the same send
 * again with the message written in MJML, issue 36; 0 skips it), BENCH_CAMPAIGN_WORKERS (`emk worker`
 * processes of the split send on PostgreSQL, default 3; 0 skips that row), BENCH_TRACKING_MESSAGES (captured
 * messages whose real signed links the `GET /t/c/{token}` and `GET /t/o/{token}` load rows request, default 50;
 * 0 skips the tracking rows).
 *
 * Flows and segments (issue 14, see automation.ts): BENCH_AUTOMATION (1 by default; 0 skips every row of theirs),
 * BENCH_TRIGGER_RATE (requests/s of the steady trigger-to-enrolment run, default 500), BENCH_TRIGGER_SECONDS
 * (its length, default 20), BENCH_SEGMENT_SCALE (size of the generated store the big segment is computed over,
 * as BENCH_FEEDS_SCALE, which it follows by default; 0 skips those rows), BENCH_SEGMENT_EVENTS (single events
 * timed through the dispatcher on that store, default 200), BENCH_AUTOMATION_DATABASES (`sqlite,postgres`).
 *
 * Figures at size (issue 35, see size.ts): BENCH_SIZE (0 by default, so skipped; 1 = the issue's store of 1M
 * contacts and 10M events on PostgreSQL, 200k and 2M on SQLite, filled once and kept between runs; smaller for a
 * quick try), BENCH_SIZE_DATABASES (`sqlite,postgres`), BENCH_SIZE_CAMPAIGN (1 by default: a campaign to every
 * subscriber of the store; 0 skips it), BENCH_COPY_EVENTS (events of the demo shop grown for the `emk copy-data`
 * row, default 1000000; 0 skips it). Retention (issue 35, point 3, see retention.ts): BENCH_RETENTION=1 adds the
 * rows pruning a month out of 10M events on PostgreSQL and 2M on SQLite while ingest runs (sizes as `npm run
 * bench:retention` takes them).
 *
 * To run only the campaign and tracking rows: BENCH_EVENT_ROUTES=0 BENCH_SYNC_ORDERS=0 BENCH_EVENT_ROWS=0
 * BENCH_FEEDS_SCALE=0 BENCH_AUTOMATION=0 npm run bench.
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
const SYNC_ORDERS = positiveNumber('BENCH_SYNC_ORDERS', 100_000, true);
const SYNC_CUSTOMERS = positiveNumber('BENCH_SYNC_CUSTOMERS', 20_000);
const EVENT_ROWS = positiveNumber('BENCH_EVENT_ROWS', 1_000_000, true);
const EVENT_CONTACTS = 10_000;
const FEEDS_SCALE = positiveNumber('BENCH_FEEDS_SCALE', 1, true);
const FEED_REQUESTS = positiveNumber('BENCH_FEED_REQUESTS', 200);
const FEEDS_DATABASES: ReadonlySet<string> = new Set((process.env.BENCH_FEEDS_DATABASES ?? 'sqlite,postgres').split(',').map((d) => d.trim()));
const EVENT_ROUTES = positiveNumber('BENCH_EVENT_ROUTES', 1, true) > 0;
const CAMPAIGN_CONTACTS = positiveNumber('BENCH_CAMPAIGN_CONTACTS', 100_000, true);
const CAMPAIGN_WORKERS = positiveNumber('BENCH_CAMPAIGN_WORKERS', 3, true);
const CAMPAIGN_MJML = positiveNumber('BENCH_CAMPAIGN_MJML', 1, true) > 0;
const TRACKING_MESSAGES = positiveNumber('BENCH_TRACKING_MESSAGES', 50, true);
const AUTOMATION = positiveNumber('BENCH_AUTOMATION', 1, true) > 0;
const AUTOMATION_OPTIONS: AutomationOptions = {
  rate: positiveNumber('BENCH_TRIGGER_RATE', 500),
  seconds: positiveNumber('BENCH_TRIGGER_SECONDS', 20),
  connections: CONNECTIONS,
  duration: DURATION_S,
  warmup: WARMUP_S,
  storeScale: positiveNumber('BENCH_SEGMENT_SCALE', FEEDS_SCALE, true),
  storeEvents: positiveNumber('BENCH_SEGMENT_EVENTS', 200),
  databases: new Set((process.env.BENCH_AUTOMATION_DATABASES ?? 'sqlite,postgres').split(',').map((d) => d.trim())),
};
const SIZE_OPTIONS: SizeOptions = {
  scale: positiveNumber('BENCH_SIZE', 0, true),
  databases: new Set((process.env.BENCH_SIZE_DATABASES ?? 'sqlite,postgres').split(',').map((d) => d.trim())),
  requests: FEED_REQUESTS,
  connections: CONNECTIONS,
  duration: DURATION_S,
  warmup: WARMUP_S,
  campaign: positiveNumber('BENCH_SIZE_CAMPAIGN', 1, true) > 0,
  copyEvents: positiveNumber('BENCH_COPY_EVENTS', 1_000_000, true),
};
/** Issue 13: the tracking routes should answer at least this share of the bare route's rate. */
const TRACKING_GOAL_RATIO = 0.3;
const BATCH_REQUESTS = 40;
/** Huge, not 0: the limiter still runs on every request, as in production. */
const HUGE_LIMIT = '1000000000';
/** Pause between the end of a run and SIGTERM: autocannon drops its connections with requests still in flight. */
const SETTLE_MS = 500;

const EMK_ENV: NodeJS.ProcessEnv = {
  ...process.env,
  // The bench measures throughput, not deploys: a server it stops closes at once.
  EMK_DRAIN_GRACE_MS: '0',
  EMK_LOG_LEVEL: 'warn',
  EMK_LIMIT_WEBHOOK_PER_INTEGRATION: HUGE_LIMIT,
  EMK_LIMIT_WEBHOOK_PER_IP: HUGE_LIMIT,
  EMK_LIMIT_COLLECT_PER_IP: HUGE_LIMIT,
  EMK_LIMIT_COLLECT_PER_SITE: HUGE_LIMIT,
  EMK_LIMIT_COLLECT_PER_IP_SITE: HUGE_LIMIT,
  EMK_LIMIT_AUTH_PER_IP: HUGE_LIMIT,
  EMK_LIMIT_CP_PER_IP: HUGE_LIMIT,
};
// Campaign sends are captured: no relay, whatever the caller's environment says.
delete EMK_ENV.EMK_SMTP_URL;

const CAMPAIGN_CONTEXT: CampaignBenchContext = { emk: EMK, root: ROOT, env: EMK_ENV };

type Route = 'collect' | 'events' | 'webhook';

interface Row {
  target: string;
  database: string;
  result: LoadResult;
  /** The bare route's requests/s with the same body. */
  bareRps: number;
  peakRssKib: number | null;
  /** emk's group commits during the measured run (not the warm-up); absent for the bare route. */
  writes?: WriteCounters | null;
  /** Where the CPU went during the measured run. */
  cpu?: CpuSplit | null;
  /** Write-path rows: the worker's drain of the facts the calls recorded. */
  consumed?: WritePathRun['consumed'];
  /** Event-route rows: the route, and how it was driven (HTTP, or its write path alone with so many callers). */
  route?: Route;
  driven?: 'bare' | 'http' | { callers: number };
}

/** Counters accrued between two readings; null when either is missing. */
function countersBetween(before: WriteCounters | null, after: WriteCounters | null): WriteCounters | null {
  if (!before || !after) return null;
  return {
    groups: after.groups - before.groups,
    items: after.items - before.items,
    driver_calls: after.driver_calls - before.driver_calls,
    statements: after.statements - before.statements,
  };
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
  workspaceId: string;
  siteId: string;
  apiKey: string;
  integrationId: string;
  integrationKey: string;
  contacts: Array<{ id: string; email: string }>;
}

let orderSequence = 0;

/** Webhook `order_placed` with 3 items for a customer never seen before (a new contact each time). */
function newOrderBody(): string {
  const n = ++orderSequence;
  return JSON.stringify({
    event_type: 'order_placed',
    external_id: `bench-evt-${process.pid}-${n}`,
    email: `buyer-${process.pid}-${n}@bench.test`,
    order: {
      external_id: `bench-order-${process.pid}-${n}`,
      order_number: String(100000 + n),
      total_amount: 74.7,
      currency: 'EUR',
      status: 'paid',
      ordered_at: new Date().toISOString(),
      items: [
        { external_id: 'sku-1042', title: 'Merino wool beanie', quantity: 1, price: 24.9 },
        { external_id: 'sku-2210', title: 'Wool socks', quantity: 2, price: 12.45 },
        { external_id: 'sku-0007', title: 'Gift wrap', quantity: 1, price: 24.9 },
      ],
    },
  });
}

function bodiesFor(route: Route, workspace: Workspace): string[] {
  if (route === 'webhook') return [newOrderBody()];
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
    workspaceId: '',
    siteId: 'site_0123456789abcdefghij',
    apiKey: '',
    integrationId: '',
    integrationKey: '',
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

/** Checks a GET path answers what the run expects before hammering it. */
async function checkAnswered(url: string, status: number): Promise<void> {
  const response = await fetch(url, { redirect: 'manual' });
  if (response.status !== status) throw new Error(`${url} answered ${response.status}, not ${status}: ${(await response.text()).slice(0, 300)}`);
}

type Requests = Pick<LoadOptions, 'bodies' | 'nextBody' | 'paths' | 'expectStatus'>;

/** POSTs `bodies` to `path`, or GETs `paths` of the server in turn (then `path` is unused). */
async function measure(server: ServerProcess, path: string, requests: Requests, headers: Record<string, string>, options: { countWrites?: boolean } = {}) {
  const url = requests.paths ? `${server.url}${requests.paths[0]!}` : `${server.url}${path}`;
  if (requests.paths) await checkAnswered(url, requests.expectStatus ?? 200);
  else await checkAccepted(url, requests.bodies![0]!, headers);
  const load = { url, connections: CONNECTIONS, headers, ...requests };
  if (WARMUP_S > 0) await runLoad({ ...load, duration: WARMUP_S });
  // Only `emk serve` answers SIGUSR2 with its counters (it would stop a bare node process).
  const counters = () => (options.countWrites ? server.writeCounters() : Promise.resolve(null));
  const before = await counters();
  const cpuBefore = cpuSnapshot(server.pid);
  const result = await runLoad({ ...load, duration: DURATION_S });
  const cpu = cpuBetween(cpuBefore, cpuSnapshot(server.pid));
  await new Promise((resolve) => setTimeout(resolve, SETTLE_MS));
  const writes = countersBetween(before, await counters());
  const peakRssKib = server.peakRssKib();
  return { result, peakRssKib, writes, cpu };
}

const BARE_LABELS: Record<Route, string> = {
  collect: '/collect/event',
  events: '/api/v1/events',
  webhook: 'webhook order',
};

async function runBare(route: Route): Promise<Row> {
  log(`bare route, ${route} body…`);
  const server = await startServer('bare server', [BARE_SERVER], { ...process.env, PORT: '0', HOST: '127.0.0.1' }, ROOT);
  try {
    const { result, peakRssKib, cpu } = await measure(server, '/bare/event', { bodies: bareBodies(route) }, {});
    return {
      target: `bare POST (${BARE_LABELS[route]} body)`,
      database: '-',
      result,
      bareRps: result.requestsPerSecond,
      peakRssKib,
      cpu,
      route,
      driven: 'bare',
    };
  } finally {
    await server.stop();
  }
}

function startEmk(databaseUrl: string): Promise<ServerProcess> {
  return startServer('emk serve', [EMK, 'serve', '--db', databaseUrl, '--port', '0', '--host', '127.0.0.1'], EMK_ENV, ROOT);
}

const emkInit = (databaseUrl: string) =>
  runJson<{ workspace_id: string; site_id: string; api_key: string; integration: { id: string; api_key: string } }>(
    [EMK, 'init', '--db', databaseUrl, '--json', '--name', 'Bench shop', '--domain', 'shop.bench.test'],
    EMK_ENV,
    ROOT,
  );

/** A fresh workspace on a database, and servers on it (for the feeds and automation rows). */
const benchEmk = {
  init: async (url: string) => {
    const init = await emkInit(url);
    return { workspaceId: init.workspace_id, apiKey: init.api_key };
  },
  start: startEmk,
};

/** `emk init --json`, then the contacts the events name, created through the API. */
async function bootstrap(databaseUrl: string): Promise<Workspace> {
  const init = await emkInit(databaseUrl);
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
    return {
      workspaceId: init.workspace_id,
      siteId: init.site_id,
      apiKey: init.api_key,
      integrationId: init.integration.id,
      integrationKey: init.integration.api_key,
      contacts,
    };
  } finally {
    await server.stop();
  }
}

async function runEmk(
  databaseLabel: string,
  databaseUrl: string,
  bare: Record<Route, number>,
  failures: string[],
): Promise<{ rows: Row[]; workspace: Workspace }> {
  log(`emk on ${databaseLabel}: bootstrapping…`);
  const workspace = await bootstrap(databaseUrl);
  const webhookAuthorization = `Bearer ${workspace.integrationKey}`;
  const targets: Array<{ route: Route; path: string; label: string; headers: Record<string, string>; call: DomainCall }> = [
    {
      route: 'collect',
      path: '/collect/event',
      label: 'POST /collect/event',
      headers: {},
      call: async (services, body) => {
        const event = JSON.parse(body) as { site_id: string };
        return services.events.collect((await services.workspaces.findBySiteId(event.site_id)).id, event);
      },
    },
    {
      route: 'events',
      path: '/api/v1/events',
      label: 'POST /api/v1/events',
      headers: { 'x-api-key': workspace.apiKey },
      call: (services, body) => services.events.create(workspace.workspaceId, JSON.parse(body)),
    },
    {
      route: 'webhook',
      path: `/ecom/website/${workspace.integrationId}`,
      label: 'webhook order_placed (3 items, new contact)',
      headers: { authorization: webhookAuthorization },
      call: async (services, body) =>
        services.webhook.handle(await services.integrations.authenticateWebhook(workspace.integrationId, 'website', webhookAuthorization), body),
    },
  ];
  const rows: Row[] = [];
  for (const { route, path, label, headers, call } of EVENT_ROUTES ? targets : []) {
    log(`emk on ${databaseLabel}: ${label}…`);
    const bodies = bodiesFor(route, workspace);
    const server = await startEmk(databaseUrl);
    try {
      const requests: Requests = { bodies, ...(route === 'webhook' ? { nextBody: newOrderBody } : {}) };
      const { result, peakRssKib, writes, cpu } = await measure(server, path, requests, headers, { countWrites: true });
      rows.push({ target: `emk ${label}`, database: databaseLabel, result, bareRps: bare[route], peakRssKib, writes, cpu, route, driven: 'http' });
    } finally {
      await stopChecked(server, `emk serve (${databaseLabel}, ${label})`, failures);
    }
    const nextBody = route === 'webhook' ? newOrderBody : (client: number) => bodies[client % bodies.length]!;
    // All the connections' callers, then half of them: under HTTP a group holds at most about half the
    // connections (the others wait for the commit running), so its write costs what groups of that size cost.
    for (const callers of [CONNECTIONS, Math.max(1, Math.floor(CONNECTIONS / 2))]) {
      log(`emk on ${databaseLabel}: ${label}, write path alone, ${callers} callers…`);
      const alone = await runWritePath(databaseUrl, call, nextBody, { connections: callers, seconds: DURATION_S, warmupSeconds: WARMUP_S });
      const target = `  same, write path alone (no HTTP, ${callers} callers)`;
      rows.push({ target, database: databaseLabel, bareRps: bare[route], peakRssKib: null, route, driven: { callers }, ...alone });
    }
  }
  return { rows, workspace };
}

/** SIGTERM; a server that does not exit 0 in time is a failure. */
async function stopChecked(server: ServerProcess, where: string, failures: string[]): Promise<void> {
  const { code, killed } = await server.stop();
  if (killed) failures.push(`${where} had not exited ${STOP_TIMEOUT_MS} ms after SIGTERM and was killed`);
  else if (code !== 0) failures.push(`${where} exited with code ${code} after SIGTERM`);
}

type TrackingKind = 'click' | 'open';

const TRACKING_TARGETS: Record<TrackingKind, { label: string; bareLabel: string; status: number }> = {
  click: { label: 'GET /t/c/{token} (click, 302)', bareLabel: 'bare GET /t/c/{token} (302)', status: 302 },
  open: { label: 'GET /t/o/{token} (open pixel)', bareLabel: 'bare GET /t/o/{token} (GIF)', status: 200 },
};

/**
 * Tracking (issue 13): real signed links of captured messages (trackingPaths), requested in turn on `emk serve`,
 * each click and open written through the group-commit writer; the bare route answers the same paths with a
 * 302 or a GIF and nothing else (measured once, on the first database's tokens).
 */
async function runTracking(
  databaseLabel: string,
  databaseUrl: string,
  bare: Partial<Record<TrackingKind, Row>>,
  failures: string[],
): Promise<Row[]> {
  log(`tracking on ${databaseLabel}: capturing ${TRACKING_MESSAGES} messages for their links…`);
  const tokenServer = await startEmk(databaseUrl);
  let paths: Record<TrackingKind, string[]>;
  try {
    paths = await trackingPaths(databaseUrl, TRACKING_MESSAGES, tokenServer, CAMPAIGN_CONTEXT);
  } finally {
    await stopChecked(tokenServer, `emk serve (${databaseLabel}, tracking links)`, failures);
  }
  const rows: Row[] = [];
  for (const kind of ['click', 'open'] as const) {
    const { label, bareLabel, status } = TRACKING_TARGETS[kind];
    if (!bare[kind]) {
      log(`bare route, ${label}…`);
      const server = await startServer('bare server', [BARE_SERVER], { ...process.env, PORT: '0', HOST: '127.0.0.1' }, ROOT);
      try {
        const bareRequests = { paths: paths[kind].map((path) => `/bare${path}`), expectStatus: status };
        const { result, peakRssKib } = await measure(server, '', bareRequests, {});
        bare[kind] = { target: bareLabel, database: '-', result, bareRps: result.requestsPerSecond, peakRssKib };
        rows.push(bare[kind]);
      } finally {
        await server.stop();
      }
    }
    log(`emk on ${databaseLabel}: ${label}…`);
    const server = await startEmk(databaseUrl);
    try {
      const { result, peakRssKib, writes } = await measure(server, '', { paths: paths[kind], expectStatus: status }, {}, { countWrites: true });
      rows.push({ target: `emk ${label}`, database: databaseLabel, result, bareRps: bare[kind].result.requestsPerSecond, peakRssKib, writes });
    } finally {
      await stopChecked(server, `emk serve (${databaseLabel}, ${label})`, failures);
    }
  }
  return rows;
}

/** Each emk tracking row against the goal ratio. */
function trackingVerdicts(rows: Row[]): string[] {
  return rows
    .filter((row) => row.target.startsWith('emk GET /t/'))
    .map((row) => {
      const ratio = row.result.requestsPerSecond / row.bareRps;
      return `tracking goal (≥ ${TRACKING_GOAL_RATIO} x the bare route): ${row.target} on ${row.database}: ${ratio.toFixed(2)} x, ${ratio >= TRACKING_GOAL_RATIO ? 'met' : 'not met'}`;
    });
}

interface EventsRow {
  database: string;
  batchP50Ms: number;
  batchP99Ms: number;
  import: { seconds: number; peakRssKib: number | null; rows: number };
  ceilingRowsPerSecond: number;
}

/**
 * Events at volume: `POST /api/v1/events/batch` latency with 1000 events a request, then `emk events import`
 * of the generated file against the plain multi-row insert ceiling of the same rows into the same table, measured
 * in the same run on a snapshot of the database taken just before the import. (Measured instead after the import,
 * on the grown file, 200,000 rows at a time and deleted between runs, SQLite's ceiling moved by half with what ran
 * before it: 9,100–18,100 rows/s for the same code.)
 */
async function runEventsBench(databaseLabel: string, databaseUrl: string, workspace: Workspace, file: string, emails: string[]): Promise<EventsRow> {
  log(`events at volume on ${databaseLabel}: seeding ${EVENT_CONTACTS} contacts…`);
  await seedContacts(databaseUrl, workspace.workspaceId, EVENT_CONTACTS);
  const server = await startEmk(databaseUrl);
  let latency: { p50: number; p99: number };
  try {
    log(`events at volume on ${databaseLabel}: ${BATCH_REQUESTS} batches of 1000…`);
    latency = await measureBatchLatency(server.url, workspace.apiKey, emails, BATCH_REQUESTS);
  } finally {
    await server.stop();
  }
  const snapshot = await snapshotDatabase(databaseUrl);
  let imported: MeasuredRun<{ rows: number }>;
  let ceiling: number;
  try {
    log(`events at volume on ${databaseLabel}: emk events import of ${EVENT_ROWS} rows…`);
    imported = await runMeasured<{ rows: number }>(EMK, ['events', 'import', '--db', databaseUrl, '--file', file], EMK_ENV, ROOT);
    log(`events at volume on ${databaseLabel}: plain insert ceiling of the same rows, on the snapshot…`);
    ceiling = await measureInsertCeiling(snapshot.url, workspace.workspaceId, emails, EVENT_ROWS);
  } finally {
    await snapshot.drop();
  }
  return {
    database: databaseLabel,
    batchP50Ms: latency.p50,
    batchP99Ms: latency.p99,
    import: { seconds: imported.seconds, peakRssKib: imported.peakRssKib, rows: imported.summary.rows },
    ceilingRowsPerSecond: ceiling,
  };
}

/**
 * `emk sync-orders` of the generated file, twice (the second run finds every order already stored), then the
 * plain insert ceiling of the same orders and items, measured in the same run.
 */
async function runSyncBench(databaseLabel: string, databaseUrl: string, workspace: Workspace, file: string): Promise<SyncRow> {
  log(`emk sync-orders on ${databaseLabel}: ${SYNC_ORDERS} orders…`);
  const args = ['--db', databaseUrl, '--file', file];
  const first = await runSync(EMK, args, EMK_ENV, ROOT);
  log(`emk sync-orders on ${databaseLabel}: again…`);
  const second = await runSync(EMK, args, EMK_ENV, ROOT);
  log(`emk sync-orders on ${databaseLabel}: plain insert ceiling…`);
  const ceilingOrdersPerSecond = await measureSyncCeiling(databaseUrl, workspace.workspaceId, SYNC_ORDERS);
  return { database: databaseLabel, first, second, ceilingOrdersPerSecond };
}

interface SyncRow {
  database: string;
  first: SyncRun;
  second: SyncRun;
  ceilingOrdersPerSecond: number;
}

// ---------------------------------------------------------------------------------------------------------
// Output

function eventsTable(rows: EventsRow[]): string {
  const header = [
    'events at volume',
    'database',
    'batch p50 (ms)',
    'batch p99 (ms)',
    'import rows/s',
    'insert ceiling rows/s',
    'import vs ceiling',
    'import peak RSS (MiB)',
  ];
  const lines = rows.map((row) => {
    const rate = row.import.rows / row.import.seconds;
    return [
      `1000-event batches; import of ${row.import.rows} rows`,
      row.database,
      row.batchP50Ms.toFixed(0),
      row.batchP99Ms.toFixed(0),
      rate.toFixed(0),
      row.ceilingRowsPerSecond.toFixed(0),
      `${((100 * rate) / row.ceilingRowsPerSecond).toFixed(0)} %`,
      row.import.peakRssKib === null ? '-' : (row.import.peakRssKib / 1024).toFixed(0),
    ];
  });
  return formatTable(header, lines);
}

function syncTable(rows: SyncRow[]): string {
  const header = [
    'emk sync-orders',
    'database',
    'orders',
    'first run (s)',
    'orders/s',
    'insert ceiling orders/s',
    'sync vs ceiling',
    'second run (s)',
    'peak RSS (MiB)',
  ];
  const lines = rows.map((row) => {
    const rate = row.first.summary.rows / row.first.seconds;
    return [
      `${SYNC_ORDERS} orders, 3 items, ${SYNC_CUSTOMERS} customers`,
      row.database,
      `${row.first.summary.inserted} new / ${row.second.summary.skipped} unchanged`,
      row.first.seconds.toFixed(1),
      rate.toFixed(0),
      row.ceilingOrdersPerSecond.toFixed(0),
      `${((100 * rate) / row.ceilingOrdersPerSecond).toFixed(0)} %`,
      row.second.seconds.toFixed(1),
      (Math.max(row.first.peakRssKib ?? 0, row.second.peakRssKib ?? 0) / 1024).toFixed(0),
    ];
  });
  return formatTable(header, lines);
}

function table(rows: Row[]): string {
  const header = [
    'target',
    'database',
    'requests/s',
    'p50 (ms)',
    'p99 (ms)',
    'vs bare',
    'rows/flush',
    'stmts/flush',
    'calls/flush',
    'non-2xx',
    'errors',
    'peak RSS (MiB)',
  ];
  const perFlush = (row: Row, count: (w: WriteCounters) => number) =>
    row.writes && row.writes.groups > 0 ? (count(row.writes) / row.writes.groups).toFixed(1) : '-';
  const lines = rows.map((row) => [
    row.target,
    row.database,
    row.result.requestsPerSecond.toFixed(0),
    row.result.p50LatencyMs.toFixed(0),
    row.result.p99LatencyMs.toFixed(0),
    row.bareRps > 0 ? `${((100 * row.result.requestsPerSecond) / row.bareRps).toFixed(1)} %` : '-',
    perFlush(row, (w) => w.items),
    perFlush(row, (w) => w.statements),
    perFlush(row, (w) => w.driver_calls),
    String(row.result.non2xx),
    String(row.result.errors),
    row.peakRssKib === null ? '-' : (row.peakRssKib / 1024).toFixed(0),
  ]);
  return formatTable(header, lines);
}

/**
 * Where the CPU went in each row, per request: the server's main thread and its other threads, PostgreSQL's
 * processes and the load generator, and how busy the machine was. A row whose machine is near 100 % is bound by
 * CPU; one whose main thread is near a full core by that thread; one with neither by a wait (a commit).
 */
function cpuTable(rows: Row[]): string {
  const header = ['target', 'database', 'requests/s', 'main µs/req', 'threads µs/req', 'PostgreSQL µs/req', 'load gen µs/req', 'all µs/req', 'main busy', 'machine busy'];
  const lines = rows.flatMap(({ target, database, result, cpu }) => {
    if (!cpu || result.total === 0) return [];
    const perRequest = (seconds: number) => ((seconds * 1e6) / result.total).toFixed(0);
    const onPostgres = database === 'postgres';
    const all = cpuSecondsOf(cpu, onPostgres);
    return [
      [
        target,
        database,
        result.requestsPerSecond.toFixed(0),
        perRequest(cpu.serverMain),
        perRequest(cpu.serverOther),
        onPostgres ? perRequest(cpu.postgres) : '-',
        perRequest(cpu.loadGenerator),
        perRequest(all),
        `${((100 * cpu.serverMain) / DURATION_S).toFixed(0)} %`,
        `${(100 * cpu.machineBusy).toFixed(0)} % of ${cpu.cores}`,
      ],
    ];
  });
  return formatTable(header, lines);
}

/**
 * What the worker spends afterwards on each write-path row's trigger facts, per request: a stored event is not
 * done until its fact is consumed, so a route's CPU budget pays for this too (the HTTP rows' worker holds back
 * under load and consumes the backlog later, outside the measured window).
 */
function consumeTable(rows: Row[]): string {
  const header = ['facts of', 'database', 'facts/request', 'facts/s', 'main µs/req', 'threads µs/req', 'PostgreSQL µs/req', 'all µs/req'];
  const lines = rows.flatMap(({ database, consumed, route, driven }) => {
    if (!consumed?.cpu || consumed.calls === 0) return [];
    // Named by the HTTP row of its route, and its callers.
    const http = rows.find((row) => row.route === route && row.database === database && row.driven === 'http');
    const target = `${http?.target ?? route}${typeof driven === 'object' ? `, ${driven.callers} callers` : ''}`;
    const { cpu } = consumed;
    const perRequest = (seconds: number) => ((seconds * 1e6) / consumed.calls).toFixed(0);
    const onPostgres = database === 'postgres';
    return [
      [
        target,
        database,
        (consumed.facts / consumed.calls).toFixed(2),
        (consumed.facts / consumed.seconds).toFixed(0),
        perRequest(cpu.serverMain),
        perRequest(cpu.serverOther),
        onPostgres ? perRequest(cpu.postgres) : '-',
        perRequest(cpuSecondsOf(cpu, onPostgres)),
      ],
    ];
  });
  return formatTable(header, lines);
}

function formatTable(header: string[], lines: string[][]): string {
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
  /** Steps that failed: printed with the notes, and the bench exits 1. */
  const failures: string[] = [];
  const rows: Row[] = [];
  const syncRows: SyncRow[] = [];
  const eventsRows: EventsRow[] = [];
  const feedsRuns: FeedsRun[] = [];
  let automationRuns: AutomationRuns | null = null;
  const campaignRows: CampaignRow[] = [];
  const workersRows: WorkersRow[] = [];
  const bareTracking: Partial<Record<TrackingKind, Row>> = {};
  let sizeRuns: SizeRun[] = [];
  let copyRun: CopyRun | null = null;
  let retentionTable: string | null = null;
  /** A row whose step throws is reported FAILED and the bench goes on with the next. */
  const attempt = async (what: string, step: () => Promise<void>) => {
    try {
      await step();
    } catch (error) {
      failures.push(`${what} failed: ${error instanceof Error ? error.message : String(error)}`);
    }
  };
  try {
    const bare: Record<Route, number> = { collect: 0, events: 0, webhook: 0 };
    for (const route of EVENT_ROUTES ? (['collect', 'events', 'webhook'] as const) : []) {
      const row = await runBare(route);
      bare[route] = row.result.requestsPerSecond;
      rows.push(row);
    }

    const dir = mkdtempSync(join(os.tmpdir(), 'emk-bench-'));
    cleanups.push(async () => rmSync(dir, { recursive: true, force: true }));
    const ordersFile = join(dir, 'orders.jsonl');
    if (SYNC_ORDERS > 0) {
      const started = performance.now();
      await writeOrdersFile(ordersFile, SYNC_ORDERS, SYNC_CUSTOMERS);
      notes.push(`generated ${SYNC_ORDERS} orders for sync-orders in ${((performance.now() - started) / 1000).toFixed(1)} s (not counted)`);
    }
    const eventsFile = join(dir, 'events.jsonl');
    const eventEmails = Array.from({ length: EVENT_CONTACTS }, (_, i) => `volume-${i}@bench.test`);
    if (EVENT_ROWS > 0) {
      const started = performance.now();
      await writeEventsFile(eventsFile, EVENT_ROWS, eventEmails);
      notes.push(`generated ${EVENT_ROWS} event rows for events import in ${((performance.now() - started) / 1000).toFixed(1)} s (not counted)`);
    }
    const runDatabase = async (label: string, url: string) => {
      const emk = await runEmk(label, url, bare, failures);
      rows.push(...emk.rows);
      if (SYNC_ORDERS > 0) syncRows.push(await runSyncBench(label, url, emk.workspace, ordersFile));
      if (EVENT_ROWS > 0) {
        await attempt(`events at volume on ${label}`, async () => void eventsRows.push(await runEventsBench(label, url, emk.workspace, eventsFile, eventEmails)));
      }
      if (CAMPAIGN_CONTACTS > 0) {
        await attempt(`campaign send on ${label}`, async () =>
          void campaignRows.push(await runCampaignSend(label, url, CAMPAIGN_CONTACTS, CAMPAIGN_CONTEXT, failures)),
        );
        if (CAMPAIGN_MJML) {
          await attempt(`campaign send in MJML on ${label}`, async () =>
            void campaignRows.push(await runCampaignSend(label, url, CAMPAIGN_CONTACTS, CAMPAIGN_CONTEXT, failures, 'mjml')),
          );
        }
        if (label === 'postgres' && CAMPAIGN_WORKERS > 0) {
          await attempt(`campaign send over ${CAMPAIGN_WORKERS} workers on ${label}`, async () =>
            void workersRows.push(await runCampaignWorkers(url, CAMPAIGN_CONTACTS, CAMPAIGN_WORKERS, CAMPAIGN_CONTEXT, failures)),
          );
        }
      }
      if (TRACKING_MESSAGES > 0) {
        await attempt(`tracking on ${label}`, async () => void rows.push(...(await runTracking(label, url, bareTracking, failures))));
      }
    };
    const sqliteUrl = `sqlite:${join(dir, 'bench.db')}`;
    await runDatabase('sqlite', sqliteUrl);

    const postgresServer = process.env.EMK_BENCH_DATABASE_URL ?? DEFAULT_BENCH_POSTGRES_URL;
    const postgres = await createBenchDatabase(postgresServer);
    if ('unreachable' in postgres) {
      notes.push(`PostgreSQL skipped: could not create a database on ${postgresServer} (${postgres.unreachable})`);
    } else {
      cleanups.push(() => postgres.drop());
      await runDatabase('postgres', postgres.url);
    }

    if (AUTOMATION) {
      automationRuns = await runAutomationBench({ dir, postgresServer, emk: benchEmk, options: AUTOMATION_OPTIONS, notes, failures, onCleanup: (c) => cleanups.push(c) });
    }

    const onCleanup = (cleanup: () => Promise<void>) => void cleanups.push(cleanup);
    if (SIZE_OPTIONS.copyEvents > 0) {
      await attempt('emk copy-data', async () => {
        copyRun = await runCopyBench({ dir, postgresServer, ctx: CAMPAIGN_CONTEXT, events: SIZE_OPTIONS.copyEvents, notes, onCleanup });
      });
    }
    if (SIZE_OPTIONS.scale > 0) {
      sizeRuns = await runSizeBench({ postgresServer, emk: benchEmk, ctx: CAMPAIGN_CONTEXT, options: SIZE_OPTIONS, notes, failures, onCleanup });
    }

    if (process.env.BENCH_RETENTION === '1') {
      await attempt('retention', async () => {
        retentionTable = await runRetentionBench();
      });
    }

    if (FEEDS_SCALE > 0) {
      const emk = benchEmk;
      const options = { scale: FEEDS_SCALE, requests: FEED_REQUESTS, databases: FEEDS_DATABASES };
      feedsRuns.push(
        ...(await runFeedsBench({ dir, postgresServer, emk, options, notes, failures, onCleanup: (cleanup) => cleanups.push(cleanup) })),
      );
    }
  } finally {
    killAll();
    await cleanUp();
  }

  process.stdout.write(`\n${machine(loadAtStart)}\n\n${table(rows)}\n`);
  if (rows.some((row) => row.cpu)) process.stdout.write(`\n${cpuTable(rows)}\n`);
  if (rows.some((row) => row.consumed?.cpu)) process.stdout.write(`\n${consumeTable(rows)}\n`);
  const bounds = boundsTable(rows);
  if (bounds[1].length > 0) process.stdout.write(`\nwhat bounds each event route (CPU per request; see docs/performance.md)\n${formatTable(...bounds)}\n`);
  if (syncRows.length > 0) process.stdout.write(`\n${syncTable(syncRows)}\n`);
  if (eventsRows.length > 0) process.stdout.write(`\n${eventsTable(eventsRows)}\n`);
  if (campaignRows.length > 0) process.stdout.write(`\n${formatTable(...campaignTable(campaignRows))}\n`);
  if (workersRows.length > 0) process.stdout.write(`\n${formatTable(...workersTable(workersRows))}\n`);
  for (const [header, lines] of feedsRuns.length > 0 ? feedsTables(feedsRuns, FEEDS_SCALE) : []) {
    process.stdout.write(`\n${formatTable(header, lines)}\n`);
  }
  for (const [header, lines] of automationRuns ? automationTables(automationRuns, AUTOMATION_OPTIONS) : []) {
    process.stdout.write(`\n${formatTable(header, lines)}\n`);
  }
  for (const [header, lines] of sizeTables(sizeRuns, copyRun)) process.stdout.write(`\n${formatTable(header, lines)}\n`);
  if (retentionTable) process.stdout.write(`\npruning the oldest month while ingest runs\n${retentionTable}`);
  for (const note of [...notes, ...trackingVerdicts(rows)]) process.stdout.write(`${note}\n`);
  process.stdout.write(
    '\nrequests/s: autocannon mean of per-second samples; vs bare: requests/s relative to the bare Fastify route ' +
      'with the same body (tracking rows: the bare GET route with the same paths); non-2xx: answers other than ' +
      'the expected (a 302 for /t/c); errors: connection errors and timeouts; peak RSS: VmHWM of the server ' +
      'process. Campaign sends: total from the send call until every message reached an end (the worker row: the ' +
      "campaign's sent_at − started_at; wall: from `emk campaigns send --detach` until the bench saw `sent`).\n",
  );
  const failed = benchFailures(rows, failures);
  for (const failure of failed) process.stdout.write(`FAILED: ${failure}\n`);
  if (failed.length > 0) process.exitCode = 1;
}

await main().catch((error: unknown) => {
  log(`bench failed: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}`);
  process.exitCode = 1;
});
