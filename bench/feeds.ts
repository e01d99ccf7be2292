import { existsSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { createServices, type Services } from '../src/domain/create-services.js';
import { openDatabase, type Database } from '../src/domain/db/database.js';
import { NET_REVENUE_SQL } from '../src/domain/orders/net-revenue.js';
import { createBenchDatabase } from './postgres.js';
import type { ServerProcess } from './processes.js';

/**
 * Product feeds on a generated store (issue 5): at scale 1, 100,000 products with categories and 2–4 variants,
 * 200,000 contacts, 1,000,000 orders of 3 items and 10,000,000 `viewed_product` events (plus 4 % `added_to_cart`)
 * over 120 days, a few thousand carts. Rows are generated inside the database (INSERT … SELECT over a series),
 * then the derived data is rebuilt with the domain's own functions; both are timed apart from the requests.
 * Product popularity is skewed (the k-th most popular product is drawn about k^-2/3 as often), so rankings have
 * clear leaders; 5 % of the views name the product with a legacy key (`ProductID`, `productId`, `item_id`).
 *
 * Each row then sends `requests` sequential requests (after 2 warm-up requests, at most ROW_BUDGET_MS of them)
 * to `emk serve` over HTTP and reports p50 and p95.
 */

export interface FeedsOptions {
  /** Multiplies the issue's sizes (1 = the issue's store). */
  scale: number;
  /** Requests per measured row. */
  requests: number;
  /** Which databases to run on. */
  databases: ReadonlySet<string>;
}

/** What the bench runner provides: a workspace on a fresh database, and a server on it. */
export interface FeedsEmk {
  init(databaseUrl: string): Promise<{ workspaceId: string; apiKey: string }>;
  start(databaseUrl: string): Promise<ServerProcess>;
}

export interface LatencyRow {
  row: string;
  database: string;
  requests: number;
  p50: number;
  p95: number;
  goalMs: number | null;
}

export interface FeedsRun {
  database: string;
  generationSeconds: number;
  filterReindexSeconds: number;
  aggregateRebuildSeconds: number;
  sizeBytes: number;
  rows: LatencyRow[];
}

const DAY_MS = 86_400_000;
const WINDOW_DAYS = 120;
const CATEGORIES = 200;
const ROWS_PER_STATEMENT = 250_000;
const WARMUP_REQUESTS = 2;
/** A slow row stops after this long, with the requests it has (the table says how many). */
const ROW_BUDGET_MS = 60_000;
const CONTACTS_SAMPLED = 500;
const RANKING_GOAL_MS = 20;
const RECIPIENT_GOAL_MS = 50;

const SIZES = ['XS', 'S', 'M', 'L', 'XL'];
const COLORS = ['red', 'blue', 'green', 'black', 'white', 'grey'];
const MATERIALS = ['cotton', 'wool', 'linen', 'silk'];
const TYPES = ['Shirt', 'Trousers', 'Hat', 'Shoes', 'Bag', 'Jacket', 'Socks'];

const log = (message: string) => process.stderr.write(`${message}\n`);

export function storeSizes(scale: number) {
  const of = (n: number) => Math.max(1, Math.round(n * scale));
  const views = of(10_000_000);
  return {
    products: of(100_000),
    contacts: of(200_000),
    orders: of(1_000_000),
    views,
    /** Every 26th event is an `added_to_cart`: `views` product views beside them. */
    events: views + Math.ceil(views / 25),
    carts: of(3_000),
    /** Days the orders and events are spread over, ending now. */
    windowDays: WINDOW_DAYS,
    /** Percent of the contacts subscribed (the others `non_subscribed`). */
    subscribedPercent: 100,
  };
}
export type StoreSizes = ReturnType<typeof storeSizes>;

export const describeStore = (scale: number): string => {
  const s = storeSizes(scale);
  return `${s.products} products, ${s.contacts} contacts, ${s.orders} orders, ${s.views} views`;
};

// ---------------------------------------------------------------------------------------------------------
// Generation: the few expressions that differ between the databases

interface SqlKit {
  /** A FROM item: the integers from..to, as column `n`. */
  series(from: number, to: number): string;
  /** Uniform in [0, 1), drawn anew at each evaluation. */
  random: string;
  /** Truncates a non-negative number to an integer. */
  int(expression: string): string;
  /** 12 lower-case hex digits. */
  hex12(expression: string): string;
  /** A JSON column's value from text. */
  json(expression: string): string;
}

const SQLITE_KIT: SqlKit = {
  series: (from, to) => `(WITH RECURSIVE g(n) AS (SELECT ${from} UNION ALL SELECT n + 1 FROM g WHERE n < ${to}) SELECT n FROM g) AS g`,
  random: '((random() & 9007199254740991) / 9007199254740992.0)',
  int: (e) => `CAST(${e} AS INTEGER)`,
  hex12: (e) => `printf('%012x', ${e})`,
  json: (e) => e,
};

const POSTGRES_KIT: SqlKit = {
  series: (from, to) => `generate_series(${from}::bigint, ${to}::bigint) AS g(n)`,
  random: 'random()',
  int: (e) => `floor(${e})::bigint`,
  hex12: (e) => `lpad(to_hex(${e}), 12, '0')`,
  json: (e) => `(${e})::jsonb`,
};

/** One table's generated rows: the INSERT … SELECT for series numbers from..to. */
interface TableGenerator {
  table: string;
  rows: number;
  /** Series numbers per generated row (variants and order items come several to a number). */
  perNumber?: number;
  sql(from: number, to: number): string;
}

function generators(kit: SqlKit, workspaceId: string, sizes: StoreSizes, now: number): TableGenerator[] {
  if (!/^[0-9a-f-]{36}$/.test(workspaceId)) throw new Error(`unexpected workspace id ${workspaceId}`);
  const ws = `'${workspaceId}'`;
  const start = now - sizes.windowDays * DAY_MS;
  const span = sizes.windowDays * DAY_MS;
  const rand = (m: number) => kit.int(`${m} * ${kit.random}`);
  /** 0..m-1, small numbers far more often: u^3 puts a third of the draws in the first 4 % of the range. */
  const popular = (m: number) => kit.int(`${m} * power(${kit.random}, 3)`);
  const id = (tag: string, n: string) => `'${tag}-0000-7000-8000-' || ${kit.hex12(n)}`;
  const pick = (expression: string, values: string[]) =>
    `CASE ${expression} ${values.map((v, i) => `WHEN ${i} THEN '${v}'`).join(' ')} END`;
  const contactId = id('c0000000', rand(sizes.contacts));
  const positions = (count: number) =>
    `(${Array.from({ length: count }, (_, i) => `SELECT ${i} AS pos`).join(' UNION ALL ')}) AS p`;
  const category = `'"Category ' || ${rand(CATEGORIES)} || '"'`;
  const orderedAt = `${start} + ${kit.int(`n * ${span / sizes.orders}`)}`;
  const eventAt = `${start} + ${kit.int(`n * ${span / sizes.events}`)}`;
  const manual = 'n % 30 = 0';
  const status = `CASE WHEN n % 100 < ${sizes.subscribedPercent} THEN 'subscribed' ELSE 'non_subscribed' END`;
  // The same for a contact and its consent entry: contacts signed up one after another before the window opened.
  const contactCreatedAt = `${start} - (n * 7919) % ${365 * DAY_MS}`;
  const size = pick('(n + pos) % 5', SIZES);
  const color = pick('(n * 7 + pos * 3) % 6', COLORS);

  return [
    {
      table: 'contacts',
      rows: sizes.contacts,
      sql: (from, to) => `INSERT INTO contacts (id, workspace_id, email, email_key, properties, subscription_status, source,
          lifetime_revenue, orders_count, created_at, updated_at)
        SELECT ${id('c0000000', 'n')}, ${ws}, 'feed-' || n || '@bench.test', 'feed-' || n || '@bench.test', ${kit.json(`'{}'`)},
          ${status}, 'bench', 0, 0, ${contactCreatedAt}, ${now}
        FROM ${kit.series(from, to)}`,
    },
    {
      // A contact's first status is a consent-history entry, as the contact service records it on create.
      table: 'subscription_changes',
      rows: sizes.contacts,
      sql: (from, to) => `INSERT INTO subscription_changes (contact_id, from_status, to_status, origin, created_at, message_id)
        SELECT ${id('c0000000', 'n')}, NULL, ${status}, 'create:bench', ${contactCreatedAt}, NULL
        FROM ${kit.series(from, to)}`,
    },
    {
      table: 'products',
      rows: sizes.products,
      sql: (from, to) => `INSERT INTO products (id, workspace_id, platform, external_id, title, price, currency, url, image_url,
          in_stock, stock_qty, categories, compare_at_price, description, product_type, weight, metadata, source, content_hash,
          synced_at, created_at)
        SELECT ${id('a0000000', 'n')}, ${ws}, CASE WHEN ${manual} THEN 'manual' ELSE 'website' END, 'sku-' || n, 'Product ' || n,
          ${rand(19_500)} / 100.0 + 5, 'EUR', 'https://shop.bench.test/products/' || n, NULL, (${rand(10)} <> 0), ${rand(500)},
          ${kit.json(`'[' || ${category} || CASE WHEN n % 3 > 0 THEN ', ' || ${category} ELSE '' END
            || CASE WHEN n % 3 = 2 THEN ', ' || ${category} ELSE '' END || ']'`)},
          NULL, NULL, ${pick('n % 7', TYPES)}, NULL,
          ${kit.json(`'{"brand": "Brand ' || ${rand(50)} || '", "material": "' || ${pick('n % 4', MATERIALS)} || '"}'`)},
          CASE WHEN ${manual} THEN 'manual' ELSE 'website:shop.bench.test' END, 'bench', ${now}, ${start} - ${rand(365 * DAY_MS)}
        FROM ${kit.series(from, to)}`,
    },
    {
      table: 'product_variants',
      rows: sizes.products,
      perNumber: 3,
      sql: (from, to) => `INSERT INTO product_variants (id, product_id, external_id, sku, title, options, price, compare_at_price,
          in_stock, stock_qty, image_url, url, position)
        SELECT ${id('a1000000', 'n * 4 + pos')}, ${id('a0000000', 'n')}, 'sku-' || n || '-' || pos, 'sku-' || n || '-' || pos,
          ${size} || ' / ' || ${color}, ${kit.json(`'{"size": "' || ${size} || '", "color": "' || ${color} || '"}'`)},
          NULL, NULL, (${rand(5)} <> 0), ${rand(50)}, NULL, NULL, pos
        FROM ${kit.series(from, to)} CROSS JOIN ${positions(4)}
        WHERE pos < 2 + n % 3`,
    },
    {
      table: 'orders',
      rows: sizes.orders,
      sql: (from, to) => `INSERT INTO orders (id, workspace_id, contact_id, platform, integration_id, origin, upsert_key, external_id,
          order_number, order_number_key, total_amount, currency, status, ordered_at, refunded_amount, created_at, updated_at)
        SELECT ${id('b0000000', 'n')}, ${ws}, ${contactId}, 'website', NULL, 'webhook', 'order-' || n, 'order-' || n,
          '' || (100000 + n), '' || (100000 + n), ${rand(20_000)} / 100.0 + 10, 'EUR', 'paid', ${orderedAt}, 0, ${orderedAt}, ${orderedAt}
        FROM ${kit.series(from, to)}`,
    },
    {
      table: 'order_items',
      rows: sizes.orders,
      perNumber: 3,
      sql: (from, to) => `INSERT INTO order_items (order_id, workspace_id, external_id, title, quantity, price, position, ordered_at)
        SELECT ${id('b0000000', 'n')}, ${ws}, 'sku-' || ${popular(sizes.products)}, NULL, 1 + ${rand(2)},
          ${rand(9_500)} / 100.0 + 5, pos, ${orderedAt}
        FROM ${kit.series(from, to)} CROSS JOIN ${positions(3)}`,
    },
    {
      table: 'events',
      rows: sizes.events,
      sql: (from, to) => `INSERT INTO events (id, workspace_id, contact_id, anonymous_id, event_name, properties, source, dedupe_key,
          created_at, received_at)
        SELECT ${id('e0000000', 'n')}, ${ws}, ${contactId}, NULL,
          CASE WHEN n % 26 = 25 THEN 'added_to_cart' ELSE 'viewed_product' END,
          ${kit.json(`'{"' || CASE WHEN n % 100 < 95 THEN 'product_id' WHEN n % 100 < 97 THEN 'ProductID'
            WHEN n % 100 < 99 THEN 'productId' ELSE 'item_id' END || '": "sku-' || ${popular(sizes.products)} || '"}'`)},
          'bench', NULL, ${eventAt}, ${eventAt}
        FROM ${kit.series(from, to)}`,
    },
    {
      table: 'carts',
      rows: sizes.carts,
      sql: (from, to) => `INSERT INTO carts (id, workspace_id, contact_id, external_id, last_event_type, total_amount, currency,
          checkout_url, items, created_at, updated_at)
        SELECT ${id('ca000000', 'n')}, ${ws}, ${contactId}, 'cart-' || n, 'added_to_cart', 49.9, 'EUR', NULL,
          ${kit.json(`'[{"external_id": "sku-' || ${popular(sizes.products)} || '", "quantity": 1}, {"external_id": "sku-'
            || ${popular(sizes.products)} || '", "quantity": 2}]'`)},
          ${now} - n * 60000, ${now} - n * 60000
        FROM ${kit.series(from, to)}`,
    },
  ];
}

/** `CREATE INDEX` statements of the table's indexes that are neither unique nor its primary key. */
async function secondaryIndexes(db: Database, table: string): Promise<Array<{ name: string; sql: string }>> {
  if (db.dialect.name === 'postgres') {
    const { rows } = (await db.knex.raw(
      `SELECT i.relname AS name, pg_get_indexdef(x.indexrelid) AS sql FROM pg_index x
         JOIN pg_class i ON i.oid = x.indexrelid JOIN pg_class t ON t.oid = x.indrelid
       WHERE t.relname = ? AND t.relnamespace = 'public'::regnamespace AND NOT x.indisunique AND NOT x.indisprimary`,
      [table],
    )) as { rows: Array<{ name: string; sql: string }> };
    return rows;
  }
  return db.knex.raw(
    `SELECT name, sql FROM sqlite_master WHERE type = 'index' AND tbl_name = ? AND sql IS NOT NULL AND sql NOT LIKE 'CREATE UNIQUE%'`,
    [table],
  );
}

/**
 * Generates the store into the workspace, one transaction per statement of up to ROWS_PER_STATEMENT rows, on a
 * connection of its own. Faster than the application would write, and as it ends up: secondary indexes are
 * dropped first and built again at the end (a sort instead of a random insert per row), and foreign keys are not
 * checked (rows only name rows generated before them); on SQLite commits do not wait for the disk.
 */
export async function generate(databaseUrl: string, workspaceId: string, sizes: StoreSizes, label: string): Promise<void> {
  const db = openDatabase(databaseUrl);
  const postgres = db.dialect.name === 'postgres';
  const kit = postgres ? POSTGRES_KIT : SQLITE_KIT;
  const seconds = (started: number) => ((performance.now() - started) / 1000).toFixed(1);
  try {
    if (!postgres) {
      // The pool's one connection: no transaction is open.
      await db.knex.raw('PRAGMA synchronous = OFF');
      await db.knex.raw('PRAGMA foreign_keys = OFF');
      await db.knex.raw('PRAGMA cache_size = -1048576');
    }
    const list = generators(kit, workspaceId, sizes, Date.now());
    const indexes = (await Promise.all([...new Set(list.map((g) => g.table))].map((table) => secondaryIndexes(db, table)))).flat();
    for (const index of indexes) await db.knex.raw(`DROP INDEX ${index.name}`);
    for (const generator of list) {
      const started = performance.now();
      const step = Math.ceil(ROWS_PER_STATEMENT / (generator.perNumber ?? 1));
      for (let from = 0; from < generator.rows; from += step) {
        const to = Math.min(generator.rows, from + step) - 1;
        await db.writeTransaction(async (trx) => {
          // Foreign-key checks are triggers on PostgreSQL: a replica session fires none (needs a superuser).
          if (postgres) await trx.raw('SET LOCAL session_replication_role = replica');
          await trx.raw(generator.sql(from, to));
        });
      }
      log(`feeds on ${label}: ${generator.table} generated in ${seconds(started)} s`);
    }
    const started = performance.now();
    await db.writeTransaction(async (trx) => {
      // PostgreSQL sorts an index's entries in memory up to this much, else in temporary files.
      if (postgres) await trx.raw(`SET LOCAL maintenance_work_mem = '1GB'`);
      // A partitioned table's index (events on PostgreSQL) reads back `ON ONLY`, which would leave its partitions bare.
      for (const index of indexes) await trx.raw(index.sql.replace(' ON ONLY ', ' ON '));
    });
    // Each buyer's totals, as the order path keeps them (one aggregate over the orders, as order-store's UPDATE … FROM).
    await db.writeTransaction((trx) =>
      trx.raw(
        `UPDATE contacts SET lifetime_revenue = totals.revenue, orders_count = totals.orders
         FROM (SELECT contact_id, ROUND(SUM(${NET_REVENUE_SQL}), 4) AS revenue, COUNT(*) AS orders
               FROM orders WHERE workspace_id = ? GROUP BY contact_id) AS totals
         WHERE contacts.id = totals.contact_id`,
        [workspaceId],
      ),
    );
    // PostgreSQL's autovacuum would analyse the new rows within a minute; done now so every row sees the same plans.
    if (postgres) await db.knex.raw('ANALYZE');
    log(`feeds on ${label}: ${indexes.length} indexes built, buyers' totals set in ${seconds(started)} s`);
  } finally {
    await db.close();
  }
}

// ---------------------------------------------------------------------------------------------------------
// Derived data, rebuilt by the domain's own functions

async function timed(work: () => Promise<unknown>): Promise<number> {
  const started = performance.now();
  await work();
  return (performance.now() - started) / 1000;
}

/** The feed-filter side tables (one transaction), then the behaviour aggregates. */
export async function rebuild(services: Services, workspaceId: string, label: string) {
  const filterReindexSeconds = await timed(() => services.products.reindexFilters(workspaceId));
  log(`feeds on ${label}: filter reindex in ${filterReindexSeconds.toFixed(1)} s`);
  const aggregateRebuildSeconds = await timed(() => services.productActivity.rebuild(workspaceId));
  log(`feeds on ${label}: aggregate rebuild in ${aggregateRebuildSeconds.toFixed(1)} s`);
  return { filterReindexSeconds, aggregateRebuildSeconds };
}

export async function databaseSize(db: Database, databaseUrl: string): Promise<number> {
  if (db.dialect.name === 'postgres') {
    const { rows } = (await db.knex.raw('SELECT pg_database_size(current_database()) AS size')) as { rows: Array<{ size: string }> };
    return Number(rows[0]!.size);
  }
  // The WAL keeps its largest size once checkpointed: emptied first, so the file holds everything.
  await db.knex.raw('PRAGMA wal_checkpoint(TRUNCATE)');
  const path = databaseUrl.slice('sqlite:'.length);
  return [path, `${path}-wal`].reduce((sum, file) => sum + (existsSync(file) ? statSync(file).size : 0), 0);
}

// ---------------------------------------------------------------------------------------------------------
// Measuring

interface Measured {
  requests: number;
  p50: number;
  p95: number;
  empty: number;
}

/** Sequential requests; each must answer 2xx. `empty` counts replies whose `data` list was empty. */
async function measureRow(label: string, requests: number, send: (i: number) => Promise<Response>): Promise<Measured> {
  const latencies: number[] = [];
  let empty = 0;
  let deadline = Infinity;
  for (let i = 0; i < WARMUP_REQUESTS + requests && performance.now() < deadline; i++) {
    if (i === WARMUP_REQUESTS) deadline = performance.now() + ROW_BUDGET_MS;
    const started = performance.now();
    const response = await send(i);
    const body = await response.text();
    const elapsed = performance.now() - started;
    if (!response.ok) throw new Error(`${label} answered ${response.status} ${body.slice(0, 300)}`);
    if (i < WARMUP_REQUESTS) continue;
    latencies.push(elapsed);
    const data = (JSON.parse(body) as { data?: unknown[] }).data;
    if (Array.isArray(data) && data.length === 0) empty++;
  }
  latencies.sort((a, b) => a - b);
  const at = (q: number) => latencies[Math.min(latencies.length - 1, Math.floor(q * latencies.length))]!;
  return { requests: latencies.length, p50: at(0.5), p95: at(0.95), empty };
}

const category = (i: number) => `Category ${(i * 37) % CATEGORIES}`;

export async function measureAll(server: ServerProcess, apiKey: string, contacts: string[], label: string, requests: number, notes: string[]) {
  const headers = { 'content-type': 'application/json', 'x-api-key': apiKey };
  const createFeed = (body: Record<string, unknown>) =>
    fetch(`${server.url}/api/v1/product-feeds`, { method: 'POST', headers, body: JSON.stringify(body) });
  const newFeed = async (body: Record<string, unknown>): Promise<string> => {
    const response = await createFeed(body);
    const reply = (await response.json()) as { feed?: { id: string } };
    if (response.status !== 201 || !reply.feed) throw new Error(`creating a feed answered ${response.status} ${JSON.stringify(reply)}`);
    return reply.feed.id;
  };
  const products = (feedId: string, query = '') =>
    fetch(`${server.url}/api/v1/product-feeds/${feedId}/products${query}`, { headers: { 'x-api-key': apiKey } });

  const rows: LatencyRow[] = [];
  const add = async (row: string, goalMs: number | null, send: (i: number) => Promise<Response>) => {
    log(`feeds on ${label}: ${row}…`);
    const measured = await measureRow(row, requests, send);
    rows.push({ row, database: label, requests: measured.requests, p50: measured.p50, p95: measured.p95, goalMs });
    if (measured.empty > 0) notes.push(`feeds on ${label}: ${row}: ${measured.empty} of ${measured.requests} replies held no product`);
  };

  await add('POST product-feeds (2 categories, price 20–150, size M/L)', null, (i) =>
    createFeed({
      name: `Bench feed ${i}`,
      categories: [category(i), category(i + 1)],
      price_min: 20,
      price_max: 150,
      variant_options: { size: ['M', 'L'] },
    }),
  );
  for (const type of ['best_selling', 'most_viewed', 'best_selling_and_most_viewed'] as const) {
    const plain = await newFeed({ name: `Bench ${type}`, recommendation_type: type });
    await add(`GET …/products ${type}`, RANKING_GOAL_MS, () => products(plain));
    const filtered = await newFeed({ name: `Bench ${type} in a category`, recommendation_type: type, categories: [category(1)] });
    await add(`GET …/products ${type}, 1 category`, RANKING_GOAL_MS, () => products(filtered));
  }
  for (const type of ['recently_viewed', 'may_also_like'] as const) {
    const feed = await newFeed({ name: `Bench ${type}`, recommendation_type: type });
    await add(`GET …/products ${type}?contact_id=`, RECIPIENT_GOAL_MS, (i) => products(feed, `?contact_id=${contacts[i % contacts.length]!}`));
  }
  return rows;
}

// ---------------------------------------------------------------------------------------------------------

async function runOne(label: string, databaseUrl: string, emk: FeedsEmk, options: FeedsOptions, notes: string[]): Promise<FeedsRun> {
  const sizes = storeSizes(options.scale);
  const { workspaceId, apiKey } = await emk.init(databaseUrl);
  log(`feeds on ${label}: generating ${describeStore(options.scale)}…`);
  const generationSeconds = await timed(() => generate(databaseUrl, workspaceId, sizes, label));
  const services = createServices(openDatabase(databaseUrl));
  let rebuilt: Awaited<ReturnType<typeof rebuild>>;
  let sizeBytes: number;
  let contacts: string[];
  try {
    rebuilt = await rebuild(services, workspaceId, label);
    sizeBytes = await databaseSize(services.db, databaseUrl);
    // Order ids are sequential and their contacts random: the first orders name random buyers, who also viewed.
    contacts = (
      await services.db.knex('orders').where({ workspace_id: workspaceId }).orderBy('id').limit(CONTACTS_SAMPLED).select('contact_id')
    ).map((row: { contact_id: string }) => row.contact_id);
  } finally {
    await services.close();
  }
  const server = await emk.start(databaseUrl);
  try {
    const rows = await measureAll(server, apiKey, contacts, label, options.requests, notes);
    return { database: label, generationSeconds, ...rebuilt, sizeBytes, rows };
  } finally {
    await server.stop();
  }
}

/**
 * The feeds rows on SQLite (a file in `dir`) and on a database of its own on the PostgreSQL server of
 * `postgresServer`, dropped once measured; `onCleanup` registers the drop for an interrupted run too.
 */
export async function runFeedsBench(args: {
  dir: string;
  postgresServer: string;
  emk: FeedsEmk;
  options: FeedsOptions;
  notes: string[];
  failures: string[];
  onCleanup: (cleanup: () => Promise<void>) => void;
}): Promise<FeedsRun[]> {
  const { dir, postgresServer, emk, options, notes, failures } = args;
  const runs: FeedsRun[] = [];
  const attempt = async (label: string, url: string) => {
    try {
      runs.push(await runOne(label, url, emk, options, notes));
    } catch (error) {
      failures.push(`feeds on ${label} failed: ${error instanceof Error ? error.message : String(error)}`);
    }
  };
  if (options.databases.has('sqlite')) await attempt('sqlite', `sqlite:${join(dir, 'feeds.db')}`);
  if (!options.databases.has('postgres')) return runs;
  const postgres = await createBenchDatabase(postgresServer, `emk_bench_feeds_${process.pid}`);
  if ('unreachable' in postgres) {
    notes.push(`feeds on PostgreSQL skipped: could not create a database on ${postgresServer} (${postgres.unreachable})`);
    return runs;
  }
  args.onCleanup(() => postgres.drop());
  try {
    await attempt('postgres', postgres.url);
  } finally {
    await postgres.drop();
  }
  return runs;
}

/** The feeds tables, as header and lines for the runner's table printer. */
export function feedsTables(runs: FeedsRun[], scale: number): Array<[string[], string[][]]> {
  const data: [string[], string[][]] = [
    ['feeds store', 'database', 'generation (s)', 'filter reindex (s)', 'aggregate rebuild (s)', 'database size (MiB)'],
    runs.map((run) => [
      describeStore(scale),
      run.database,
      run.generationSeconds.toFixed(1),
      run.filterReindexSeconds.toFixed(1),
      run.aggregateRebuildSeconds.toFixed(1),
      (run.sizeBytes / 2 ** 20).toFixed(0),
    ]),
  ];
  const latency: [string[], string[][]] = [
    ['feeds request', 'database', 'requests', 'p50 (ms)', 'p95 (ms)', 'goal (p95)'],
    runs.flatMap((run) =>
      run.rows.map((row) => [
        row.row,
        row.database,
        String(row.requests),
        row.p50.toFixed(1),
        row.p95.toFixed(1),
        row.goalMs === null ? '-' : `< ${row.goalMs} ms: ${row.p95 < row.goalMs ? 'met' : 'not met'}`,
      ]),
    ),
  ];
  return [data, latency];
}
