import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { expect, inject, it } from 'vitest';
import { runEmk } from './helpers/cli.js';
import { describeEachDatabase } from './helpers/harness.js';

const DEMO_COUNTS = { contacts: 3000, products: 300, orders: 1200, events: 4000, campaigns: 1, flows: 1, segments: 1 };
const DAY_MS = 86_400_000;

describeEachDatabase('emk seed', (h, dialect) => {
  const emk = (args: string[]) => runEmk([...args, '--db', h().database.url]);
  const json = async (args: string[]) => {
    const result = await emk([...args, '--json']);
    expect(result.code, result.stderr).toBe(0);
    return JSON.parse(result.stdout);
  };
  const page = { page: 1, perPage: 500 };
  let demo = '';

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
      counts: DEMO_COUNTS,
    });
    demo = result.workspace_id;
    expect((await h().services.workspaces.get(demo)).name).toBe('Demo shop');
    // The key it printed works.
    const me = await h().request({ method: 'GET', url: '/api/v1/contacts?perPage=1', key: result.api_key });
    expect(me.statusCode).toBe(200);
    expect(me.json().meta.total).toBe(3000);
  });

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
    expect(campaign).toMatchObject({ name: 'Autumn favourites', status: 'draft', segment_id: segment!.id });
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
    expect(again).toEqual({ workspace_id: demo, site_id: expect.any(String), api_key: null, integration: null, counts: DEMO_COUNTS });
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
  });
});
