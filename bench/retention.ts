import { pathToFileURL } from 'node:url';
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import { join, resolve } from 'node:path';
import autocannon from 'autocannon';
import { createServices } from '../src/domain/create-services.js';
import { openDatabase } from '../src/domain/db/database.js';
import { migrateToLatest } from '../src/domain/db/migrate.js';
import { createEventPruner } from '../src/domain/events/event-pruner.js';
import { createBenchDatabase, DEFAULT_BENCH_POSTGRES_URL } from './postgres.js';
import { startServer } from './processes.js';

/**
 * `npm run bench:retention` (issue 35, point 3): pruning a month of events while ingest goes on.
 *
 * For each database it fills one workspace with N events spread evenly over the last ~12 months (the bench's own
 * setup, one INSERT … SELECT of generated rows, not the HTTP path; on PostgreSQL the months they fall in are
 * created first, as the worker would have created each ahead), sets the workspace's `event_retention_days` so that
 * the oldest month lies wholly past it, and starts `emk serve --no-worker` on the database. Then:
 *  - ingest alone: POST /v1/batch (20 anonymous events a request, another workspace) for BENCH_RETENTION_SECONDS;
 *  - prune: the worker's event pruner (createEventPruner, as `emk worker` runs it, in this process) looks once and
 *    removes everything past the retention (PostgreSQL: detaches and drops the month, batches for the rest;
 *    SQLite: batched deletes), while the same ingest load runs; its time, and the events ingested meanwhile.
 * Ingest's rate is counted in the database (events stored for the ingest workspace over the window).
 *
 * Environment: BENCH_RETENTION_PG_EVENTS (default 10,000,000; 0 skips PostgreSQL), BENCH_RETENTION_SQLITE_EVENTS
 * (default 2,000,000; 0 skips SQLite), BENCH_RETENTION_SECONDS (default 10), BENCH_CONNECTIONS (default 20),
 * EMK_BENCH_DATABASE_URL (as `npm run bench`).
 */
const DAY = 86_400_000;
const ROOT = resolve(import.meta.dirname, '../..');
const EMK = join(ROOT, 'bin/emk');
const count = (name: string, fallback: number) => {
  const value = Number(process.env[name] ?? fallback);
  if (!Number.isInteger(value) || value < 0) throw new Error(`${name} must be a whole number`);
  return value;
};
const PG_EVENTS = count('BENCH_RETENTION_PG_EVENTS', 10_000_000);
const SQLITE_EVENTS = count('BENCH_RETENTION_SQLITE_EVENTS', 2_000_000);
const SECONDS = count('BENCH_RETENTION_SECONDS', 10) || 10;
const CONNECTIONS = count('BENCH_CONNECTIONS', 20) || 20;
const EVENTS_PER_REQUEST = 20;
const log = (message: string) => process.stderr.write(`${message}\n`);

interface RetentionRow {
  database: string;
  events: number;
  fillSeconds: number;
  pruned: number;
  droppedMonths: string[];
  pruneSeconds: number;
  ingestAlone: number;
  ingestDuringPrune: number;
}

