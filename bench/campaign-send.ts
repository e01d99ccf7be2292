import { createServices, type EmailOptions } from '../src/domain/create-services.js';
import { openDatabase } from '../src/domain/db/database.js';
import { migrateToLatest } from '../src/domain/db/migrate.js';
import { runDueJobs, workerOptionsFor } from '../src/worker/worker.js';
import { seedContacts } from './events-volume.js';

/**
 * The campaign send of issue 13, shared by `npm run bench:campaign` (campaign.ts) and the campaign rows of
 * `npm run bench` (campaign-rows.ts): a workspace with N generated subscribers and a small catalog with sales, a
 * campaign whose every message is personalised and carries a 4-product `best_selling` block, a tracked link and
 * the unsubscribe link; no relay, so messages are captured.
 */

/** What `prepareCampaign` leaves in the database, for whoever sends it. */
export interface PreparedCampaign {
  workspaceId: string;
  apiKey: string;
  campaignId: string;
  contacts: number;
  seededSeconds: number;
}

/** One process's send, as campaign.js prints it (one JSON line). */
export interface CampaignSendResult {
  database: string;
  recipients: number;
  captured: number;
  failed: number;
  /** Products in the block of the first message (4 expected). */
  blockProducts: number;
  recipientsFixedSeconds: number;
  totalSeconds: number;
  messagesPerSecond: number;
  /** Sampled in the process (the bench runner reads VmHWM from outside as well). */
  peakRssMiB: number;
}

/** The catalog the block ranks: BLOCK products sold (best seller first), and a few never sold. */
const CATALOG = 8;
const BLOCK = 4;
const productTitle = (k: number) => `Bench product ${k}`;

/** Products, and orders from non-subscribed buyers (so they are no recipients) that rank the first BLOCK. */
async function seedCatalog(services: ReturnType<typeof createServices>, workspaceId: string): Promise<void> {
  // Products from the shop's integration, as its webhook writes them (manual products are never ranked).
  const shop = { workspaceId, platform: 'website', domain: 'bench.test' };
  await services.db.writeTransaction(async (trx) => {
    for (let k = 0; k < CATALOG; k++) {
      const result = await services.products.applyWebhookEvent(trx, shop, 'product_created', {
        external_id: `bench-sku-${k}`,
        title: productTitle(k),
        price: 10 + k,
        currency: 'EUR',
        url: `https://bench.test/products/${k}`,
        image_url: `https://cdn.bench.test/products/${k}.jpg`,
      });
      if (result !== 'applied') throw new Error(`seeding product ${k}: ${result}`);
    }
  });
  const orders = Array.from({ length: 20 }, (_, i) => ({
    email: `buyer-${i}@bench.test`,
    external_id: `bench-order-${i}`,
    order_number: String(1000 + i),
    total_amount: 50,
    currency: 'EUR',
    status: 'paid',
    ordered_at: new Date(Date.now() - (i + 1) * 3_600_000).toISOString(),
    items: Array.from({ length: BLOCK }, (_, k) => ({ external_id: `bench-sku-${k}`, title: productTitle(k), quantity: BLOCK - k, price: 10 + k })),
  }));
  const result = await services.orders.sync(workspaceId, { orders });
  if (result.errors.length > 0) throw new Error(`seeding orders failed: ${JSON.stringify(result.errors.slice(0, 3))}`);
}

/**
 * A fresh workspace with `contacts` subscribers, the catalog and a draft campaign from `news@bench.test` (the
 * workspace's own domain, without a DKIM key; `signed` adds it as a sender with a key, so every message is signed).
 */
export async function prepareCampaign(url: string, contacts: number, options: { signed?: boolean; mjml?: boolean } = {}): Promise<PreparedCampaign> {
  const db = openDatabase(url);
  await migrateToLatest(db.knex);
  const services = createServices(db);
  try {
    const { workspace, apiKey } = await services.workspaces.bootstrap({ name: 'Campaign bench', domain: 'bench.test' });
    const seeding = performance.now();
    await seedContacts(url, workspace.id, contacts);
    await seedCatalog(services, workspace.id);
    const seededSeconds = (performance.now() - seeding) / 1000;
    if (options.signed) await services.senders.add(workspace.id, { domain: 'bench.test' });
    const campaignId = await createBenchCampaign(services, workspace.id, 'news@bench.test', options.mjml);
    return { workspaceId: workspace.id, apiKey: apiKey.key, campaignId, contacts, seededSeconds: +seededSeconds.toFixed(1) };
  } finally {
    await services.close();
  }
}

