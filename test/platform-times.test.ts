import { readFileSync } from 'node:fs';
import { expect, it } from 'vitest';
import { describeEachDatabase, type TestWorkspace } from './helpers/harness.js';
import { postPlatformDelivery } from './helpers/platform-deliveries.js';
import { sendingHelpers } from './helpers/sending.js';

/**
 * The platforms' own times and their test data (docs/platforms/README.md): a cancellation and a refund keep the
 * time the shop says they happened, not when emk received them; test orders (Shopify's `test: true`, WooPayments'
 * test mode) and Shopify's "Send test notification" store nothing: no order, revenue, contact, consent or flow.
 * Bodies are the fixtures of fixtures/shopify/ (test-mode/ for the test data) and fixtures/woocommerce/, signed.
 */

type Row = Record<string, any>;

const SECRET = 'whsec_times_4d3c2b1a';
const fixture = (path: string) => readFileSync(new URL(`../fixtures/${path}`, import.meta.url));
const json = (path: string): Row => JSON.parse(fixture(path).toString('utf8'));
const ms = (text: string) => new Date(text).getTime();
const iso = (text: string) => new Date(text).toISOString();

describeEachDatabase('platform times and test data', (h) => {
  const { api, work } = sendingHelpers(h);
  const knex = () => h().services.db.knex;

  async function integration(ws: TestWorkspace, platform: 'shopify' | 'woocommerce') {
    const reply = await api(ws, 'POST', '/integrations', { platform, secret: SECRET });
    expect(reply.statusCode, reply.body).toBe(201);
    return reply.json().id as string;
  }

  /** A body (a fixture's bytes, or JSON) as Shopify posts it; `headers` may add `X-Shopify-Test`. */
  const shopify = (integrationId: string, topic: string, body: Buffer | object, headers: Record<string, string> = {}) =>
    postPlatformDelivery(h, { platform: 'shopify', integrationId, topic, body, secret: SECRET, headers });
  const woocommerce = (integrationId: string, topic: string, body: Buffer | object) => postPlatformDelivery(h, { platform: 'woocommerce', integrationId, topic, body, secret: SECRET });

  /** The reply, which must be a 200; its JSON. */
  const answer = async (reply: Promise<{ statusCode: number; json(): any; body: string }>) => {
    const answered = await reply;
    expect(answered.statusCode, answered.body).toBe(200);
    return answered.json() as Row;
  };
  const orderOf = async (ws: TestWorkspace, externalId: string): Promise<Row | undefined> =>
    (await api(ws, 'GET', `/ecommerce/orders?external_id=${externalId}`)).json().data[0];
  const contactOf = async (ws: TestWorkspace, email: string): Promise<Row | undefined> =>
    (await api(ws, 'GET', `/contacts?email=${encodeURIComponent(email)}`)).json().data[0];
  const refundOf = async (ws: TestWorkspace, refundId: string): Promise<Row> => {
    const row = await knex()('order_refunds').where({ workspace_id: ws.id, refund_id: refundId }).first();
    return { refunded_at: Number(row.refunded_at), created_at: Number(row.created_at) };
  };

  // ------------------------------------------------------------------ times

  it("Shopify: cancelled_at is Shopify's, a refund keeps its processed_at; the first cancellation stays", async () => {
    const ws = await h().workspace();
    const id = await integration(ws, 'shopify');
    const before = Date.now();
    await answer(shopify(id, 'orders/create', fixture('shopify/orders-create.json')));
    await answer(shopify(id, 'refunds/create', fixture('shopify/refunds-create.json')));
    // The refund's own time, and when emk recorded it (now) beside it.
    const refund = await refundOf(ws, '9301234567890');
    expect(refund.refunded_at).toBe(ms('2024-05-21T14:10:00-04:00'));
    expect(refund.created_at).toBeGreaterThanOrEqual(before);

    await answer(shopify(id, 'orders/cancelled', fixture('shopify/orders-cancelled.json')));
    expect((await orderOf(ws, '5801234567891'))!.cancelled_at).toBe(iso('2024-05-28T16:40:21-04:00'));
    expect((await refundOf(ws, '9301234567891')).refunded_at).toBe(ms('2024-05-28T16:40:21-04:00'));

    // A later snapshot naming another cancellation time changes nothing: the first one stays.
    const later = { ...json('shopify/orders-cancelled.json'), cancelled_at: '2024-06-02T08:00:00-04:00', updated_at: '2024-06-02T08:00:01-04:00' };
    await answer(shopify(id, 'orders/updated', later));
    expect((await orderOf(ws, '5801234567891'))!.cancelled_at).toBe(iso('2024-05-28T16:40:21-04:00'));
  });

  it('WooCommerce: a cancellation and a refund at the time of the snapshot that shows them; order.deleted when received', async () => {
    const ws = await h().workspace();
    const id = await integration(ws, 'woocommerce');
    await answer(woocommerce(id, 'order.created', fixture('woocommerce/order-created.json')));
    await answer(woocommerce(id, 'order.updated', fixture('woocommerce/order-updated-partial-refund.json')));
    expect((await refundOf(ws, '5010')).refunded_at).toBe(ms('2026-03-09T13:05:52Z'));

    await answer(woocommerce(id, 'order.created', fixture('woocommerce/order-created-pending.json')));
    await answer(woocommerce(id, 'order.updated', fixture('woocommerce/order-updated-cancelled.json')));
    expect((await orderOf(ws, '5002'))!.cancelled_at).toBe(iso('2026-03-06T21:04:02Z'));

    // `order.deleted` sends only the id: the time is when emk received it.
    const before = Date.now();
    await answer(woocommerce(id, 'order.deleted', { id: 5001 }));
    const deletedAt = ms((await orderOf(ws, '5001'))!.cancelled_at);
    expect(deletedAt).toBeGreaterThanOrEqual(before);
    expect(deletedAt).toBeLessThanOrEqual(Date.now());
  });

  // ------------------------------------------------------------------ test orders

  it('Shopify: a test order stores nothing, nor does its fulfillment; a real order after it is stored and starts the flow', async () => {
    const ws = await h().workspace();
    const id = await integration(ws, 'shopify');
    const flow = await api(ws, 'POST', '/flows', {
      name: 'Thank you',
      status: 'live',
      trigger: { type: 'order_placed' },
      steps: [{ type: 'email', subject: 'Thanks', html: '<p>{{ order.total_amount }}</p>' }],
    });
    expect(flow.statusCode, flow.body).toBe(201);

    expect(await answer(shopify(id, 'orders/create', fixture('shopify/test-mode/orders-create.json')))).toEqual({
      status: 'processed',
      topic: 'orders/create',
      warnings: [expect.stringMatching(/^a test order \(test: true\)/)],
    });
    expect(await answer(shopify(id, 'fulfillments/create', fixture('shopify/test-mode/fulfillments-create.json')))).toEqual({
      status: 'processed',
      topic: 'fulfillments/create',
      warnings: ['order 5801234567892 is a test order: nothing of it is stored'],
    });
    // The barrier: a real order, stored, its buyer subscribed, and enrolled once the worker has run.
    await answer(shopify(id, 'orders/create', fixture('shopify/orders-create.json')));
    await work();
    const maya = (await contactOf(ws, 'maya.lindqvist@example.com'))!;
    expect(maya).toMatchObject({ subscription_status: 'subscribed', orders_count: 1, lifetime_revenue: 205.14 });
    const enrolled = (await api(ws, 'GET', `/flows/${flow.json().id}/enrollments`)).json().data as Row[];
    expect(enrolled.map((e) => e.contact_id)).toEqual([maya.id]);

    // Of the test order: no order, no contact (its buyer ticked the box), no shipment event, no outbox fact.
    expect(await orderOf(ws, '5801234567892')).toBeUndefined();
    expect(await contactOf(ws, 'ines.moreau@example.com')).toBeUndefined();
    expect((await api(ws, 'GET', '/contacts')).json().data.map((c: Row) => c.email)).toEqual(['maya.lindqvist@example.com']);
    expect(await knex()('events').where({ workspace_id: ws.id, event_name: 'shipping_information' })).toEqual([]);
    expect(await knex()('trigger_outbox').where({ workspace_id: ws.id, trigger_type: 'order_placed' })).toHaveLength(1);
    expect(await knex()('platform_test_orders').where({ workspace_id: ws.id }).select('order_key')).toEqual([{ order_key: '5801234567892' }]);
  });

  it("WooCommerce: an order paid in WooPayments' test mode stores nothing; a real one is stored", async () => {
    const ws = await h().workspace();
    const id = await integration(ws, 'woocommerce');
    expect(await answer(woocommerce(id, 'order.created', fixture('woocommerce/order-created-wcpay-test.json')))).toEqual({
      status: 'processed',
      topic: 'order.created',
      warnings: ['a test order (meta _wcpay_mode: test): not stored, nor its buyer'],
    });
    await answer(woocommerce(id, 'order.created', fixture('woocommerce/order-created.json')));
    expect(await orderOf(ws, '5001')).toMatchObject({ total_amount: 97.9 });
    expect(await orderOf(ws, '5003')).toBeUndefined();
    // The test order's buyer said yes to the newsletter (`_emk_subscribed`): no contact, no consent.
    expect(await contactOf(ws, 'jonas.weber@example.com')).toBeUndefined();
    expect(await contactOf(ws, 'olivia.martin@example.com')).toMatchObject({ subscription_status: 'subscribed', lifetime_revenue: 97.9 });
  });

  // ------------------------------------------------------------------ test notifications

  it('Shopify\'s "Send test notification" (X-Shopify-Test: true) is answered, signed, and applies nothing, whatever the topic', async () => {
    const ws = await h().workspace();
    const id = await integration(ws, 'shopify');
    const test = { 'x-shopify-test': 'true' };
    for (const [topic, file] of [
      ['orders/create', 'shopify/test-mode/notification-orders-create.json'],
      ['customers/create', 'shopify/test-mode/notification-customers-create.json'],
    ] as const) {
      expect(await answer(shopify(id, topic, fixture(file), test))).toEqual({
        status: 'ignored',
        topic,
        warnings: [expect.stringMatching(/^a test notification \(X-Shopify-Test: true\)/)],
      });
    }
    // Still signed: a wrong signature is refused as always.
    const forged = await h().request({
      method: 'POST',
      url: `/ecom/shopify/${id}`,
      headers: { 'content-type': 'application/json', 'x-shopify-topic': 'customers/create', 'x-shopify-hmac-sha256': 'Zm9yZ2Vk', ...test },
      payload: fixture('shopify/test-mode/notification-customers-create.json'),
    });
    expect(forged.statusCode).toBe(401);
    // The barrier: the same customer sample without the header is applied (the header is what kept it out).
    expect(await answer(shopify(id, 'customers/create', fixture('shopify/test-mode/notification-customers-create.json'), { 'x-shopify-test': 'false' }))).toEqual({
      status: 'processed',
      topic: 'customers/create',
    });
    expect(await contactOf(ws, 'bob@biller.com')).toMatchObject({ subscription_status: 'non_subscribed' });
    // Nothing else: the order sample's buyers are unknown, no order, no ignored topic counted.
    for (const email of ['jon@example.com', 'john@example.com']) expect(await contactOf(ws, email), email).toBeUndefined();
    expect(await knex()('orders').where({ workspace_id: ws.id })).toEqual([]);
    expect((await api(ws, 'GET', `/integrations/${id}`)).json().ignored_topics).toEqual({});
  });

  it('the order sample without its header is still a test order (test: true): nothing of it is stored', async () => {
    const ws = await h().workspace();
    const id = await integration(ws, 'shopify');
    const reply = await answer(shopify(id, 'orders/create', fixture('shopify/test-mode/notification-orders-create.json')));
    expect(reply.warnings).toEqual([expect.stringMatching(/^a test order \(test: true\)/)]);
    await answer(shopify(id, 'orders/create', fixture('shopify/orders-create.json')));
    expect((await knex()('orders').where({ workspace_id: ws.id })).map((o: Row) => o.external_id)).toEqual(['5801234567890']);
    for (const email of ['jon@example.com', 'john@example.com']) expect(await contactOf(ws, email), email).toBeUndefined();
  });
});