async function benchOne(label: 'sqlite' | 'postgres', url: string, events: number): Promise<RetentionRow> {
  const services = createServices(openDatabase(url));
  const { knex, dialect } = services.db;
  try {
    await migrateToLatest(knex);
    const shop = await services.workspaces.bootstrap({ name: 'Retention shop', domain: 'shop.bench.test' });
    const live = await services.workspaces.bootstrap({ name: 'Live shop', domain: 'live.bench.test' });
    const now = Date.now();
    const today = new Date(now);
    const first = Date.UTC(today.getUTCFullYear(), today.getUTCMonth() - 12, 1);
    const second = Date.UTC(today.getUTCFullYear(), today.getUTCMonth() - 11, 1);
    const span = now - DAY - first;
    if (dialect.monthlyPartitions) await dialect.monthlyPartitions.ensureAhead(knex, 'events', first, 12);

    log(`${label}: filling ${events} events over 12 months…`);
    const started = performance.now();
    const step = Math.floor(span / events);
    const columns = 'id, workspace_id, contact_id, anonymous_id, event_name, properties, source, dedupe_key, created_at, received_at';
    const json = dialect.name === 'postgres' ? 'jsonb_build_object' : 'json_object';
    const rows = (g: string) =>
      `SELECT 'bench-' || ${g}, ?, NULL, 'v' || (${g} % 50000), CASE WHEN ${g} % 5 = 0 THEN 'added_to_cart' ELSE 'viewed_product' END,
              ${json}('product_id', 'sku-' || (${g} % 500)), 'bench', NULL, ${first} + ${g} * CAST(${step} AS BIGINT), ${first} + ${g} * CAST(${step} AS BIGINT)`;
    if (dialect.name === 'postgres') {
      await knex.raw(`INSERT INTO events (${columns}) ${rows('g')} FROM generate_series(0, ?) g`, [shop.workspace.id, events - 1]);
      await knex.raw('ANALYZE events');
    } else {
      await knex.raw(`INSERT INTO events (${columns}) WITH RECURSIVE s(g) AS (SELECT 0 UNION ALL SELECT g + 1 FROM s WHERE g < ?) ${rows('g')} FROM s`, [events - 1, shop.workspace.id]);
      await knex.raw('ANALYZE');
    }
    const fillSeconds = (performance.now() - started) / 1000;
    // The oldest month lies wholly past the retention; the next only by a few hours.
    const days = Math.floor((now - second) / DAY);
    await knex('workspaces').where({ id: shop.workspace.id }).update({ event_retention_days: days });
    const past = Number((await knex('events').where({ workspace_id: shop.workspace.id }).where('created_at', '<', now - days * DAY).count({ n: '*' }))[0]!.n);

    const server = await startServer('emk serve', [EMK, 'serve', '--no-worker', '--db', url, '--port', '0', '--host', '127.0.0.1'], { ...process.env, EMK_LOG_LEVEL: 'warn', EMK_DRAIN_GRACE_MS: '0', EMK_LIMIT_COLLECT_PER_IP: '1000000000', EMK_LIMIT_COLLECT_PER_SITE: '1000000000', EMK_LIMIT_COLLECT_PER_IP_SITE: '1000000000' }, ROOT);
    const ingested = async () => Number((await knex('events').where({ workspace_id: live.workspace.id }).count({ n: '*' }))[0]!.n);
    let sequence = 0;
    const body = () =>
      JSON.stringify({
        writeKey: live.workspace.site_id,
        batch: Array.from({ length: EVENTS_PER_REQUEST }, () => ({ type: 'track', anonymousId: `live-${sequence++ % 10000}`, event: 'viewed_page', properties: { path: '/p' } })),
      });
    const load = () =>
      autocannon({
        url: `${server.url}/v1/batch`,
        connections: CONNECTIONS,
        duration: 3600,
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        requests: [{ setupRequest: (request) => ({ ...request, body: body() }) }],
      }, () => {});
    /** Events ingested per second while `during` runs. */
    const ingestWhile = async (during: () => Promise<void>) => {
      const instance = load();
      await new Promise((r) => setTimeout(r, 1000));
      const before = await ingested();
      const from = performance.now();
      await during();
      const seconds = (performance.now() - from) / 1000;
      const rate = ((await ingested()) - before) / seconds;
      instance.stop();
      return { rate, seconds };
    };
    try {
      log(`${label}: ingest alone for ${SECONDS} s…`);
      const alone = await ingestWhile(() => new Promise((r) => setTimeout(r, SECONDS * 1000)));
      log(`${label}: pruning ${past} events past ${days} days while ingesting…`);
      const pruner = createEventPruner({ db: services.db, settings: services.settings });
      const during = await ingestWhile(async () => {
        for (let n = await pruner.pruneOnce(services.oldestFactInUse); n > 0; n = await pruner.pruneOnce(services.oldestFactInUse));
      });
      const left = Number((await knex('events').where({ workspace_id: shop.workspace.id }).where('created_at', '<', now - days * DAY).count({ n: '*' }))[0]!.n);
      if (left !== 0) throw new Error(`${left} events past the retention are left`);
      return {
        database: label,
        events,
        fillSeconds,
        pruned: past,
        droppedMonths: [...pruner.droppedMonths()],
        pruneSeconds: during.seconds,
        ingestAlone: alone.rate,
        ingestDuringPrune: during.rate,
      };
    } finally {
      await server.stop();
    }
  } finally {
    await services.close();
  }
}

/** The retention rows (issue 35, point 3) as a markdown table: `npm run bench:retention`, or `BENCH_RETENTION=1 npm run bench`. */
export async function runRetentionBench(): Promise<string> {
  const rows: RetentionRow[] = [];
  if (PG_EVENTS > 0) {
    const database = await createBenchDatabase(process.env.EMK_BENCH_DATABASE_URL ?? DEFAULT_BENCH_POSTGRES_URL, `emk_bench_retention_${process.pid}`);
    if ('unreachable' in database) log(`PostgreSQL skipped: ${database.unreachable}`);
    else {
      try {
        rows.push(await benchOne('postgres', database.url, PG_EVENTS));
      } finally {
        await database.drop();
      }
    }
  }
  if (SQLITE_EVENTS > 0) {
    const dir = mkdtempSync(join(os.tmpdir(), 'emk-bench-retention-'));
    try {
      rows.push(await benchOne('sqlite', `sqlite:${join(dir, 'bench.db')}`, SQLITE_EVENTS));
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  }
  const header = ['database', 'events', 'fill (s)', 'pruned', 'months dropped', 'prune (s)', 'ingest alone (events/s)', 'ingest during prune (events/s)'];
  const lines = rows.map((row) => [
    row.database,
    row.events.toLocaleString('en'),
    row.fillSeconds.toFixed(0),
    row.pruned.toLocaleString('en'),
    row.droppedMonths.join(' ') || '-',
    row.pruneSeconds.toFixed(1),
    row.ingestAlone.toFixed(0),
    row.ingestDuringPrune.toFixed(0),
  ]);
  return `| ${header.join(' | ')} |\n|${header.map(() => '---').join('|')}|\n${lines.map((line) => `| ${line.join(' | ')} |`).join('\n')}\n` +
    `machine: ${os.cpus().length} cores, load ${os.loadavg()[0]!.toFixed(2)} at the end (shared with other work)\n`;
}

if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href) {
  runRetentionBench().then(
    (text) => process.stdout.write(text),
    (error) => {
      process.stderr.write(`${error instanceof Error ? error.stack : String(error)}\n`);
      process.exitCode = 1;
    },
  );
}
