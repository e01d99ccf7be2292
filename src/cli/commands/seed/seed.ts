import { Command } from 'commander';
import type { Services } from '../../../domain/create-services.js';
import { MAX_PER_PAGE, type Page, type Paging } from '../../../domain/shared/paging.js';
import { runBatchFile } from '../../input/batch-file.js';
import { formatOf, readRecords } from '../../input/record-reader.js';
import { CancelledError, runCommand, withGlobalOptions, type CommandContext, type GlobalOptions } from '../../run-command.js';
import { describeInit, initResult } from '../init.js';
import { fromCsv } from '../products/import.js';
import { atOffset, daysOffset, DEFAULT_FIXTURES, FixtureError, loadFixtureSet, type FixtureSet, type NamedBody } from './fixture-set.js';

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

/** init's shape for a workspace the seed created; with --workspace, its keys are not shown again (null). */
type SeedResult = (ReturnType<typeof initResult> | { workspace_id: string; site_id: string; api_key: null; integration: null }) & {
  counts: SeedCounts;
};

const FIRST_PAGE: Paging = { page: 1, perPage: 1 };

/**
 * Streams one row file through a domain batch function, 1000 rows a committed chunk. A fixture set is meant to
 * load whole: any refused row fails the seed, naming the file and the line.
 */
async function loadRows(
  context: CommandContext,
  file: string,
  handle: (records: Record<string, unknown>[]) => Promise<{ errors: Array<{ index: number; error: string }> }>,
): Promise<void> {
  const { summary, interrupted } = await runBatchFile(context, { file, concurrency: '4', label: 'seeding' }, async (records) => ({
    counts: {},
    errors: (await handle(records)).errors,
  }));
  if (interrupted) throw new CancelledError();
  const first = summary.errors[0];
  if (first) throw new FixtureError(`${file} line ${first.line}: ${first.error} (${summary.errors.length} rows refused; the rest is loaded)`);
}

/**
 * The instant `days_ago` counts back from: now on a first load; on a re-run, the one the first load used (read
 * back from the first order of the set), so every order and event lands where it did and nothing changes.
 */
async function anchorOf(services: Services, workspaceId: string, ordersFile: string | undefined): Promise<number> {
  if (ordersFile === undefined) return Date.now();
  for await (const row of readRecords(ordersFile)) {
    if (!('record' in row)) break;
    const { external_id: externalId, days_ago: daysAgo } = row.record;
    if (typeof externalId !== 'string' || daysAgo === undefined || !Number.isFinite(Number(daysAgo))) break;
    const [stored] = (await services.orders.list(workspaceId, { external_id: externalId }, FIRST_PAGE)).data;
    return stored ? Date.parse(stored.ordered_at) + daysOffset(Number(daysAgo)) : Date.now();
  }
  return Date.now();
}

/** A campaign, flow or segment of that name, else null: the seed creates each one once. */
async function findNamed<T extends { id: string; name: string }>(list: (paging: Paging) => Promise<Page<T>>, name: string): Promise<T | null> {
  for (let page = 1; ; page++) {
    const { data, meta } = await list({ page, perPage: MAX_PER_PAGE });
    const found = data.find((record) => record.name === name);
    if (found) return found;
    if (page * MAX_PER_PAGE >= meta.total) return null;
  }
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

/** Loads a fixture set into a workspace: rows upsert by email and external ids, documents by name. */
async function loadFixtures(context: CommandContext, services: Services, workspaceId: string, set: FixtureSet): Promise<void> {
  if (set.contacts) {
    await loadRows(context, set.contacts, (records) => services.contacts.importContacts(workspaceId, records));
  }
  if (set.products) {
    const csv = formatOf(set.products) === 'csv';
    const shop = await shopOf(services, workspaceId);
    await loadRows(context, set.products, async (records) => {
      const outcomes = await services.products.upsertForIntegration(shop, csv ? records.map(fromCsv) : records);
      return { errors: outcomes.flatMap((outcome, index) => ('error' in outcome ? [{ index, error: outcome.error }] : [])) };
    });
  }
  const anchor = await anchorOf(services, workspaceId, set.orders);
  if (set.orders) {
    await loadRows(context, set.orders, (records) =>
      services.orders.sync(workspaceId, { orders: records.map((r) => atOffset(r, 'ordered_at', anchor)) }),
    );
  }
  if (set.events) {
    // History: stored without firing flow triggers (`emk events import --backfill`).
    await loadRows(context, set.events, (records) =>
      services.events.recordBatch(workspaceId, { events: records.map((r) => atOffset(r, 'timestamp', anchor)) }, { fireTriggers: false }),
    );
  }
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
        await loadFixtures(context, services, workspace.id, set);
        const counts = await countsOf(services, workspace.id);
        return { ...(created ?? { workspace_id: workspace.id, site_id: workspace.site_id, api_key: null, integration: null }), counts };
      },
      (result) =>
        [
          result.api_key === null ? `workspace  ${result.workspace_id}` : describeInit(result),
          `loaded     ${Object.entries(result.counts).map(([kind, n]) => `${n} ${kind}`).join(', ')}`,
        ].join('\n'),
    ),
  );
}
