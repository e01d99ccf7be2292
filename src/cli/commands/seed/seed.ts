import { Command } from 'commander';
import { randomBytes } from 'node:crypto';
import { readFileSync } from 'node:fs';
import type { Services } from '../../../domain/create-services.js';
import { ConflictError } from '../../../domain/errors.js';
import type { CreatedPlatformIntegration } from '../../../domain/integrations/integration-service.js';
import type { PlatformIntegration, PlatformReply } from '../../../domain/platform-webhooks/platform-webhook-service.js';
import { MAX_PER_PAGE, type Page, type Paging } from '../../../domain/shared/paging.js';
import { shopifyCustomersExport } from '../../../domain/shopify/shopify-customers-export.js';
import { shopifyOrdersExport } from '../../../domain/shopify/shopify-orders-export.js';
import { runBatchFile } from '../../input/batch-file.js';
import { formatOf, readCsvRows, readRecords, type ByteMeter } from '../../input/record-reader.js';
import type { ImportRow } from '../../input/run-chunked.js';
import { CancelledError, runCommand, withGlobalOptions, type CommandContext, type GlobalOptions } from '../../run-command.js';
import { describeInit, initResult } from '../init.js';
import { plural } from '../../plural.js';
import { tellStory, type StoryOutcome } from './story.js';
import { fromCsv, productRows } from '../products/import.js';
import {
  atOffset,
  daysOffset,
  DEFAULT_FIXTURES,
  FixtureError,
  loadFixtureSet,
  type FixtureDelivery,
  type FixturePlatform,
  type FixtureSet,
  type NamedBody,
} from './fixture-set.js';

interface SeedOptions extends GlobalOptions {
  fixtures: string;
}

/** Totals in the workspace after loading (CONTRACT §7.9). */
interface SeedCounts {
  contacts: number;
  products: number;
  orders: number;
  events: number;
  campaigns: number;
  flows: number;
  segments: number;
}

/** The platform integration the seed created, with its generated secret: shown once, as init shows keys. */
type CreatedShopIntegration = CreatedPlatformIntegration & { secret: string };

/** A webhook body of the set and what the platform webhook answered it. */
type DeliveryOutcome = { file: string } & PlatformReply;

/**
 * init's shape for a workspace the seed created; with --workspace, its keys are not shown again (null). A set
 * with a platform adds the integration it created (null when the workspace had it already) and its deliveries.
 */
type SeedResult = (ReturnType<typeof initResult> | { workspace_id: string; site_id: string; api_key: null; integration: null }) & {
  /** The console's demo login of a workspace the seed created (a random password, shown once); null otherwise. */
  console_login: ConsoleLogin | null;
  platform_integration: CreatedShopIntegration | null;
  deliveries: DeliveryOutcome[];
  /** What the set's story added (null: the set has none, or mail is not captured); on a re-run all 0. */
  story: StoryOutcome | null;
  counts: SeedCounts;
};

const FIRST_PAGE: Paging = { page: 1, perPage: 1 };

interface ConsoleLogin {
  email: string;
  password: string;
}

/**
 * An owner of the new workspace who can sign in to the console at once: `demo@example.com` (or, when another
 * workspace has it, `demo+<site id>@example.com`) with a random password printed once, never a fixed one.
 */
async function consoleLoginOf(services: Services, workspace: { id: string; site_id: string }): Promise<ConsoleLogin> {
  const password = randomBytes(12).toString('base64url');
  for (const email of ['demo@example.com', `demo+${workspace.site_id.toLowerCase()}@example.com`]) {
    const added = await services.users.add(workspace.id, { email, role: 'owner' }).catch((error: unknown) => {
      if (error instanceof ConflictError) return null;
      throw error;
    });
    if (!added) continue;
    await services.users.setPassword({ token: added.set_password_token, password });
    return { email, password };
  }
  throw new ConflictError('the demo login demo@example.com is taken: add a user with emk users add');
}

/**
 * Streams one row file through a domain batch function, 1000 rows a committed chunk. A fixture set is meant to
 * load whole: any refused row fails the seed, naming the file and the line.
 */
