import { join } from 'node:path';
import { createServices } from '../src/domain/create-services.js';
import { openDatabase, type Database } from '../src/domain/db/database.js';
import { seedContacts } from './events-volume.js';
import { describeStore, generate, storeSizes } from './feeds.js';
import { runLoad, type LoadResult } from './load.js';
import { createBenchDatabase } from './postgres.js';
import { STOP_TIMEOUT_MS, type ServerProcess } from './processes.js';

/**
 * Flows and segments (issue 14), on a database of their own per target:
 *
 * - Trigger to enrolment: 1000 subscribed contacts, 20 live flows (10 on the custom events the load sends, one
 *   each, with an email step; 10 on names it never sends) and 20 segments (event counts in time windows, an
 *   orders condition, contact properties, nested groups). `POST /api/v1/events` then runs at a steady `rate`
 *   for `seconds` against `emk serve` (its worker in-process): half the events are `viewed_product`, half one
 *   of the 10 flow triggers, for random contacts. Latency of an enrolment = its `created_at` − its event's
 *   `received_at` (both stamped by the server's clock), for every event of the window.
 * - The ingest rate's drop: the most `POST /api/v1/events` requests/s (same bodies, `connections`, warm-up and
 *   duration as the event rows) before the flows and segments exist, with them (the worker consuming), and
 *   again once they are deleted; the drop is taken against the mean of the two runs without. Each of these runs
 *   and the steady one starts with the worker's backlog consumed (outbox facts and due flow steps).
 * - A segment with an event count and an orders condition over the feeds bench's generated store (feeds.ts, at
 *   `storeScale`): `POST /api/v1/segments` computing its members at save, then `storeEvents` single events,
 *   each written through the event service and consumed by one `dispatcher.drainOnce()`, timed apart.
 */

export interface AutomationEmk {
  init(databaseUrl: string): Promise<{ workspaceId: string; apiKey: string }>;
  start(databaseUrl: string): Promise<ServerProcess>;
}

export interface AutomationOptions {
  /** Requests/s of the steady run. */
  rate: number;
  /** Seconds of the steady run. */
  seconds: number;
  /** Of the maximum-rate runs, as the event rows. */
  connections: number;
  duration: number;
  warmup: number;
  /** Size of the generated store relative to issue 5's (0 skips the store rows). */
  storeScale: number;
  /** Single events timed on the store. */
  storeEvents: number;
  databases: ReadonlySet<string>;
}

export interface TriggerRun {
  database: string;
  steady: LoadResult;
  expected: number;
  enrolled: number;
  p50: number;
  p95: number;
  max: number;
  /** Without flows or segments: before they were defined, and after they were deleted. */
  baseline: LoadResult;
  after: LoadResult;
  loaded: LoadResult;
  /** Seconds after the steady run until the outbox and the flow steps were all consumed. */
  caughtUpSeconds: number;
  /** The same after the loaded run. */
  backlogSeconds: number;
}

export interface StoreRun {
  database: string;
  generationSeconds: number;
  members: number;
  /** The first POST, and the same conditions saved again. */
  saveSeconds: [number, number];
  events: number;
  entered: number;
  drainP50: number;
  drainP95: number;
  totalP95: number;
}

export interface AutomationRuns {
  triggers: TriggerRun[];
  store: StoreRun[];
}

const CONTACTS = 1000;
const FLOWS = 10;
const PLANS = ['free', 'plus', 'gold'];
const TRIGGER_LATENCY_GOAL_MS = 1000;
const DROP_GOAL = 0.2;
const SAVE_GOAL_S = 10;
const INCREMENTAL_GOAL_MS = 20;
const DRAIN_POLL_MS = 100;
const DRAIN_TIMEOUT_MS = 600_000;
const SETTLE_MS = 500;

const log = (message: string) => process.stderr.write(`${message}\n`);
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
const seconds = (since: number) => (performance.now() - since) / 1000;

function percentile(sorted: number[], q: number): number {
  return sorted.length === 0 ? NaN : sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))]!;
}

async function remove(server: ServerProcess, apiKey: string, path: string): Promise<void> {
  const response = await fetch(`${server.url}${path}`, { method: 'DELETE', headers: { 'x-api-key': apiKey } });
  if (response.status !== 204) throw new Error(`DELETE ${path} answered ${response.status} ${await response.text()}`);
}

