import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { expect, inject, it } from 'vitest';
import { runEmk } from './helpers/cli.js';
import { describeEachDatabase } from './helpers/harness.js';

/** The demo's history; its story then adds orders (1 in 10 recipients buys after a click, 1 after an open) and email_opened/clicked events. */
const DEMO_HISTORY = { contacts: 3000, products: 300, orders: 1200, events: 4000, campaigns: 1, flows: 1, segments: 1 };
const DAY_MS = 86_400_000;

type Row = Record<string, any>;
const fixturesOf = (platform: 'shopify' | 'woocommerce') => fileURLToPath(new URL(`../fixtures/${platform}`, import.meta.url));
/** The manifest's deliveries as the seed answers them when each is applied. */
const deliveriesOf = (platform: 'shopify' | 'woocommerce', status: string) =>
  (JSON.parse(readFileSync(join(fixturesOf(platform), 'manifest.json'), 'utf8')).deliveries as Array<{ topic: string; file: string }>).map(({ topic, file }) => ({
    file,
    topic,
    status,
  }));
const iso = (text: string) => new Date(text).toISOString();

describeEachDatabase('emk seed', (h, dialect) => {
  const emk = (args: string[]) => runEmk([...args, '--db', h().database.url]);
  const json = async (args: string[]) => {
    const result = await emk([...args, '--json']);
    expect(result.code, result.stderr).toBe(0);
    return JSON.parse(result.stdout);
  };
  const page = { page: 1, perPage: 500 };
  let demo = '';
  let story = { campaign_id: '', sent: 0, opened: 0, clicked: 0, orders: 0 };
  let demoCounts: Record<string, number> = {};
  let apiKey = '';

  it('loads fixtures/demo into a new workspace named by the set: init’s shape plus counts', async () => {
    const started = performance.now();
    const result = await json(['seed']);
    const seconds = (performance.now() - started) / 1000;
    // Reported, not asserted: the machine is shared.
    console.log(`emk seed (fixtures/demo) on ${dialect}: ${seconds.toFixed(1)} s`);
    expect(result).toEqual({
      workspace_id: expect.any(String),
      site_id: expect.any(String),
      api_key: expect.stringMatching(/^emk_/),
      integration: { id: expect.any(String), api_key: expect.any(String), platform: 'website', domain: 'demo-shop.example.com' },
      console_login: { email: 'demo@example.com', password: expect.stringMatching(/^[A-Za-z0-9_-]{16}$/) },
      platform_integration: null,
      deliveries: [],
      story: { campaign_id: expect.any(String), sent: expect.any(Number), opened: expect.any(Number), clicked: expect.any(Number), orders: expect.any(Number) },
      counts: { ...DEMO_HISTORY, orders: expect.any(Number), events: expect.any(Number) },
    });
    demo = result.workspace_id;
    apiKey = result.api_key;
    story = result.story;
    demoCounts = result.counts;
    // Of every 10 recipients (by address) 4 open, 2 of them click, and 2 buy: one after a click, one after an open.
    const tenths = (per10: number) => Math.floor(story.sent / 10) * per10 + Math.min(story.sent % 10, per10);
    expect(story.sent).toBeGreaterThan(20);
    expect(story).toMatchObject({ opened: tenths(4), clicked: tenths(2), orders: tenths(1) + (tenths(3) - tenths(2)) });
    expect(result.counts).toMatchObject({ orders: 1200 + story.orders, events: 4000 + story.opened + story.clicked });
    // The console's demo login works (an owner of the demo workspace); the next seeded workspace gets its own.
    const signedIn = await h().services.users.openConsoleSession({ email: 'demo@example.com', password: result.console_login.password });
    expect(signedIn.user).toMatchObject({ workspaceId: demo, role: 'owner' });
    expect((await h().services.workspaces.get(demo)).name).toBe('Demo shop');
    // The key it printed works.
    const me = await h().request({ method: 'GET', url: '/api/v1/contacts?perPage=1', key: result.api_key });
    expect(me.statusCode).toBe(200);
    expect(me.json().meta.total).toBe(3000);
  }, 60_000);

  it('has data where a newcomer looks: recent orders, rankings, a live flow, a segment with members, a campaign for it', async () => {
    const { services } = h();
    const orders = (await services.orders.list(demo, {}, page)).data;
    const times = orders.map((o) => Date.parse(o.ordered_at));
    expect(Math.min(...times)).toBeGreaterThan(Date.now() - 91 * DAY_MS);
    expect(Math.max(...times)).toBeLessThanOrEqual(Date.now());

    const bestSelling = await services.feeds.rankType(demo, 'best_selling', { contactId: null, limit: 5 });
    expect(bestSelling).toHaveLength(5);
    expect((await services.feeds.rankType(demo, 'most_viewed', { contactId: null, limit: 5 })).length).toBe(5);

    const [flow] = (await services.flows.list(demo, page)).data;
    expect(flow).toMatchObject({ name: 'Abandoned cart', status: 'live', trigger: { type: 'abandoned_cart', delay_minutes: 60 } });
    // History was loaded as backfill: nobody was enrolled by it.
    expect((await services.flows.enrollments(demo, flow!.id, {}, page)).meta.total).toBe(0);

    const [segment] = (await services.segments.list(demo, page)).data;
    expect(segment!.name).toBe('Repeat customers');
    expect(segment!.member_count).toBeGreaterThan(0);
    const [campaign] = (await services.campaigns.list(demo, page)).data;
    expect(campaign).toMatchObject({ id: story.campaign_id, name: 'Autumn favourites', status: 'sent', segment_id: segment!.id, recipients: story.sent });
  });

  it('tells a story on first run: the campaign report and the revenue report show attributed orders and revenue (API)', async () => {
    const { services } = h();
    const report = await h().request({ method: 'GET', url: `/api/v1/campaigns/${story.campaign_id}/report`, key: apiKey });
    expect(report.statusCode).toBe(200);
    expect(report.json()).toMatchObject({ sent: story.sent, unique_opens: story.opened, unique_clicks: story.clicked, orders: story.orders });
    expect(report.json().revenue).toBeGreaterThan(0);
    const revenue = await h().request({ method: 'GET', url: '/api/v1/reports/revenue', key: apiKey });
    expect(revenue.statusCode).toBe(200);
    expect(revenue.json().data).toEqual([
      expect.objectContaining({ campaign_id: story.campaign_id, orders: story.orders, revenue: report.json().revenue, currency: 'EUR' }),
    ]);
    // Through the normal rules: each story order is credited to its buyer's own message, by a click or an open.
    const orders = [];
    for (let n = 1; n <= 3; n++) orders.push(...(await services.orders.list(demo, {}, { page: n, perPage: 500 })).data.filter((o) => o.attributed_campaign_id === story.campaign_id));
    expect(orders).toHaveLength(story.orders);
    const messages = (await services.messages.list(demo, { campaign_id: story.campaign_id }, page)).data;
    expect(messages.every((m) => m.status === 'captured')).toBe(true);
    for (const order of orders) {
      const message = messages.find((m) => m.contact_id === order.contact_id)!;
      expect([message.clicked_at, message.opened_at]).toContain(order.ordered_at);
      expect(Date.parse(order.ordered_at)).toBeLessThanOrEqual(Date.now());
    }
  });

  it('re-running into the same workspace changes nothing', async () => {
    const { services } = h();
    const snapshot = async () => ({
      contacts: (await services.contacts.list(demo, {}, page)).data,
      orders: (await services.orders.list(demo, {}, page)).data,
      products: (await services.products.list(demo, {}, page)).data,
      events: (await services.events.list(demo, {}, page)).data,
      suppressions: (await services.suppressions.list(demo, page)).data,
      segments: (await services.segments.list(demo, page)).data,
      ranking: (await services.feeds.rankType(demo, 'best_selling', { contactId: null, limit: 20 })).map((p) => p.id),
    });
    const before = await snapshot();
    const again = await json(['seed', '--workspace', demo]);
    expect(again).toEqual({
      workspace_id: demo,
      site_id: expect.any(String),
      api_key: null,
      integration: null,
      console_login: null,
      platform_integration: null,
      deliveries: [],
      story: { campaign_id: story.campaign_id, sent: story.sent, opened: 0, clicked: 0, orders: 0 },
      counts: demoCounts,
    });
    expect(await snapshot()).toEqual(before);
    expect((await services.workspaces.list()).length).toBe(1);
  });

  it('--fixtures DIR loads another set in the same format; days_ago puts its times before now', async () => {
    const dir = join(inject('tmpDir'), `${dialect}-tiny-set`);
    mkdirSync(dir, { recursive: true });
    writeFileSync(
      join(dir, 'manifest.json'),
      JSON.stringify({ name: 'Tiny', domain: 'tiny.test', contacts: 'people.jsonl', products: 'catalog.csv', orders: 'orders.jsonl', segments: ['vip.json'] }),
    );
    writeFileSync(join(dir, 'people.jsonl'), `${JSON.stringify({ email: 'tia@example.com', subscription_status: 'subscribed' })}\n`);
    writeFileSync(join(dir, 'catalog.csv'), 'external_id,title,price,categories\nT-1,Teapot,30,Home|Kitchen\n');
    writeFileSync(
      join(dir, 'orders.jsonl'),
      `${JSON.stringify({ email: 'tia@example.com', external_id: 'TO-1', order_number: '1', total_amount: 30, currency: 'EUR', days_ago: 2, items: [{ external_id: 'T-1', quantity: 1, price: 30 }] })}\n`,
    );
    writeFileSync(join(dir, 'vip.json'), JSON.stringify({ name: 'Buyers', conditions: { all: [{ orders: { count: { gte: 1 } } }] } }));

    const result = await json(['seed', '--fixtures', dir]);
    expect(result.counts).toEqual({ contacts: 1, products: 1, orders: 1, events: 0, campaigns: 0, flows: 0, segments: 1 });
    const { services } = h();
    const [order] = (await services.orders.list(result.workspace_id, {}, page)).data;
    expect(Math.abs(Date.now() - 2 * DAY_MS - Date.parse(order!.ordered_at))).toBeLessThan(60_000);
    expect((await services.products.list(result.workspace_id, {}, page)).data[0]!.categories).toEqual(['Home', 'Kitchen']);
    expect((await services.segments.list(result.workspace_id, page)).data[0]!.member_count).toBe(1);

    // A refused row fails the seed, naming file and line.
    writeFileSync(join(dir, 'people.jsonl'), `${JSON.stringify({ email: 'tia@example.com' })}\n${JSON.stringify({ email: 'nobody' })}\n`);
    const failed = await emk(['seed', '--fixtures', dir, '--workspace', result.workspace_id]);
    expect(failed.code).toBe(1);
    expect(failed.stderr).toMatch(/^emk: .*people\.jsonl line 2: invalid request: email must be an email address/);
    // A folder without a manifest is a usage error.
    const none = await emk(['seed', '--fixtures', inject('tmpDir')]);
    expect(none.code).toBe(2);
    expect(none.stderr).toMatch(/^emk: no fixture set at .*: it has no manifest\.json/);

    // Webhook bodies need the platform that sent them, and a platform's row files are the exports emk reads of it.
    const manifest = (fields: Record<string, unknown>) => writeFileSync(join(dir, 'manifest.json'), JSON.stringify({ name: 'Tiny', domain: 'tiny.test', ...fields }));
    manifest({ deliveries: [{ topic: 'orders/create', file: 'vip.json' }] });
    expect((await emk(['seed', '--fixtures', dir])).stderr).toMatch(/manifest\.json: deliveries is allowed only with a platform/);
    manifest({ platform: { name: 'woocommerce', shop_domain: 'tiny.test' }, orders: 'orders.jsonl' });
    expect((await emk(['seed', '--fixtures', dir])).stderr).toMatch(/manifest\.json: orders must be left out with platform woocommerce: emk reads only its products export/);
    manifest({ platform: { name: 'shopify', shop_domain: 'tiny.test' }, deliveries: [{ topic: 'orders/create', file: 'missing.json' }] });
    expect((await emk(['seed', '--fixtures', dir])).stderr).toMatch(/deliveries names missing\.json, which does not exist/);
    expect((await h().services.workspaces.list()).map((w) => w.name).filter((name) => name === 'Tiny')).toHaveLength(1);
  });
  /** Everything the workspace holds that a seed writes, row by row: a re-run must leave each row as it was. */
  async function storedOf(workspaceId: string) {
    const knex = h().services.db.knex;
    const tables = ['contacts', 'orders', 'order_items', 'order_refunds', 'products', 'carts', 'events', 'trigger_outbox', 'data_requests', 'integrations', 'webhook_deliveries'];
    const sorted = (rows: Row[]) => rows.map((row) => JSON.stringify(row)).sort();
    const stored: Record<string, string[]> = {};
    for (const table of tables) stored[table] = sorted(await knex(table).where({ workspace_id: workspaceId }));
    stored.product_variants = sorted(await knex('product_variants').whereIn('product_id', knex('products').select('id').where({ workspace_id: workspaceId })));
    stored.subscription_changes = sorted(await knex('subscription_changes').whereIn('contact_id', knex('contacts').select('id').where({ workspace_id: workspaceId })));
    return stored;
  }

  /** A second run into the workspace: every delivery a duplicate, no integration created, not a row changed. */
  async function rerunChangesNothing(platform: 'shopify' | 'woocommerce', first: Row) {
    const before = await storedOf(first.workspace_id);
    expect(before.webhook_deliveries).toHaveLength(first.deliveries.length);
    const again = await json(['seed', '--fixtures', fixturesOf(platform), '--workspace', first.workspace_id]);
    expect(again).toEqual({ ...first, site_id: expect.any(String), api_key: null, integration: null, console_login: null, platform_integration: null, deliveries: deliveriesOf(platform, 'duplicate') });
    expect(await storedOf(first.workspace_id)).toEqual(before);
  }

  it('--fixtures fixtures/shopify: the shop’s exports, then its webhook bodies through the webhook’s own path, into a workspace connected to the shop', async () => {
    const result = await json(['seed', '--fixtures', fixturesOf('shopify')]);
    const shop = 'emk-demo.myshopify.com';
    expect(result.platform_integration).toEqual({
      id: expect.any(String),
      platform: 'shopify',
      webhook_url: expect.stringMatching(new RegExp(`/ecom/shopify/${result.platform_integration.id}$`)),
      active: true,
      created_at: expect.any(String),
      secret: expect.stringMatching(/^[\w-]{32}$/),
    });
    expect(result.deliveries).toEqual(deliveriesOf('shopify', 'processed'));
    // 4 customers of the export and Maya; 2 exported products (a draft is left out) and the sweater; 5 exported orders and her 2.
    expect(result.counts).toEqual({ contacts: 5, products: 3, orders: 7, events: 2, campaigns: 0, flows: 0, segments: 0 });

    const get = async (url: string) => {
      const reply = await h().request({ method: 'GET', url: `/api/v1${url}`, key: result.api_key });
      expect(reply.statusCode, reply.body).toBe(200);
      return reply.json();
    };
    expect((await get(`/integrations/${result.platform_integration.id}`)).domain).toBe(shop);

    // The exports, read as `--format shopify` reads them.
    expect((await get('/contacts?email=ann@example.com')).data[0]).toMatchObject({ subscription_status: 'subscribed', properties: { shopify_customer_id: '7304567890123' } });
    expect((await get('/ecommerce/orders?external_id=5523347931257')).data[0]).toMatchObject({ order_number: '#1003', total_amount: 126.9, refunded_amount: 18, platform: 'shopify' });
    const shirt = (await get('/ecommerce/products?external_id=linen-shirt')).data[0];
    expect(shirt.variants.map((v: Row) => v.sku)).toEqual(['LS-S-WH', 'LS-M-WH', 'LS-L-BL']);

    // The webhooks: Maya's consent as the shop gave it, at the shop's times.
    const maya = (await get('/contacts?email=maya.lindqvist@example.com')).data[0];
    expect(maya).toMatchObject({ subscription_status: 'unsubscribed', source: `shopify:${shop}`, orders_count: 2, lifetime_revenue: 103.62 });
    expect((await get(`/contacts/${maya.id}/consent`)).data).toEqual([
      { status: 'subscribed', previous_status: null, origin: 'shopify', at: iso('2024-05-14T09:20:11-04:00') },
      { status: 'unsubscribed', previous_status: 'subscribed', origin: 'shopify', at: iso('2024-06-10T19:02:37-04:00') },
    ]);
    // Order #1001 with its refund counted once (refunds/create, then the snapshot), delivered; #1002 cancelled.
    expect((await get('/ecommerce/orders?external_id=5801234567890')).data[0]).toMatchObject({
      contact_id: maya.id,
      order_number: '#1001',
      total_amount: 205.14,
      currency: 'USD',
      status: 'partially_refunded',
      refunded_amount: 101.52,
      shipping_status: 'delivered',
    });
    const cancelled = (await get('/ecommerce/orders?external_id=5801234567891')).data[0];
    expect(cancelled).toMatchObject({ order_number: '#1002', refunded_amount: 103.62 });
    expect(cancelled.cancelled_at).not.toBeNull();
    // The sweater as its last update left it, with its variants.
    const sweater = (await get('/ecommerce/products?external_id=8901234567890')).data[0];
    expect(sweater).toMatchObject({ title: 'Merino Crew Sweater', price: 74, compare_at_price: 94, source: `shopify:${shop}` });
    expect(sweater.variants.map((v: Row) => [v.external_id, v.price])).toEqual([
      ['45012345678901', 89],
      ['45012345678902', 89],
      ['45012345678903', 74],
    ]);
    // The checkout is her cart, with its recovery URL, converted when it completed.
    const [cart] = await h().services.db.knex('carts').where({ workspace_id: result.workspace_id, external_id: 'c1a5e2f0b7d94e3c8a61f0d2b9e7c4a3' });
    expect(cart).toMatchObject({ contact_id: maya.id, integration_id: result.platform_integration.id });
    expect(cart.checkout_url).toMatch(/^https:\/\/emk-demo\.myshopify\.com\/.*\/recover\?key=/);
    expect(cart.converted_at).not.toBeNull();
    expect((await get('/data-requests')).data).toMatchObject([{ email: 'maya.lindqvist@example.com', contact_id: maya.id, request_id: '2231987' }]);

    await rerunChangesNothing('shopify', result);
  });

  it('--fixtures fixtures/woocommerce: the product export, then the store’s webhook bodies; a second run changes nothing', async () => {
    const result = await json(['seed', '--fixtures', fixturesOf('woocommerce')]);
    const shop = 'shop.example.com';
    expect(result.platform_integration).toMatchObject({ platform: 'woocommerce', webhook_url: expect.stringMatching(/\/ecom\/woocommerce\//) });
    // Applied like any delivery: the variation's body is answered with its warning, the rest of the story goes on.
    const variation = { file: 'product-updated-variation.json', topic: 'product.updated', status: 'processed', warnings: [expect.stringMatching(/variation/)] };
    expect(result.deliveries).toEqual(deliveriesOf('woocommerce', 'processed').map((d) => (d.file === variation.file ? variation : d)));
    // 3 exported products (a draft is left out) and the beanie and hoodie of the webhooks; Olivia and Noah, an order each.
    expect(result.counts).toEqual({ contacts: 2, products: 5, orders: 2, events: 0, campaigns: 0, flows: 0, segments: 0 });

    const get = async (url: string) => (await h().request({ method: 'GET', url: `/api/v1${url}`, key: result.api_key })).json();
    const hoodie = (await get('/ecommerce/products?external_id=16')).data[0];
    expect(hoodie).toMatchObject({ title: 'Hoodie', platform: 'woocommerce', source: `woocommerce:${shop}` });
    expect(hoodie.variants.map((v: Row) => [v.external_id, v.price])).toEqual([
      ['18', 45],
      ['20', 40],
    ]);
    expect((await get('/ecommerce/products?external_id=101')).data[0]).toMatchObject({ title: 'Merino Wool Beanie', price: 19, compare_at_price: 24 });
    expect((await get('/ecommerce/products?external_id=130')).data).toEqual([]);

    const olivia = (await get('/contacts?email=olivia.martin@example.com')).data[0];
    expect(olivia).toMatchObject({ subscription_status: 'subscribed', orders_count: 1, lifetime_revenue: 0 });
    expect((await get(`/contacts/${olivia.id}/consent`)).data.at(-1)).toMatchObject({ status: 'subscribed', origin: 'woocommerce', at: iso('2026-03-02T09:18:02Z') });
    // Refunded in two parts, each counted once; the guest's unpaid order stored when cancelled, and cancelled it stays.
    expect((await get('/ecommerce/orders?external_id=5001')).data[0]).toMatchObject({ contact_id: olivia.id, status: 'refunded', total_amount: 97.9, refunded_amount: 97.9 });
    expect((await get('/ecommerce/orders?external_id=5002')).data[0].cancelled_at).not.toBeNull();

    await rerunChangesNothing('woocommerce', result);
  });
});