async function loadRows(
  context: CommandContext,
  file: string,
  rows: (meter: ByteMeter) => AsyncIterable<ImportRow>,
  handle: (records: Record<string, unknown>[]) => Promise<{ errors: Array<{ index: number; error: string }> }>,
): Promise<void> {
  const { summary, interrupted } = await runBatchFile(context, { file, rows, concurrency: '4', label: 'seeding' }, async (records) => ({
    counts: {},
    errors: (await handle(records)).errors,
  }));
  if (interrupted) throw new CancelledError();
  const first = summary.errors[0];
  if (first) throw new FixtureError(`${file} line ${first.line}: ${first.error} (${plural(summary.errors.length, 'row')} refused; the rest is loaded)`);
}

/** The manifest keys naming row files. */
type RowFile = 'contacts' | 'products' | 'orders' | 'events';

/**
 * A row file's rows: CSV or JSON Lines in emk's shapes, or with a platform its export, read as the `--format`
 * imports read it (the manifest allows only the exports emk reads).
 */
function rowsOf(kind: RowFile, file: string, platform: FixturePlatform | undefined, meter?: ByteMeter): AsyncIterable<ImportRow> {
  if (!platform || kind === 'events') return readRecords(file, meter);
  if (kind === 'products') return productRows(file, { platform: platform.name, domain: platform.shopDomain }, meter);
  return kind === 'contacts' ? shopifyCustomersExport(readCsvRows(file, meter)) : shopifyOrdersExport(readCsvRows(file, meter));
}

/**
 * The instant `days_ago` counts back from: now on a first load; on a re-run, the one the first load used (read
 * back from the first order of the set), so every order and event lands where it did and nothing changes.
 */
async function anchorOf(services: Services, workspaceId: string, orders: AsyncIterable<ImportRow> | undefined): Promise<number> {
  if (orders === undefined) return Date.now();
  for await (const row of orders) {
    if (!('record' in row)) break;
    const { external_id: externalId, days_ago: daysAgo } = row.record;
    if (typeof externalId !== 'string' || daysAgo === undefined || !Number.isFinite(Number(daysAgo))) break;
    const [stored] = (await services.orders.list(workspaceId, { external_id: externalId }, FIRST_PAGE)).data;
    return stored ? Date.parse(stored.ordered_at) + daysOffset(Number(daysAgo)) : Date.now();
  }
  return Date.now();
}

/** The first record of a paged list that `matches`, else null. */
async function findListed<T>(list: (paging: Paging) => Promise<Page<T>>, matches: (record: T) => boolean): Promise<T | null> {
  for (let page = 1; ; page++) {
    const { data, meta } = await list({ page, perPage: MAX_PER_PAGE });
    const found = data.find(matches);
    if (found) return found;
    if (page * MAX_PER_PAGE >= meta.total) return null;
  }
}

/** A campaign, flow or segment of that name, else null: the seed creates each one once. */
const findNamed = <T extends { id: string; name: string }>(list: (paging: Paging) => Promise<Page<T>>, name: string) =>
  findListed(list, (record) => record.name === name);

/**
 * The workspace's active integration with the set's shop, created on a first load with a generated secret (the
 * secret is shown once: with it a real shop, or curl, can sign deliveries to its webhook URL).
 */
async function shopIntegrationOf(services: Services, workspaceId: string, platform: FixturePlatform) {
  const found = await findListed(
    (paging) => services.integrations.list(workspaceId, paging),
    (i) => i.active && i.platform === platform.name && i.domain === platform.shopDomain,
  );
  const shop = { workspaceId, platform: platform.name, domain: platform.shopDomain };
  if (found) return { integration: { ...shop, id: found.id }, created: null };
  const secret = randomBytes(24).toString('base64url');
  // A platform's body (`secret`) always makes a platform integration.
  const added = (await services.integrations.add(workspaceId, { platform: platform.name, secret, shop_domain: platform.shopDomain })) as CreatedPlatformIntegration;
  return { integration: { ...shop, id: added.id }, created: { ...added, secret } };
}

/**
 * The set's webhook bodies, in order, through the platform webhook's own path (mapping, retry key, one
 * transaction each). The file's name is the delivery id: a re-run's deliveries are duplicates and change nothing.
 */