/**
 * The bench's draft campaign in a workspace: personalised, with a BLOCK-product `best_selling` block, a tracked
 * link and the unsubscribe link; in MJML with `mjml`. `from` must be at the workspace's domain (or one of its senders).
 */
export async function createBenchCampaign(services: ReturnType<typeof createServices>, workspaceId: string, from: string, mjml = false): Promise<string> {
  const feed = await services.feeds.create(workspaceId, { name: 'Best sellers', recommendation_type: 'best_selling', max_items: BLOCK });
  const campaign = await services.campaigns.create(workspaceId, {
    name: 'Bench',
    from_email: from,
    subject: 'Picks for {{ contact.email }}',
    ...(mjml
      ? { format: 'mjml' as const, html: benchMjml(feed.feed.id) }
      : {
          html: `<p>Hello {{ contact.email }}</p>{% products feed: "${feed.feed.id}", limit: ${BLOCK}, fallback: "best_selling" %}<a href="{{ item.url }}">{{ item.title }}</a>{% endproducts %}<a href="https://bench.test/sale">Sale</a><a href="{{ unsubscribe_url }}">Unsubscribe</a>`,
        }),
  });
  return campaign.id;
}

/**
 * The same message as MJML (`--mjml`): a header, the block as a responsive grid (a column per product: MJML sizes
 * columns when it compiles, so the width is the block's limit's share), the two links; as many links as the
 * HTML message (the picture is not a second link), so the two rows differ by the markup alone.
 */
const benchMjml = (feedId: string) => `<mjml>
  <mj-body background-color="#f4f4f5">
    <mj-section background-color="#ffffff"><mj-column><mj-text font-size="18px">Hello {{ contact.email }}</mj-text></mj-column></mj-section>
    <mj-section background-color="#ffffff">
      <mj-raw>{% products feed: "${feedId}", limit: ${BLOCK}, fallback: "best_selling" %}</mj-raw>
      <mj-column width="${100 / BLOCK}%">
        <mj-image src="{{ item.image_url }}" alt="{{ item.title }}" />
        <mj-text align="center"><a href="{{ item.url }}">{{ item.title }}</a></mj-text>
      </mj-column>
      <mj-raw>{% endproducts %}</mj-raw>
    </mj-section>
    <mj-section><mj-column>
      <mj-button href="https://bench.test/sale">Sale</mj-button>
      <mj-text font-size="12px" align="center"><a href="{{ unsubscribe_url }}">Unsubscribe</a></mj-text>
    </mj-column></mj-section>
  </mj-body>
</mjml>`;

/** Starts the send and works it through with this process's worker until every message reached an end. */
export async function sendCampaign(
  url: string,
  prepared: Pick<PreparedCampaign, 'workspaceId' | 'campaignId'>,
  /** Unset: captured. An SMTP relay (the sink of smtp-sink.ts) when given. */
  email?: EmailOptions,
): Promise<CampaignSendResult> {
  const { workspaceId, campaignId } = prepared;
  const db = openDatabase(url);
  const services = createServices(db, email ? { email } : {});
  try {
    let peakRss = process.memoryUsage().rss;
    const sampler = setInterval(() => (peakRss = Math.max(peakRss, process.memoryUsage().rss)), 100);
    const started = performance.now();
    const { recipients } = await services.campaigns.send(workspaceId, campaignId);
    const fixed = (performance.now() - started) / 1000;
    await runDueJobs(workerOptionsFor(services, { concurrency: db.dialect.writeConcurrency > 1 ? 4 : 2 }));
    const seconds = (performance.now() - started) / 1000;
    clearInterval(sampler);
    const report = await services.campaigns.report(workspaceId, campaignId);
    const [first] = (await services.messages.list(workspaceId, { campaign_id: campaignId }, { page: 1, perPage: 1 })).data;
    return {
      database: db.dialect.name,
      recipients: recipients ?? 0,
      captured: report.sent,
      failed: report.failed,
      blockProducts: countBlockProducts(first?.html ?? ''),
      recipientsFixedSeconds: +fixed.toFixed(2),
      totalSeconds: +seconds.toFixed(1),
      messagesPerSecond: Math.round(report.sent / seconds),
      peakRssMiB: Math.round(peakRss / 1048576),
    };
  } finally {
    await services.close();
  }
}

/** How many catalog products a rendered message shows (each title once per block). */
export function countBlockProducts(html: string): number {
  return Array.from({ length: CATALOG }, (_, k) => productTitle(k)).filter((title) => html.includes(`>${title}<`)).length;
}