async function post(server: ServerProcess, apiKey: string, path: string, body: unknown): Promise<Record<string, unknown>> {
  const response = await fetch(`${server.url}${path}`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', 'x-api-key': apiKey },
    body: JSON.stringify(body),
  });
  const json = (await response.json()) as Record<string, unknown>;
  if (response.status !== 201 && response.status !== 200) throw new Error(`POST ${path} answered ${response.status} ${JSON.stringify(json)}`);
  return json;
}

// ---------------------------------------------------------------------------------------------------------
// Trigger to enrolment, and the ingest rate's drop

const triggerName = (k: number) => `bench_trigger_${k}`;

/** Half product views, half one of the flows' trigger events, for random contacts. */
function eventBodies(contactIds: string[]): () => string {
  return () => {
    const contact_id = contactIds[Math.floor(Math.random() * contactIds.length)]!;
    const k = Math.floor(Math.random() * 2 * FLOWS);
    return JSON.stringify(
      k < FLOWS
        ? { contact_id, event_name: 'viewed_product', properties: { product_id: `sku-${k * 37}`, price: 10 + k } }
        : { contact_id, event_name: triggerName(k - FLOWS), properties: { value: k } },
    );
  };
}

/**
 * The 20 segments. An `any` group sits inside an `all`: at this commit a top-level `any` is compiled without
 * outer parentheses and knex's whereRaw adds none, so the incremental re-evaluation's `AND`s bind to its last
 * branch only (its inserts then fail on the unique key and every fact of the batch is retried one by one).
 */
const SEGMENTS: Array<{ name: string; conditions: Record<string, unknown> }> = [
  ...[2, 3, 5, 8, 13].map((n) => ({ name: `Viewed ${n}+ in 30 days`, conditions: { all: [{ event: 'viewed_product', count: { gte: n }, within_days: 30 }] } })),
  ...PLANS.map((plan) => ({
    name: `Viewed this week on ${plan}`,
    conditions: { all: [{ event: 'viewed_product', within_days: 7 }, { property: 'plan', operator: 'equals', value: plan }] },
  })),
  { name: 'Viewed 3+ and ordered', conditions: { all: [{ event: 'viewed_product', count: { gte: 3 }, within_days: 30 }, { orders: { count: { gte: 1 } } }] } },
  { name: 'Browsed, never bought', conditions: { all: [{ event: 'viewed_product', count: { gte: 1 } }, { orders: { count: { lte: 0 } } }] } },
  ...[0, 1, 2, 3, 4].map((k) => ({
    name: `Trigger ${k} twice, over ${30 + 5 * k}`,
    conditions: { all: [{ event: triggerName(k), count: { gte: 2 } }, { property: 'age', operator: 'gt', value: 30 + 5 * k }] },
  })),
  ...[5, 6, 7].map((k) => ({
    name: `Trigger ${k} or gold`,
    conditions: { all: [{ any: [{ event: triggerName(k), count: { gte: 1 }, within_days: 1 }, { property: 'plan', operator: 'equals', value: 'gold' }] }] },
  })),
  { name: 'Young or free', conditions: { all: [{ any: [{ property: 'age', operator: 'lt', value: 25 }, { property: 'plan', operator: 'equals', value: 'free' }] }] } },
  { name: 'Named 1…', conditions: { all: [{ property: 'first_name', operator: 'contains', value: 'Bench 1' }] } },
];

/** Creates the flows and segments; returns their paths (to delete them). */
async function defineAutomation(server: ServerProcess, apiKey: string): Promise<string[]> {
  const paths: string[] = [];
  for (let k = 0; k < 2 * FLOWS; k++) {
    const flow = await post(server, apiKey, '/api/v1/flows', {
      name: `Bench flow ${k}`,
      status: 'live',
      // The first FLOWS on the names the load sends, the others on names it never sends.
      trigger: { type: 'event', event_name: k < FLOWS ? triggerName(k) : `bench_unsent_${k}` },
      steps: [{ type: 'email', subject: `Bench flow ${k}`, html: '<p>Hello {{ contact.email }}, thanks for dropping by.</p>' }],
    });
    paths.push(`/api/v1/flows/${String(flow.id)}`);
  }
  if (SEGMENTS.length !== 20) throw new Error(`expected 20 segments, have ${SEGMENTS.length}`);
  for (const segment of SEGMENTS) paths.push(`/api/v1/segments/${String((await post(server, apiKey, '/api/v1/segments', segment)).id)}`);
  return paths;
}