async function deliver(services: Services, integration: PlatformIntegration, deliveries: FixtureDelivery[]): Promise<DeliveryOutcome[]> {
  const outcomes: DeliveryOutcome[] = [];
  for (const { topic, name, path } of deliveries) {
    const reply = await services.platformWebhooks.applyTrusted(integration, { topic, body: readFileSync(path), deliveryId: `emk-seed:${name}`, shop: null });
    outcomes.push({ file: name, ...reply });
  }
  return outcomes;
}

/**
 * The integration whose shop the catalog belongs to (the workspace's first): its products are ranked by
 * behaviour, as a real shop's are, where manually imported ones never are (docs/api/feeds.md).
 */
async function shopOf(services: Services, workspaceId: string) {
  const [integration] = (await services.integrations.list(workspaceId, FIRST_PAGE)).data;
  if (!integration) throw new FixtureError('the workspace has no integration to hold the catalog: add one (POST /api/v1/integrations)');
  return { workspaceId, platform: integration.platform, domain: integration.domain };
}

/**
 * Loads a fixture set into a workspace: rows upsert by email and external ids, webhook bodies are deliveries
 * with retry keys, documents are found by name. Returns what the deliveries were answered.
 */
async function loadFixtures(
  context: CommandContext,
  services: Services,
  workspaceId: string,
  set: FixtureSet,
  shop: PlatformIntegration | null,
): Promise<DeliveryOutcome[]> {
  const rows = (kind: RowFile, file: string) => (meter?: ByteMeter) => rowsOf(kind, file, set.platform, meter);
  if (set.contacts) {
    await loadRows(context, set.contacts, rows('contacts', set.contacts), (records) => services.contacts.importContacts(workspaceId, records));
  }
  if (set.products) {
    // emk's own CSV lists categories as `a|b`; a platform's export is read into products already.
    const csv = !shop && formatOf(set.products) === 'csv';
    const catalog = shop ?? (await shopOf(services, workspaceId));
    await loadRows(context, set.products, rows('products', set.products), async (records) => {
      const outcomes = await services.products.upsertForIntegration(catalog, csv ? records.map(fromCsv) : records);
      return { errors: outcomes.flatMap((outcome, index) => ('error' in outcome ? [{ index, error: outcome.error }] : [])) };
    });
  }
  const anchor = await anchorOf(services, workspaceId, set.orders === undefined ? undefined : rows('orders', set.orders)());
  if (set.orders) {
    await loadRows(context, set.orders, rows('orders', set.orders), (records) =>
      services.orders.sync(workspaceId, { orders: records.map((r) => atOffset(r, 'ordered_at', anchor)) }, { platformExport: set.platform !== undefined }),
    );
  }
  if (set.events) {
    // History: stored without firing flow triggers (`emk events import --backfill`).
    await loadRows(context, set.events, rows('events', set.events), (records) =>
      services.events.recordBatch(workspaceId, { events: records.map((r) => atOffset(r, 'timestamp', anchor)) }, { fireTriggers: false }),
    );
  }
  // The shop's live side after its history, as a shop connected after exporting would see it.
  const deliveries = shop ? await deliver(services, shop, set.deliveries) : [];
  for (const body of set.segments) {
    if (!(await findNamed((paging) => services.segments.list(workspaceId, paging), body.name))) await services.segments.create(workspaceId, body);
  }
  for (const { segment, ...body } of set.campaigns as Array<NamedBody & { segment?: unknown }>) {
    if (await findNamed((paging) => services.campaigns.list(workspaceId, paging), body.name)) continue;
    // `segment` names a segment of the set; the API takes its id.
    const target = typeof segment === 'string' ? await findNamed((paging) => services.segments.list(workspaceId, paging), segment) : null;
    if (typeof segment === 'string' && !target) throw new FixtureError(`campaign ${JSON.stringify(body.name)}: no segment named ${JSON.stringify(segment)}`);
    await services.campaigns.create(workspaceId, target ? { ...body, segment_id: target.id } : body);
  }
  // Last, so that nothing loaded above could enrol anyone.
  for (const body of set.flows) {
    if (!(await findNamed((paging) => services.flows.list(workspaceId, paging), body.name))) await services.flows.create(workspaceId, body);
  }
  return deliveries;
}

