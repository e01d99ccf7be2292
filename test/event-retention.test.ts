import { expect, it } from 'vitest';
import { createEventPruner } from '../src/domain/events/event-pruner.js';
import { startWorker, workerOptionsFor } from '../src/worker/worker.js';
import { OUTBOX_RETENTION_MS } from '../src/domain/triggers/outbox-pruner.js';
import { eventually } from './helpers/browser.js';
import { describeEachDatabase, type TestWorkspace } from './helpers/harness.js';
import { sendingHelpers } from './helpers/sending.js';

const DAY = 86_400_000;
const AGGREGATE_TABLES = ['product_activity_daily', 'product_activity_totals', 'product_category_totals', 'product_pairs_daily', 'product_pair_totals'];

describeEachDatabase('event retention', (h, dialect) => {
  const helpers = sendingHelpers(h);
  const { api, contact, work } = helpers;
  const knex = () => h().services.db.knex;
  const setRetention = async (ws: TestWorkspace, days: number | null) => {
    const reply = await api(ws, 'PATCH', '/settings', { event_retention_days: days });
    expect(reply.statusCode, reply.body).toBe(200);
  };
  /** An anonymous visitor's event (no trigger fact), `ageDays` before the clock's now. */
  const anonymousEvent = async (ws: TestWorkspace, name: string, ageDays: number) => {
    const timestamp = new Date(h().clock() - ageDays * DAY).toISOString();
    const reply = await h().request({ method: 'POST', url: '/v1/track', json: { writeKey: ws.siteId, anonymousId: 'visitor-1', event: name, timestamp } });
    expect(reply.statusCode, reply.body).toBe(200);
  };
  const eventNames = async (ws: TestWorkspace) =>
    ((await knex()('events').where({ workspace_id: ws.id }).orderBy('created_at').select('event_name')) as Array<{ event_name: string }>).map((row) => row.event_name);
  /** A pruner of its own (the services' one looks at most once an hour); the batches each call went past. */
  const pruneAll = async (batchSize?: number) => {
    const pruner = createEventPruner({ db: h().services.db, settings: h().services.settings, clock: h().clock, batchSize });
    const batches: number[] = [];
    for (let n = await pruner.pruneOnce(inUse); n > 0; n = await pruner.pruneOnce(inUse)) batches.push(n);
    return batches;
  };
  const inUse = () => h().services.oldestFactInUse();
  const pruneOutbox = async () => {
    while ((await h().services.outboxPruner.pruneOnce()) > 0);
  };

  it('event_retention_days: null by default, set and cleared by PATCH, bad values a 400 naming it that changes nothing', async () => {
    const ws = await h().workspace();
    expect((await api(ws, 'GET', '/settings')).json().event_retention_days).toBeNull();
    await setRetention(ws, 30);
    expect((await api(ws, 'GET', '/settings')).json().event_retention_days).toBe(30);
    for (const bad of [0, -1, 1.5, '30', 36_501, true]) {
      const reply = await api(ws, 'PATCH', '/settings', { event_retention_days: bad, click_window_days: 9 });
      expect(reply.statusCode, String(bad)).toBe(400);
      expect(reply.json().error).toMatch(/event_retention_days/);
    }
    expect((await api(ws, 'GET', '/settings')).json()).toMatchObject({ event_retention_days: 30, click_window_days: 5 });
    await setRetention(ws, null);
    expect((await api(ws, 'GET', '/settings')).json().event_retention_days).toBeNull();
  });

  it('old events go, recent ones stay; a workspace keeping everything (null) or longer is untouched', async () => {
    const pruned = await h().workspace();
    const keepsAll = await h().workspace();
    const keepsLonger = await h().workspace();
    await setRetention(pruned, 30);
    await setRetention(keepsLonger, 365);
    for (const ws of [pruned, keepsAll, keepsLonger]) {
      for (const [name, age] of [['ancient', 300], ['old', 40], ['just_past', 30.01], ['just_within', 29.99], ['recent', 1]] as const) {
        await anonymousEvent(ws, name, age);
      }
    }
    expect(await pruneAll()).toEqual([3]);
    expect(await eventNames(pruned)).toEqual(['just_within', 'recent']);
    expect(await eventNames(keepsAll)).toEqual(['ancient', 'old', 'just_past', 'just_within', 'recent']);
    expect(await eventNames(keepsLonger)).toEqual(['ancient', 'old', 'just_past', 'just_within', 'recent']);
    // Nothing is left past the retention: another look removes nothing.
    expect(await pruneAll()).toEqual([]);
  });

  it('deletes in bounded batches, each call one batch, until none are left', async () => {
    const ws = await h().workspace();
    await setRetention(ws, 7);
    for (let i = 0; i < 12; i++) await anonymousEvent(ws, 'old', 10 + i / 100);
    await anonymousEvent(ws, 'recent', 1);
    const pruner = createEventPruner({ db: h().services.db, settings: h().services.settings, clock: h().clock, batchSize: 5 });
    const left: number[] = [];
    for (let n = await pruner.pruneOnce(inUse); n > 0; n = await pruner.pruneOnce(inUse)) {
      expect(n).toBeLessThanOrEqual(5);
      left.push((await eventNames(ws)).length);
    }
    expect(left).toEqual([8, 3, 1]);
    expect(await eventNames(ws)).toEqual(['recent']);
  });

  it('retention down to a day: a consumed fact keeps nothing and goes with its event; a fact a waiting cart check reads keeps its event, and the cart still enrols', async () => {
    const ws = await h().workspace();
    const email = 'cart@example.com';
    const who = await contact(ws, 'subscribed', {}, email);
    await setRetention(ws, 1);
    expect((await api(ws, 'POST', '/events', { contact_id: who, event_name: 'viewed_product' })).statusCode).toBe(201);
    await h().services.dispatcher.drain();
    const flow = await api(ws, 'POST', '/flows', {
      name: 'Cart',
      status: 'live',
      trigger: { type: 'abandoned_cart', delay_minutes: 0.001 },
      steps: [{ type: 'email', subject: 'Your cart', html: '<p>{{ event.name }}</p>' }],
    });
    expect(flow.statusCode, flow.body).toBe(201);
    expect((await api(ws, 'POST', '/events', { contact_id: who, event_name: 'added_to_cart' })).statusCode).toBe(201);
    await h().services.dispatcher.drain();
    expect(await h().services.jobs.pendingCount(['flow.cart_check'])).toBe(1);

    // Past the retention (a day): the consumed view fact keeps nothing, and goes with its event; the cart fact a
    // waiting check reads again keeps its event.
    const factsOf = async () =>
      ((await knex()('trigger_outbox').where({ workspace_id: ws.id, subject_type: 'event' }).orderBy('id').select('event_name')) as Array<{ event_name: string }>).map((f) => f.event_name);
    expect(await factsOf()).toEqual(['viewed_product', 'added_to_cart']);
    h().clock.advance(2 * DAY);
    await pruneAll();
    expect(await eventNames(ws)).toEqual(['added_to_cart']);
    expect(await factsOf()).toEqual(['added_to_cart']);

    // Long past it, the cart fact still keeps its event while the check waits.
    h().clock.advance(OUTBOX_RETENTION_MS);
    await pruneOutbox();
    await pruneAll();
    expect(await eventNames(ws)).toEqual(['added_to_cart']);

    // The check (due within a wall-clock moment of the cart) reads its fact's event: the enrolment shows it.
    const worker = startWorker(workerOptionsFor(h().services, { onFailure: () => {}, pollMs: 20 }));
    try {
      const enrollments = async () => (await api(ws, 'GET', `/flows/${flow.json().id}/enrollments`)).json().data as unknown[];
      await eventually(enrollments, (rows) => rows.length === 1);
    } finally {
      await worker.stop();
    }
  });

  it('the worker prunes; rankings aggregates, orders, revenue, attribution and engagements are unchanged', async () => {
    const ws = await h().workspace();
    const { email, campaignId, message } = await helpers.sentMessage(ws, '<a href="https://shop.test/p/1">Product</a>');
    const link = /href="([^"]+)"/.exec(message.html)![1]!.replace(/&amp;/g, '&');
    const url = new URL(link);
    expect((await h().request({ method: 'GET', url: url.pathname + url.search })).statusCode).toBe(302);
    const order = await h().request({
      method: 'POST',
      url: `/ecom/website/${ws.integrationId}`,
      headers: { authorization: `Bearer ${ws.integrationKey}` },
      json: {
        event_type: 'order_placed',
        external_id: 'r-o1',
        email,
        order: { external_id: 'o1', ordered_at: new Date(h().clock() + 60_000).toISOString(), total_amount: 100, currency: 'EUR', items: [{ external_id: 'tee', quantity: 1 }, { external_id: 'cap', quantity: 1 }] },
      },
    });
    expect(order.statusCode, order.body).toBe(200);
    const views = Array.from({ length: 4 }, (_, i) => ({ email, event_name: 'viewed_product', properties: { product_id: i < 3 ? 'cap' : 'tee' } }));
    expect((await api(ws, 'POST', '/events/batch', { events: views })).json().errors).toEqual([]);
    await work();
    const placed = h().clock();
    await setRetention(ws, 1);

    // Two days on: past the one-day floor, long before consumed facts would leave the outbox on their own.
    h().clock.advance(2 * DAY);
    const range = `from=${new Date(placed - DAY).toISOString()}&to=${new Date(placed + DAY).toISOString()}`;
    const snapshot = async () => {
      const aggregates: Record<string, unknown[]> = {};
      for (const table of AGGREGATE_TABLES) aggregates[table] = await knex()(table).where({ workspace_id: ws.id }).orderByRaw('1, 2, 3').select('*');
      return {
        aggregates,
        revenue: (await api(ws, 'GET', `/reports/revenue?${range}`)).json(),
        campaign: (await api(ws, 'GET', `/campaigns/${campaignId}/report`)).json(),
        orders: (await api(ws, 'GET', '/ecommerce/orders')).json(),
        engagements: await knex()('engagements').where({ workspace_id: ws.id }).orderBy('id').select('*'),
      };
    };
    const before = await snapshot();
    expect(before.revenue.data).toMatchObject([{ campaign_id: campaignId, orders: 1, revenue: 100 }]);
    expect(before.aggregates.product_activity_totals!.length).toBeGreaterThan(0);
    expect(before.engagements.length).toBeGreaterThan(0);
    const stored = (await eventNames(ws)).length;
    expect(stored).toBeGreaterThanOrEqual(4);

    await work(); // the worker's drains: the outbox pruner, then the event pruner
    expect(await eventNames(ws)).toEqual([]);
    expect(await snapshot()).toEqual(before);

    // The facts that named the pruned events went with them: an erasure still leaves nothing of the contact.
    const { id: contactId } = await knex()('contacts').where({ workspace_id: ws.id, email_key: email.toLowerCase() }).first('id');
    expect(await knex()('trigger_outbox').where({ workspace_id: ws.id, subject_type: 'event' }).select('id')).toEqual([]);
    await h().services.dataRights.erase(ws.id, contactId);
    expect(await knex()('trigger_outbox').where({ workspace_id: ws.id, contact_id: contactId }).select('id')).toEqual([]);
  });

  it.runIf(dialect === 'sqlite')('SQLite: freed pages go back to the file only when it was made with incremental auto-vacuum', async () => {
    const freePages = async () => Number(((await knex().raw('PRAGMA freelist_count')) as Array<{ freelist_count: number }>)[0]!.freelist_count);
    const oldEvents = async (ws: TestWorkspace) => {
      const timestamp = new Date(h().clock() - 10 * DAY).toISOString();
      const properties = { note: 'x'.repeat(2_000) };
      const batch = Array.from({ length: 100 }, (_, i) => ({ type: 'track', anonymousId: `v${i}`, event: 'viewed_page', timestamp, properties }));
      const reply = await h().request({ method: 'POST', url: '/v1/batch', json: { writeKey: ws.siteId, batch } });
      expect(reply.statusCode, reply.body).toBe(200);
    };
    const ws = await h().workspace();
    await setRetention(ws, 1);
    await knex().raw('VACUUM');
    await oldEvents(ws);
    await pruneAll();
    expect(await eventNames(ws)).toEqual([]);
    // The default file: the pages stay, free for later writes.
    expect(await freePages()).toBeGreaterThan(40);

    await knex().raw('PRAGMA auto_vacuum = INCREMENTAL');
    await knex().raw('VACUUM');
    expect(await freePages()).toBe(0);
    await oldEvents(ws);
    await pruneAll();
    expect(await eventNames(ws)).toEqual([]);
    expect(await freePages()).toBe(0);
  });
});