/** Waits until every outbox fact and every due flow step is consumed; how long that took (s). */
async function drained(db: Database): Promise<number> {
  const started = performance.now();
  for (;;) {
    const facts = await db.knex('trigger_outbox').whereNull('processed_at').first('id');
    const steps = facts ? undefined : await db.knex('jobs').where('kind', 'flow.step').whereNull('failed_at').where('run_at', '<=', Date.now()).first('id');
    if (!facts && !steps) return seconds(started);
    if (performance.now() - started > DRAIN_TIMEOUT_MS) throw new Error(`the worker had not consumed its backlog after ${DRAIN_TIMEOUT_MS / 1000} s`);
    await sleep(DRAIN_POLL_MS);
  }
}

/** Enrolment latencies (ms) of the events received in [from, to], and how many trigger events they hold. */
async function latencies(db: Database, workspaceId: string, from: number, to: number) {
  const rows: Array<{ ms: unknown; received_at: unknown }> = await db
    .knex('flow_enrollments as f')
    .join('events as e', 'e.id', 'f.trigger_event_id')
    .where('f.workspace_id', workspaceId)
    .whereBetween('e.received_at', [from, to])
    .select('e.received_at', db.knex.raw('f.created_at - e.received_at AS ms'));
  const [expected] = await db
    .knex('events')
    .where({ workspace_id: workspaceId })
    .whereBetween('received_at', [from, to])
    .whereIn('event_name', Array.from({ length: FLOWS }, (_, k) => triggerName(k)))
    .count({ n: '*' });
  // Where the run's latency came from (stderr): whether the worker kept pace, or fell behind and when.
  const bySecond = new Map<number, number[]>();
  for (const row of rows) {
    const second = Math.floor((Number(row.received_at) - from) / 1000);
    bySecond.set(second, [...(bySecond.get(second) ?? []), Number(row.ms)]);
  }
  const p95s = [...bySecond.entries()].sort(([a], [b]) => a - b).map(([, ms]) => percentile(ms.sort((a, b) => a - b), 0.95).toFixed(0));
  log(`  enrolment latency p95 by second of the run (ms): ${p95s.join(' ')}`);
  return { ms: rows.map((row) => Number(row.ms)).sort((a, b) => a - b), expected: Number(expected!.n) };
}

function checkLoad(result: LoadResult, what: string, failures: string[]): LoadResult {
  if (result.non2xx > 0 || result.errors > 0) failures.push(`${what}: ${result.non2xx} non-2xx answers, ${result.errors} connection errors or timeouts`);
  return result;
}