async function countsOf(services: Services, workspaceId: string): Promise<SeedCounts> {
  const total = async (page: Promise<Page<unknown>>) => (await page).meta.total;
  return {
    contacts: await total(services.contacts.list(workspaceId, {}, FIRST_PAGE)),
    products: await total(services.products.list(workspaceId, {}, FIRST_PAGE)),
    orders: await total(services.orders.list(workspaceId, {}, FIRST_PAGE)),
    events: await total(services.events.list(workspaceId, {}, FIRST_PAGE)),
    campaigns: await total(services.campaigns.list(workspaceId, FIRST_PAGE)),
    flows: await total(services.flows.list(workspaceId, FIRST_PAGE)),
    segments: await total(services.segments.list(workspaceId, FIRST_PAGE)),
  };
}

/** After the workspace: a platform set's integration (the secret once) and deliveries, then the totals. */
function describeLoad(result: SeedResult): string[] {
  const shop = result.platform_integration;
  const counted = new Map<string, number>();
  for (const { status } of result.deliveries) counted.set(status, (counted.get(status) ?? 0) + 1);
  const statuses = [...counted].map(([status, n]) => `${n} ${status}`);
  return [
    ...(shop ? [`${shop.platform.padEnd(11)}${shop.webhook_url} (secret ${shop.secret}: shown once)`] : []),
    ...(result.deliveries.length > 0 ? [`delivered  ${plural(result.deliveries.length, 'webhook body', 'webhook bodies')}: ${statuses.join(', ')}`] : []),
    ...result.deliveries.flatMap((d) => (d.warnings ?? []).map((warning) => `  ${d.file}: ${warning}`)),
    ...(result.story
      ? [
          `story      campaign ${result.story.campaign_id} sent to ${plural(result.story.sent, 'recipient')}; added ${plural(result.story.opened, 'open')}, ` +
            `${plural(result.story.clicked, 'click')} and ${plural(result.story.orders, 'attributed order')} (npx emk report revenue)`,
        ]
      : []),
    `loaded     ${Object.entries(result.counts).map(([kind, n]) => plural(n, kind.slice(0, -1))).join(', ')}`,
  ];
}

/** `emk seed`: a fixture set (default fixtures/demo) into a new workspace, or into --workspace; re-running changes nothing. */
export function seedCommand(): Command {
  return withGlobalOptions(
    new Command('seed')
      .description('load a fixture set (a demo shop: contacts, catalog, orders, events, a segment, a campaign, a live flow)')
      .option('--fixtures <dir>', 'the fixture set folder (its manifest.json)', DEFAULT_FIXTURES),
  ).action((options: SeedOptions) =>
    runCommand(
      options,
      async (context): Promise<SeedResult> => {
        const set = loadFixtureSet(options.fixtures);
        const services = await context.services();
        const created = options.workspace ? null : initResult(await services.workspaces.bootstrap({ name: set.name, domain: set.domain }));
        const workspace = created ? await services.workspaces.get(created.workspace_id) : await context.workspace();
        const shop = set.platform ? await shopIntegrationOf(services, workspace.id, set.platform) : null;
        const deliveries = await loadFixtures(context, services, workspace.id, set, shop?.integration ?? null);
        const story = set.story ? await tellStory(services, workspace.id, set.story) : null;
        const counts = await countsOf(services, workspace.id);
        return {
          ...(created ?? { workspace_id: workspace.id, site_id: workspace.site_id, api_key: null, integration: null }),
          console_login: created ? await consoleLoginOf(services, workspace) : null,
          platform_integration: shop?.created ?? null,
          deliveries,
          story,
          counts,
        };
      },
      (result) =>
        [
          result.api_key === null ? `workspace  ${result.workspace_id}` : describeInit(result),
          ...describeLoad(result),
          ...(result.console_login ? [`console    ${result.console_login.email} / ${result.console_login.password} (shown once): npm start, then /console`] : []),
        ].join('\n'),
      { createsDatabase: true },
    ),
  );
}
