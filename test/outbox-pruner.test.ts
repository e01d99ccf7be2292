import { expect, it } from 'vitest';
import { OUTBOX_RETENTION_MS } from '../src/domain/triggers/outbox-pruner.js';
import { startWorker, workerOptionsFor } from '../src/worker/worker.js';
import { eventually } from './helpers/browser.js';
import { describeEachDatabase, type TestWorkspace } from './helpers/harness.js';
import { sendingHelpers } from './helpers/sending.js';

const DAY = 86_400_000;

describeEachDatabase('trigger outbox pruning', (h) => {
  const { api, contact, messagesOf } = sendingHelpers(h);
  const facts = async (ws: TestWorkspace) =>
    (await h().services.db.knex('trigger_outbox').where({ workspace_id: ws.id }).orderBy('id').select('id', 'trigger_type', 'event_name', 'processed_at')) as Array<{
      id: number | string;
      trigger_type: string;
      event_name: string | null;
      processed_at: unknown;
    }>;
  const event = async (ws: TestWorkspace, contactId: string, eventName: string) => {
    const reply = await api(ws, 'POST', '/events', { contact_id: contactId, event_name: eventName });
    if (reply.statusCode >= 300) throw new Error(reply.body);
  };
  const webhook = (ws: TestWorkspace, body: Record<string, unknown>) =>
    h().request({ method: 'POST', url: `/ecom/website/${ws.integrationId}`, headers: { authorization: `Bearer ${ws.integrationKey}` }, json: body });
  const prune = async () => {
    let total = 0;
    for (let n = await h().services.outboxPruner.pruneOnce(); n > 0; n = await h().services.outboxPruner.pruneOnce()) total += n;
    return total;
  };

  it('removes consumed facts past the retention; order facts and facts not yet consumed stay', async () => {
    const ws = await h().workspace();
    const email = 'history@example.com';
    const who = await contact(ws, 'subscribed', {}, email);
    for (const name of ['viewed_product', 'viewed_product', 'started_checkout']) await event(ws, who, name);
    const order = await webhook(ws, {
      event_type: 'order_placed',
      external_id: 'evt-order-1',
      email,
      order: { external_id: 'order-1', order_number: '#1', total_amount: 42.5, currency: 'EUR', status: 'paid' },
    });
    expect(order.statusCode).toBe(200);
    await h().services.dispatcher.drain();
    await event(ws, who, 'viewed_product'); // recorded after the drain: not consumed yet
    const before = await facts(ws);
    expect(before.filter((f) => f.processed_at === null)).toHaveLength(1);
    expect(before.some((f) => f.trigger_type === 'order_placed')).toBe(true);

    h().clock.advance(OUTBOX_RETENTION_MS - DAY);
    expect(await prune()).toBe(0);
    expect(await facts(ws)).toEqual(before);

    h().clock.advance(2 * DAY);
    expect(await prune()).toBeGreaterThan(0);
    const after = await facts(ws);
    expect(after.map((f) => f.trigger_type)).toEqual([...before.filter((f) => f.trigger_type === 'order_placed').map(() => 'order_placed'), 'event']);
    expect(after.at(-1)).toEqual(before.at(-1));

    // The last fact is consumed now, and is as old as the others: the next look comes an hour after the last.
    await h().services.dispatcher.drain();
    h().clock.advance(30 * 60_000);
    expect(await prune()).toBe(0);
    h().clock.advance(31 * 60_000);
    expect(await prune()).toBe(1);
    expect((await facts(ws)).map((f) => f.trigger_type)).toEqual(after.slice(0, -1).map((f) => f.trigger_type));
  });

  it('one look goes through batch after batch: 2,500 consumed facts are removed', async () => {
    await h().services.dispatcher.drain();
    const ws = await h().workspace();
    await contact(ws, 'subscribed', {}, 'bulk@example.com');
    for (let request = 0; request < 3; request++) {
      const events = Array.from({ length: request < 2 ? 1000 : 500 }, () => ({ email: 'bulk@example.com', event_name: 'viewed_product' }));
      const reply = await api(ws, 'POST', '/events/batch', { events });
      expect(reply.statusCode, reply.body).toBeLessThan(300);
    }
    await h().services.dispatcher.drain();
    expect((await facts(ws)).length).toBeGreaterThanOrEqual(2_500);
    h().clock.advance(OUTBOX_RETENTION_MS + DAY);
    expect(await prune()).toBeGreaterThanOrEqual(2_500);
    expect(await facts(ws)).toEqual([]);
  });

  it("the worker prunes before it claims, keeping the cart fact a waiting check reads: the abandoned cart still enrols", async () => {
    await h().services.dispatcher.drain();
    const ws = await h().workspace();
    const email = 'cart-kept@example.com';
    const who = await contact(ws, 'subscribed', {}, email);
    await event(ws, who, 'viewed_product');
    await h().services.dispatcher.drain();
    const flow = await api(ws, 'POST', '/flows', {
      name: 'Cart',
      status: 'live',
      trigger: { type: 'abandoned_cart', delay_minutes: 0.001 },
      steps: [{ type: 'email', subject: 'Your cart', html: '<p>{{ cart.total_amount }} {{ cart.currency }}</p>' }],
    });
    expect(flow.statusCode).toBe(201);
    const cart = await webhook(ws, {
      event_type: 'added_to_cart',
      external_id: 'evt-cart-1',
      email,
      cart: { external_id: 'cart-1', total_amount: 19.9, currency: 'EUR', checkout_url: 'https://shop.test/checkout/cart-1', items: [] },
    });
    expect(cart.statusCode).toBe(200);
    await h().services.dispatcher.drain();
    expect(await h().services.jobs.pendingCount(['flow.cart_check'])).toBe(1);
    const cartFact = await h().services.jobs.smallestInPayload('flow.cart_check', 'factId');
    expect(cartFact).not.toBeNull();

    h().clock.advance(OUTBOX_RETENTION_MS + DAY);
    const worker = startWorker(workerOptionsFor(h().services, { onFailure: () => {}, pollMs: 50 }));
    try {
      await eventually(() => messagesOf(ws, `flow_id=${flow.json().id}`), (rows) => rows.length === 1);
    } finally {
      await worker.stop();
    }
    const left = await facts(ws);
    expect(left.some((f) => f.event_name === 'viewed_product')).toBe(false);
    expect(left.some((f) => Number(f.id) === cartFact)).toBe(true);
    expect((await api(ws, 'GET', `/flows/${flow.json().id}/enrollments`)).json().data).toHaveLength(1);
    const [message] = await messagesOf(ws, `flow_id=${flow.json().id}`);
    expect(message!.html).toContain('19.9 EUR');
  });
});