async function runTriggers(label: string, databaseUrl: string, emk: AutomationEmk, options: AutomationOptions, failures: string[]): Promise<TriggerRun> {
  const { workspaceId, apiKey } = await emk.init(databaseUrl);
  await seedContacts(databaseUrl, workspaceId, CONTACTS, (i) => ({ first_name: `Bench ${i}`, plan: PLANS[i % PLANS.length], age: 18 + (i % 60) }));
  const db = openDatabase(databaseUrl);
  try {
    const contactIds: string[] = await db.knex('contacts').where({ workspace_id: workspaceId }).pluck('id');
    const server = await emk.start(databaseUrl);
    try {
      const load = { url: `${server.url}/api/v1/events`, headers: { 'x-api-key': apiKey }, bodies: ['{}'], nextBody: eventBodies(contactIds) };
      const maxRate = async (what: string) => {
        if (options.warmup > 0) await runLoad({ ...load, connections: options.connections, duration: options.warmup });
        const result = checkLoad(await runLoad({ ...load, connections: options.connections, duration: options.duration }), `${what} on ${label}`, failures);
        await sleep(SETTLE_MS);
        return result;
      };

      // PostgreSQL: autovacuum would analyse the rows of the run before within a minute; done at once, so no run
      // starts on plans made for near-empty tables (seen: p95 of 2 s in the steady run's first seconds, 0.4 s after).
      const analyse = async () => void (db.dialect.name === 'postgres' && (await db.knex.raw('ANALYZE')));

      // Without, with, without again: the two runs without bracket the one with (a process warming up, tables
      // growing), and the drop is taken against their mean.
      log(`automation on ${label}: POST /api/v1/events at full rate, no flows or segments…`);
      const baseline = await maxRate('events at full rate without flows');
      await drained(db);
      log(`automation on ${label}: 20 flows and 20 segments…`);
      const defined = await defineAutomation(server, apiKey);
      await drained(db);
      await analyse();

      log(`automation on ${label}: ${options.rate} events/s for ${options.seconds} s…`);
      const from = Date.now();
      const steady = checkLoad(
        await runLoad({ ...load, connections: options.connections, duration: options.seconds, overallRate: options.rate }),
        `events at ${options.rate}/s on ${label}`,
        failures,
      );
      const to = Date.now();
      const caughtUpSeconds = await drained(db);
      const { ms, expected } = await latencies(db, workspaceId, from, to);
      await analyse();

      log(`automation on ${label}: POST /api/v1/events at full rate, with the flows and segments…`);
      const loaded = await maxRate('events at full rate with flows');
      const backlogSeconds = await drained(db);
      for (const path of defined) await remove(server, apiKey, path);
      await drained(db);
      await analyse();
      log(`automation on ${label}: POST /api/v1/events at full rate, flows and segments deleted…`);
      const after = await maxRate('events at full rate after deleting the flows');
      await drained(db);
      return {
        database: label,
        steady,
        expected,
        enrolled: ms.length,
        p50: percentile(ms, 0.5),
        p95: percentile(ms, 0.95),
        max: ms.at(-1) ?? NaN,
        caughtUpSeconds,
        baseline,
        after,
        loaded,
        backlogSeconds,
      };
    } finally {
      const { code, killed } = await server.stop();
      if (killed) failures.push(`emk serve (automation, ${label}) had not exited ${STOP_TIMEOUT_MS} ms after SIGTERM and was killed`);
      else if (code !== 0) failures.push(`emk serve (automation, ${label}) exited with code ${code} after SIGTERM`);
    }
  } finally {
    await db.close();
  }
}

// ---------------------------------------------------------------------------------------------------------
// A segment over the generated store

const STORE_SEGMENT = {
  name: 'Viewed 3+ in 30 days and ordered',
  conditions: { all: [{ event: 'viewed_product', count: { gte: 3 }, within_days: 30 }, { orders: { count: { gte: 1 } } }] },
};

/** Half buyers outside the segment (a view may bring them in), half members; interleaved. */
async function sampleContacts(db: Database, workspaceId: string, segmentId: string, count: number): Promise<string[]> {
  const outside: string[] = await db
    .knex('contacts as c')
    .where('c.workspace_id', workspaceId)
    .whereNotExists(db.knex('segment_members as m').select(db.knex.raw('1')).where('m.segment_id', segmentId).whereRaw('m.contact_id = c.id'))
    .whereExists(db.knex('orders as o').select(db.knex.raw('1')).whereRaw('o.workspace_id = c.workspace_id AND o.contact_id = c.id'))
    .limit(Math.floor(count / 2))
    .pluck('c.id');
  const members: string[] = await db
    .knex('segment_members')
    .where({ segment_id: segmentId })
    .orderBy('contact_id')
    .limit(count - outside.length)
    .pluck('contact_id');
  const sample: string[] = [];
  for (let i = 0; i < Math.max(outside.length, members.length); i++) sample.push(...[outside[i], members[i]].filter((id): id is string => id !== undefined));
  return sample;
}

