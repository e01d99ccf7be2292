import { createHash } from 'node:crypto';
import { existsSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import { join } from 'node:path';
import { createServices } from '../src/domain/create-services.js';
import { openDatabase } from '../src/domain/db/database.js';
import { createBenchCampaign, type CampaignSendResult } from './campaign-send.js';
import { type CampaignBenchContext } from './campaign-rows.js';
import { databaseSize, generate, measureAll, rebuild, storeSizes, type FeedsEmk, type LatencyRow, type StoreSizes } from './feeds.js';
import { runLoad, type LoadResult } from './load.js';
import { createBenchDatabase, quoteIdent, withAdmin, type BenchDatabase } from './postgres.js';
import { runMeasuredNode } from './processes.js';
import { snapshotDatabase } from './snapshot.js';
import { runMeasured } from './sync-orders.js';

/**
 * Figures at size (issue 35, point 6) and `emk copy-data`'s rate (point 1), behind `BENCH_SIZE` (run.ts).
 *
 * A grown shop, generated with the feeds store's set-based generator (feeds.ts, every row shaped as the domain
 * writes it, then the filter tables and the rankings' aggregates rebuilt by the domain's own functions): on
 * PostgreSQL 1,000,000 contacts (65 % subscribed, each with its first consent entry), 10,000,000 events over 365
 * days (product views, 4 % add-to-carts, product ids from a catalog of 3,000 with a skewed popularity), 200,000
 * orders of 3 items with the buyers' totals; on SQLite 200,000 contacts, 2,000,000 events and 40,000 orders.
 * `scale` multiplies every count (for a quick try). The filled store is kept between runs (PostgreSQL: the
 * template database `emk_bench_size_tpl`; SQLite: a file in the temporary folder) while its fingerprint (sizes,
 * the generator's code, the migrations, the day) matches; each run measures on a copy of it, dropped afterwards.
 *
 * On the copy, with one `emk serve`: a segment's full compute (viewed a product at least twice in 30 days and
 * subscribed, computed at `POST /api/v1/segments`), the feeds bench's ranking rows (feeds.ts), ingest through
 * `POST /api/v1/events` (autocannon as the event rows), the export and then the erasure of one buyer; then a
 * campaign to every subscriber, sent by a process of its own (campaign.ts) to the capture, with its peak RSS.
 *
 * `emk copy-data`: the demo shop (`emk seed`) grown to `copyEvents` events by copying its own events (new ids,
 * each copy a week further back), copied from SQLite into a fresh PostgreSQL database; rows/s of the whole
 * command, verification included.
 */

export interface SizeOptions {
  /** Multiplies the issue's counts (1 = 1M contacts / 10M events on PostgreSQL, 200k / 2M on SQLite); 0 skips. */
  scale: number;
  databases: ReadonlySet<string>;
  /** Requests per ranking row. */
  requests: number;
  /** Autocannon, as the event rows. */
  connections: number;
  duration: number;
  warmup: number;
  /** Send the campaign to every subscriber. */
  campaign: boolean;
  /** Events of the grown demo shop copied by `emk copy-data` (0 skips that row). */
  copyEvents: number;
}

const DAY_MS = 86_400_000;
const ISSUE_SIZES: Record<string, { contacts: number; events: number }> = {
  postgres: { contacts: 1_000_000, events: 10_000_000 },
  sqlite: { contacts: 200_000, events: 2_000_000 },
};
const CATALOG = 3_000;
const SUBSCRIBED_PERCENT = 65;
const WINDOW_DAYS = 365;
const SEGMENT = {
  name: 'Viewed twice in 30 days, subscribed',
  conditions: { all: [{ event: 'viewed_product', count: { gte: 2 }, within_days: 30 }, { subscription_status: 'subscribed' }] },
};
const INGEST_BODIES = 1000;
const TEMPLATE = 'emk_bench_size_tpl';
/** A quick try at another scale keeps its own store, not replacing the issue's. */
const templateName = (scale: number) => (scale === 1 ? TEMPLATE : `${TEMPLATE}_${String(scale).replace(/\W/g, '_')}`);

const log = (message: string) => process.stderr.write(`${message}\n`);
const secondsSince = (started: number) => (performance.now() - started) / 1000;

/** The grown shop's counts on a database at `scale`. */
export function sizeStore(database: string, scale: number): StoreSizes {
  const target = ISSUE_SIZES[database]!;
  const of = (n: number) => Math.max(1, Math.round(n * scale));
  const contacts = of(target.contacts);
  // Every 26th generated event is an add-to-cart (feeds.ts): views chosen so the total is the target.
  const views = Math.round((of(target.events) * 25) / 26);
  return {
    ...storeSizes(1),
    products: of(CATALOG),
    contacts,
    orders: Math.max(1, Math.round(contacts / 5)),
    views,
    events: views + Math.ceil(views / 25),
    carts: of(3_000),
    windowDays: WINDOW_DAYS,
    subscribedPercent: SUBSCRIBED_PERCENT,
  };
}

/** Generated contact ids (feeds.ts's `id('c0000000', n)`). */
const contactId = (n: number) => `c0000000-0000-7000-8000-${n.toString(16).padStart(12, '0')}`;

// ---------------------------------------------------------------------------------------------------------
// The filled store, kept between runs

interface StoreMeta {
  fingerprint: string;
  workspaceId: string;
  apiKey: string;
  fillSeconds: number;
  rebuildSeconds: number;
}

/** What makes a kept store stale: its sizes, the generator's code (feeds.ts), the migrations, and the day (rows are dated from now). */
function fingerprint(sizes: StoreSizes, root: string): string {
  const hash = createHash('sha256');
  hash.update(JSON.stringify(sizes));
  hash.update(new Date().toISOString().slice(0, 10));
  hash.update(readFileSync(join(import.meta.dirname, 'feeds.js')));
  hash.update(readdirSync(join(root, 'migrations')).sort().join('\n'));
  return hash.digest('hex').slice(0, 16);
}

/** Fills a fresh database: a workspace (`emk init`), the generated rows, the derived data, statistics. */
async function fill(url: string, sizes: StoreSizes, label: string, emk: FeedsEmk, print: string): Promise<Omit<StoreMeta, 'fingerprint'>> {
  const { workspaceId, apiKey } = await emk.init(url);
  log(`size on ${label}: generating ${print}…`);
  let started = performance.now();
  await generate(url, workspaceId, sizes, `size on ${label}`);
  const fillSeconds = secondsSince(started);
  started = performance.now();
  const services = createServices(openDatabase(url));
  try {
    await rebuild(services, workspaceId, `size on ${label}`);
    // As automation.ts: autovacuum would have vacuumed the inserted rows by the time a shop has grown this far.
    await services.db.knex.raw(services.db.dialect.name === 'postgres' ? 'VACUUM ANALYZE' : 'ANALYZE');
  } finally {
    await services.close();
  }
  return { workspaceId, apiKey, fillSeconds, rebuildSeconds: secondsSince(started) };
}

/** The kept PostgreSQL template, filled first if missing or stale; its meta is the database's comment. */
async function postgresStore(adminUrl: string, name: string, sizes: StoreSizes, emk: FeedsEmk, root: string, print: string) {
  const wanted = fingerprint(sizes, root);
  const url = new URL(adminUrl);
  url.pathname = `/${name}`;
  const kept = await withAdmin(adminUrl, async (client) => {
    const { rows } = await client.query<{ meta: string | null }>(
      `SELECT shobj_description(oid, 'pg_database') AS meta FROM pg_database WHERE datname = $1`,
      [name],
    );
    return rows[0]?.meta ? (JSON.parse(rows[0].meta) as StoreMeta) : null;
  });
  if (kept?.fingerprint === wanted) return { url: url.toString(), meta: kept, cached: true };
  const created = await createBenchDatabase(adminUrl, name);
  if ('unreachable' in created) throw new Error(created.unreachable);
  const meta = { fingerprint: wanted, ...(await fill(created.url, sizes, 'postgres', emk, print)) };
  await withAdmin(adminUrl, (client) => client.query(`COMMENT ON DATABASE ${quoteIdent(name)} IS '${JSON.stringify(meta).replaceAll("'", "''")}'`));
  return { url: created.url, meta, cached: false };
}

/** The kept SQLite file (in the temporary folder, its meta beside it), filled first if missing or stale. */
async function sqliteStore(name: string, sizes: StoreSizes, emk: FeedsEmk, root: string, print: string) {
  const wanted = fingerprint(sizes, root);
  const path = join(os.tmpdir(), `${name}.db`);
  const metaPath = `${path}.json`;
  const kept = existsSync(metaPath) && existsSync(path) ? (JSON.parse(readFileSync(metaPath, 'utf8')) as StoreMeta) : null;
  if (kept?.fingerprint === wanted) return { url: `sqlite:${path}`, meta: kept, cached: true };
  for (const file of [path, `${path}-wal`, `${path}-shm`, metaPath]) rmSync(file, { force: true });
  const meta = { fingerprint: wanted, ...(await fill(`sqlite:${path}`, sizes, 'sqlite', emk, print)) };
  writeFileSync(metaPath, JSON.stringify(meta));
  return { url: `sqlite:${path}`, meta, cached: false };
}

// ---------------------------------------------------------------------------------------------------------
// Measuring on a copy

export interface SizeRun {
  database: string;
  sizes: StoreSizes;
  subscribed: number;
  /** null: the kept store was reused. */
  fillSeconds: number | null;
  rebuildSeconds: number | null;
  copySeconds: number;
  sizeBytes: number;
  segment: { seconds: number; members: number };
  rankings: LatencyRow[];
  ingest: LoadResult;
  person: { events: number; orders: number; exportSeconds: number; exportBytes: number; eraseSeconds: number };
  campaign: { recipients: number; captured: number; seconds: number; messagesPerSecond: number; peakRssKib: number | null } | null;
}

async function call(url: string, init: RequestInit & { expect: number }): Promise<{ seconds: number; body: string }> {
  const started = performance.now();
  const response = await fetch(url, init);
  const body = await response.text();
  const seconds = secondsSince(started);
  if (response.status !== init.expect) throw new Error(`${init.method ?? 'GET'} ${url} answered ${response.status} ${body.slice(0, 300)}`);
  return { seconds, body };
}

async function measureOnCopy(
  label: string,
  url: string,
  meta: StoreMeta,
  sizes: StoreSizes,
  options: SizeOptions,
  emk: FeedsEmk,
  ctx: CampaignBenchContext,
  notes: string[],
  failures: string[],
): Promise<Omit<SizeRun, 'fillSeconds' | 'rebuildSeconds' | 'copySeconds'>> {
  const { workspaceId, apiKey } = meta;
  const headers = { 'content-type': 'application/json', 'x-api-key': apiKey };
  const db = openDatabase(url);
  let buyers: string[];
  let subscribed: number;
  let sizeBytes: number;
  try {
    sizeBytes = await databaseSize(db, url);
    // Order ids are sequential and their contacts random: the first orders name random buyers, who also viewed.
    buyers = (await db.knex('orders').where({ workspace_id: workspaceId }).orderBy('id').limit(500).select('contact_id')).map(
      (row: { contact_id: string }) => row.contact_id,
    );
    subscribed = Number((await db.knex('contacts').where({ workspace_id: workspaceId, subscription_status: 'subscribed' }).count({ n: '*' }))[0]!.n);
  } finally {
    await db.close();
  }
  const person = buyers[0]!;

  const server = await emk.start(url);
  let segment: SizeRun['segment'];
  let rankings: LatencyRow[];
  let ingest: LoadResult;
  let personRow: SizeRun['person'];
  try {
    log(`size on ${label}: POST /api/v1/segments (full compute at save)…`);
    const saved = await call(`${server.url}/api/v1/segments`, { method: 'POST', headers, body: JSON.stringify(SEGMENT), expect: 201 });
    segment = { seconds: saved.seconds, members: (JSON.parse(saved.body) as { member_count: number }).member_count };
    log(`size on ${label}: segment computed in ${saved.seconds.toFixed(1)} s, ${segment.members} members`);

    rankings = await measureAll(server, apiKey, buyers, `size/${label}`, options.requests, notes);
    log(`size on ${label}: ranking p95 (ms) ${rankings.map((row) => row.p95.toFixed(1)).join(' / ')}`);

    log(`size on ${label}: POST /api/v1/events, ${options.connections} connections…`);
    const bodies = Array.from({ length: INGEST_BODIES }, (_, i) =>
      JSON.stringify({
        contact_id: contactId(Math.floor(Math.random() * sizes.contacts)),
        event_name: 'viewed_product',
        properties: { product_id: `sku-${(i * 7) % sizes.products}`, price: 10 + (i % 40) },
      }),
    );
    const load = { url: `${server.url}/api/v1/events`, headers: { 'x-api-key': apiKey }, bodies, connections: options.connections };
    if (options.warmup > 0) await runLoad({ ...load, duration: options.warmup });
    ingest = await runLoad({ ...load, duration: options.duration });
    log(`size on ${label}: ingest ${ingest.requestsPerSecond.toFixed(0)} events/s, p99 ${ingest.p99LatencyMs.toFixed(0)} ms`);
    if (ingest.non2xx > 0 || ingest.errors > 0) failures.push(`size ingest on ${label}: ${ingest.non2xx} non-2xx answers, ${ingest.errors} connection errors or timeouts`);

    const counts = openDatabase(url);
    let events: number;
    let orders: number;
    try {
      events = Number((await counts.knex('events').where({ contact_id: person }).count({ n: '*' }))[0]!.n);
      orders = Number((await counts.knex('orders').where({ contact_id: person }).count({ n: '*' }))[0]!.n);
    } finally {
      await counts.close();
    }
    log(`size on ${label}: export, then erasure, of one buyer (${events} events, ${orders} orders)…`);
    const exported = await call(`${server.url}/api/v1/contacts/${person}/export`, { headers: { 'x-api-key': apiKey }, expect: 200 });
    const erased = await call(`${server.url}/api/v1/contacts/${person}`, { method: 'DELETE', headers: { 'x-api-key': apiKey }, expect: 204 });
    personRow = { events, orders, exportSeconds: exported.seconds, exportBytes: Buffer.byteLength(exported.body), eraseSeconds: erased.seconds };
    log(`size on ${label}: export ${ms(exported.seconds)} ms, erasure ${ms(erased.seconds)} ms`);
  } finally {
    await server.stop();
  }

  let campaign: SizeRun['campaign'] = null;
  if (options.campaign) {
    const db = openDatabase(url);
    const services = createServices(db);
    let campaignId: string;
    try {
      // The issue asks for a campaign to 1M subscribers: on this copy (the last row, so the others saw the store's
      // 65 %), every contact of the store becomes a subscriber first.
      await db.knex('contacts').where({ workspace_id: workspaceId }).whereNot({ subscription_status: 'subscribed' }).update({ subscription_status: 'subscribed' });
      campaignId = await createBenchCampaign(services, workspaceId, 'news@shop.bench.test');
    } finally {
      await services.close();
    }
    log(`size on ${label}: campaign to every contact (all subscribed on the copy), one process…`);
    const run = await runMeasuredNode<CampaignSendResult>('campaign.js --send', [join(import.meta.dirname, 'campaign.js'), '--send', url, workspaceId, campaignId], ctx.env, ctx.root);
    const result = run.summary;
    if (result.captured !== result.recipients || result.failed > 0) {
      failures.push(`size campaign on ${label}: ${result.recipients} recipients, ${result.captured} captured, ${result.failed} failed`);
    }
    log(`size on ${label}: campaign ${result.captured} captured, ${result.messagesPerSecond} messages/s, peak RSS ${run.peakRssKib} KiB`);
    campaign = { recipients: result.recipients, captured: result.captured, seconds: result.totalSeconds, messagesPerSecond: result.messagesPerSecond, peakRssKib: run.peakRssKib };
  }
  return { database: label, sizes, subscribed, sizeBytes, segment, rankings, ingest, person: personRow, campaign };
}

const describe = (s: StoreSizes) =>
  `${s.contacts} contacts (${s.subscribedPercent} % subscribed), ${s.events} events over ${s.windowDays} days, ${s.orders} orders, ${s.products} products`;

/** The size rows on each database of `options.databases`; the copy of the kept store is dropped afterwards. */
export async function runSizeBench(args: {
  postgresServer: string;
  emk: FeedsEmk;
  ctx: CampaignBenchContext;
  options: SizeOptions;
  notes: string[];
  failures: string[];
  onCleanup: (cleanup: () => Promise<void>) => void;
}): Promise<SizeRun[]> {
  const { postgresServer, emk, ctx, options, notes, failures } = args;
  const runs: SizeRun[] = [];
  for (const label of ['sqlite', 'postgres'].filter((d) => options.databases.has(d))) {
    try {
      const sizes = sizeStore(label, options.scale);
      const store =
        label === 'postgres'
          ? await postgresStore(postgresServer, templateName(options.scale), sizes, emk, ctx.root, describe(sizes))
          : await sqliteStore(templateName(options.scale), sizes, emk, ctx.root, describe(sizes));
      if (store.cached) log(`size on ${label}: reusing the kept store (${describe(sizes)})`);
      let started = performance.now();
      const copy: BenchDatabase = await snapshotDatabase(store.url);
      args.onCleanup(() => copy.drop());
      const copySeconds = secondsSince(started);
      log(`size on ${label}: store ready (${describe(sizes)}), copied for the run in ${copySeconds.toFixed(0)} s`);
      try {
        started = performance.now();
        const measured = await measureOnCopy(label, copy.url, store.meta, sizes, options, emk, ctx, notes, failures);
        runs.push({
          ...measured,
          fillSeconds: store.cached ? null : store.meta.fillSeconds,
          rebuildSeconds: store.cached ? null : store.meta.rebuildSeconds,
          copySeconds,
        });
      } finally {
        await copy.drop();
      }
    } catch (error) {
      failures.push(`size on ${label} failed: ${error instanceof Error ? error.message : String(error)}`);
    }
  }
  return runs;
}

// ---------------------------------------------------------------------------------------------------------
// emk copy-data on the demo shop grown

export interface CopyRun {
  events: number;
  rows: number;
  seconds: number;
  peakRssKib: number | null;
  growSeconds: number;
}

/** Grows the demo shop's events to `target` by copying them (new ids and dedupe keys, each pass a week further back). */
async function growEvents(url: string, target: number): Promise<number> {
  const db = openDatabase(url);
  try {
    const count = async () => Number((await db.knex('events').count({ n: '*' }))[0]!.n);
    let have = await count();
    if (have === 0) throw new Error('the demo shop has no events to grow');
    for (let pass = 1; have < target; pass++) {
      await db.writeTransaction((trx) =>
        trx.raw(
          `INSERT INTO events (id, workspace_id, contact_id, anonymous_id, event_name, properties, source, dedupe_key, created_at, received_at)
           SELECT printf('%08x-0000-7000-8000-%012x', ?, rowid), workspace_id, contact_id, anonymous_id, event_name, properties, source,
             CASE WHEN dedupe_key IS NULL THEN NULL ELSE dedupe_key || '-' || ? END, created_at - ?, received_at - ?
           FROM events ORDER BY rowid LIMIT ?`,
          [0xe0000000 + pass, pass, pass * 7 * DAY_MS, pass * 7 * DAY_MS, target - have],
        ),
      );
      have = await count();
    }
    await db.knex.raw('PRAGMA wal_checkpoint(TRUNCATE)');
    return have;
  } finally {
    await db.close();
  }
}

export async function runCopyBench(args: {
  dir: string;
  postgresServer: string;
  ctx: CampaignBenchContext;
  events: number;
  notes: string[];
  onCleanup: (cleanup: () => Promise<void>) => void;
}): Promise<CopyRun | null> {
  const { dir, postgresServer, ctx, events, notes } = args;
  const target = await createBenchDatabase(postgresServer, `emk_bench_copy_${process.pid}`);
  if ('unreachable' in target) {
    notes.push(`emk copy-data skipped: could not create a database on ${postgresServer} (${target.unreachable})`);
    return null;
  }
  args.onCleanup(() => target.drop());
  try {
    const source = `sqlite:${join(dir, 'demo-grown.db')}`;
    log(`emk copy-data: the demo shop grown to ${events} events…`);
    const started = performance.now();
    await runMeasured(ctx.emk, ['seed', '--db', source], ctx.env, ctx.root);
    const grown = await growEvents(source, events);
    const growSeconds = secondsSince(started);
    log(`emk copy-data: SQLite → PostgreSQL…`);
    const run = await runMeasured<{ rows: number; verified: boolean }>(ctx.emk, ['copy-data', '--from', source, '--to', target.url], ctx.env, ctx.root);
    if (!run.summary.verified) throw new Error('emk copy-data did not verify the copy');
    log(`emk copy-data: ${run.summary.rows} rows in ${run.seconds.toFixed(1)} s, ${(run.summary.rows / run.seconds).toFixed(0)} rows/s`);
    return { events: grown, rows: run.summary.rows, seconds: run.seconds, peakRssKib: run.peakRssKib, growSeconds };
  } finally {
    await target.drop();
  }
}

// ---------------------------------------------------------------------------------------------------------
// Output

const mib = (bytes: number) => (bytes / 2 ** 20).toFixed(0);
const ms = (seconds: number) => (seconds * 1000).toFixed(0);

export function sizeTables(runs: SizeRun[], copy: CopyRun | null): Array<[string[], string[][]]> {
  const tables: Array<[string[], string[][]]> = [];
  if (runs.length > 0) {
    tables.push([
      ['store at size', 'database', 'subscribed', 'fill (s)', 'rebuild (s)', 'copy for the run (s)', 'size (MiB)'],
      runs.map((run) => [
        describe(run.sizes),
        run.database,
        String(run.subscribed),
        run.fillSeconds === null ? 'kept' : run.fillSeconds.toFixed(0),
        run.rebuildSeconds === null ? 'kept' : run.rebuildSeconds.toFixed(0),
        run.copySeconds.toFixed(0),
        mib(run.sizeBytes),
      ]),
    ]);
    tables.push([
      ['at size', 'database', 'figure', 'detail'],
      runs.flatMap((run) => [
        [
          `ingest POST /api/v1/events (${run.ingest.total} requests)`,
          run.database,
          `${run.ingest.requestsPerSecond.toFixed(0)} events/s`,
          `p50 ${run.ingest.p50LatencyMs.toFixed(0)} ms, p99 ${run.ingest.p99LatencyMs.toFixed(0)} ms, non-2xx ${run.ingest.non2xx}, errors ${run.ingest.errors}`,
        ],
        ...(run.campaign
          ? [
              [
                `campaign to every subscriber (1 process, captured)`,
                run.database,
                `${run.campaign.messagesPerSecond.toFixed(0)} messages/s`,
                `${run.campaign.captured} of ${run.campaign.recipients} in ${run.campaign.seconds.toFixed(0)} s, peak RSS ${run.campaign.peakRssKib === null ? '?' : (run.campaign.peakRssKib / 1024).toFixed(0)} MiB`,
              ],
            ]
          : []),
        [`segment full compute (${SEGMENT.name})`, run.database, `${run.segment.seconds.toFixed(1)} s`, `${run.segment.members} members`],
        ...run.rankings.map((row) => [`ranking ${row.row}`, run.database, `p95 ${row.p95.toFixed(1)} ms`, `p50 ${row.p50.toFixed(1)} ms, ${row.requests} requests`]),
        [`export of one buyer (GET /contacts/{id}/export)`, run.database, `${ms(run.person.exportSeconds)} ms`, `${run.person.events} events, ${run.person.orders} orders, ${(run.person.exportBytes / 1024).toFixed(0)} KiB`],
        [`erasure of the same buyer (DELETE /contacts/{id})`, run.database, `${ms(run.person.eraseSeconds)} ms`, ''],
      ]),
    ]);
  }
  if (copy) {
    tables.push([
      ['emk copy-data SQLite → PostgreSQL', 'database', 'rows', 'total (s)', 'rows/s', 'peak RSS (MiB)'],
      [
        [
          `demo shop grown to ${copy.events} events (grown in ${copy.growSeconds.toFixed(0)} s, not counted)`,
          'sqlite → postgres',
          String(copy.rows),
          copy.seconds.toFixed(1),
          (copy.rows / copy.seconds).toFixed(0),
          copy.peakRssKib === null ? '-' : (copy.peakRssKib / 1024).toFixed(0),
        ],
      ],
    ]);
  }
  return tables;
}