async function runStore(label: string, databaseUrl: string, emk: AutomationEmk, options: AutomationOptions): Promise<StoreRun> {
  const { workspaceId, apiKey } = await emk.init(databaseUrl);
  log(`segments on ${label}: generating ${describeStore(options.storeScale)}…`);
  let started = performance.now();
  await generate(databaseUrl, workspaceId, storeSizes(options.storeScale), `segments on ${label}`);
  const generationSeconds = seconds(started);
  if (label === 'postgres') {
    // Autovacuum would have vacuumed the inserted rows by now (PostgreSQL 13+ does after inserts), setting the
    // visibility map that lets the count subqueries be index-only scans; generation only analyses. Untimed.
    started = performance.now();
    const db = openDatabase(databaseUrl);
    try {
      await db.knex.raw('VACUUM ANALYZE');
    } finally {
      await db.close();
    }
    log(`segments on ${label}: VACUUM ANALYZE in ${seconds(started).toFixed(1)} s`);
  }

  log(`segments on ${label}: POST /api/v1/segments (computed at save)…`);
  const server = await emk.start(databaseUrl);
  let segment: { id: string; member_count: number };
  const saveSeconds: [number, number] = [0, 0];
  try {
    for (const i of [0, 1]) {
      started = performance.now();
      const saved = (await post(server, apiKey, '/api/v1/segments', { ...STORE_SEGMENT, name: `${STORE_SEGMENT.name} ${i}` })) as typeof segment;
      saveSeconds[i] = seconds(started);
      if (i === 0) segment = saved;
      // The copy only repeats the save: gone before the incremental rows, which would re-evaluate it too.
      else await fetch(`${server.url}/api/v1/segments/${saved.id}`, { method: 'DELETE', headers: { 'x-api-key': apiKey } });
    }
  } finally {
    await server.stop();
  }

  log(`segments on ${label}: ${options.storeEvents} single events, each consumed by the dispatcher…`);
  const services = createServices(openDatabase(databaseUrl));
  try {
    await services.dispatcher.drain();
    const sample = await sampleContacts(services.db, workspaceId, segment!.id, options.storeEvents);
    const since = Date.now();
    const drains: number[] = [];
    const totals: number[] = [];
    for (const [i, contactId] of sample.entries()) {
      const written = performance.now();
      await services.events.create(workspaceId, { contact_id: contactId, event_name: 'viewed_product', properties: { product_id: `sku-${i}` } });
      const draining = performance.now();
      const consumed = await services.dispatcher.drainOnce();
      const done = performance.now();
      if (consumed !== 1) throw new Error(`the dispatcher consumed ${consumed} facts for one event`);
      drains.push(done - draining);
      totals.push(done - written);
      // A contact who entered has a segment_entered fact now (no flow follows it): consumed apart, untimed.
      await services.dispatcher.drain();
    }
    const [entered] = await services.db.knex('segment_members').where({ segment_id: segment!.id }).where('entered_at', '>=', since).count({ n: '*' });
    drains.sort((a, b) => a - b);
    totals.sort((a, b) => a - b);
    return {
      database: label,
      generationSeconds,
      members: segment!.member_count,
      saveSeconds,
      events: drains.length,
      entered: Number(entered!.n),
      drainP50: percentile(drains, 0.5),
      drainP95: percentile(drains, 0.95),
      totalP95: percentile(totals, 0.95),
    };
  } finally {
    await services.close();
  }
}

// ---------------------------------------------------------------------------------------------------------

/**
 * The rows on SQLite (files in `dir`) and on databases of their own on the PostgreSQL server of
 * `postgresServer`, dropped once measured; `onCleanup` registers the drops for an interrupted run too.
 */
export async function runAutomationBench(args: {
  dir: string;
  postgresServer: string;
  emk: AutomationEmk;
  options: AutomationOptions;
  notes: string[];
  failures: string[];
  onCleanup: (cleanup: () => Promise<void>) => void;
}): Promise<AutomationRuns> {
  const { dir, postgresServer, emk, options, notes, failures } = args;
  const runs: AutomationRuns = { triggers: [], store: [] };
  const attempt = async (what: string, label: string, work: () => Promise<void>) => {
    try {
      await work();
    } catch (error) {
      failures.push(`${what} on ${label} failed: ${error instanceof Error ? error.message : String(error)}`);
    }
  };
  const onDatabase = async (name: string, work: (label: string, url: string) => Promise<void>) => {
    if (options.databases.has('sqlite')) await work('sqlite', `sqlite:${join(dir, `${name}.db`)}`);
    if (!options.databases.has('postgres')) return;
    const postgres = await createBenchDatabase(postgresServer, `emk_bench_${name}_${process.pid}`);
    if ('unreachable' in postgres) {
      notes.push(`${name} on PostgreSQL skipped: could not create a database on ${postgresServer} (${postgres.unreachable})`);
      return;
    }
    args.onCleanup(() => postgres.drop());
    try {
      await work('postgres', postgres.url);
    } finally {
      await postgres.drop();
    }
  };
  await onDatabase('automation', (label, url) =>
    attempt('flows and segments', label, async () => void runs.triggers.push(await runTriggers(label, url, emk, options, failures))),
  );
  if (options.storeScale > 0) {
    await onDatabase('segments', (label, url) => attempt('segment over the store', label, async () => void runs.store.push(await runStore(label, url, emk, options))));
  }
  return runs;
}

const verdict = (met: boolean) => (met ? 'met' : 'not met');

/** The tables, as header and lines for the runner's table printer. */
export function automationTables(runs: AutomationRuns, options: AutomationOptions): Array<[string[], string[][]]> {
  const tables: Array<[string[], string[][]]> = [];
  if (runs.triggers.length > 0) {
    tables.push([
      ['trigger to enrolment', 'database', 'sent/s', 'enrolled / trigger events', 'p50 (ms)', 'p95 (ms)', 'max (ms)', 'caught up after (s)', 'goal (p95)'],
      runs.triggers.map((run) => [
        `${options.rate} POST /api/v1/events/s for ${options.seconds} s, 20 flows, 20 segments`,
        run.database,
        run.steady.requestsPerSecond.toFixed(0),
        `${run.enrolled} / ${run.expected}`,
        run.p50.toFixed(0),
        run.p95.toFixed(0),
        run.max.toFixed(0),
        run.caughtUpSeconds.toFixed(1),
        `< ${TRIGGER_LATENCY_GOAL_MS} ms: ${verdict(run.p95 < TRIGGER_LATENCY_GOAL_MS)}`,
      ]),
    ]);
    tables.push([
      ['ingest with automation', 'database', 'without, before (req/s)', 'with (req/s)', 'without, after (req/s)', 'drop', 'backlog (s)', 'goal (drop)'],
      runs.triggers.map((run) => {
        const drop = 1 - (2 * run.loaded.requestsPerSecond) / (run.baseline.requestsPerSecond + run.after.requestsPerSecond);
        return [
          `POST /api/v1/events, ${options.connections} connections; with 20 flows, 20 segments`,
          run.database,
          run.baseline.requestsPerSecond.toFixed(0),
          run.loaded.requestsPerSecond.toFixed(0),
          run.after.requestsPerSecond.toFixed(0),
          `${(100 * drop).toFixed(1)} %`,
          run.backlogSeconds.toFixed(1),
          `< ${100 * DROP_GOAL} %: ${verdict(drop < DROP_GOAL)}`,
        ];
      }),
    ]);
  }
  if (runs.store.length > 0) {
    tables.push([
      ['segment over the store', 'database', 'generation (s)', 'members', 'save (s)', 'goal (save)', 'events', 'entered', 'drain p50 (ms)', 'drain p95 (ms)', 'write+drain p95 (ms)', 'goal (drain p95)'],
      runs.store.map((run) => [
        `viewed 3+ in 30 days and ordered; ${describeStore(options.storeScale)}`,
        run.database,
        run.generationSeconds.toFixed(0),
        String(run.members),
        `${run.saveSeconds[0].toFixed(2)} / ${run.saveSeconds[1].toFixed(2)}`,
        `< ${SAVE_GOAL_S} s: ${verdict(Math.max(...run.saveSeconds) < SAVE_GOAL_S)}`,
        String(run.events),
        String(run.entered),
        run.drainP50.toFixed(1),
        run.drainP95.toFixed(1),
        run.totalP95.toFixed(1),
        `< ${INCREMENTAL_GOAL_MS} ms: ${verdict(run.drainP95 < INCREMENTAL_GOAL_MS)}`,
      ]),
    ]);
  }
  return tables;
}
