import { readFileSync } from 'node:fs';
import { expect, it } from 'vitest';
import { startWorker, workerOptionsFor } from '../src/worker/worker.js';
import { eventually } from './helpers/browser.js';
import { describeEachDatabase, type TestWorkspace } from './helpers/harness.js';
import { postPlatformDelivery, SHOPIFY_SHOP, WOO_SHOP } from './helpers/platform-deliveries.js';
import { sendingHelpers } from './helpers/sending.js';

/**
 * End to end with the platforms' own payloads: each fixture of `fixtures/shopify/` and `fixtures/woocommerce/`
 * (their README tells the story) posted as the platform posts it, its exact bytes signed, to a running server,
 * and what emk then holds read back through the API: contacts and their consent, orders and their money, carts,
 * shipments, products, data requests and erasure.
 */

type Row = Record<string, any>;

const SECRET = 'whsec_fixture_9f8e7d6c5b4a';

const fixture = (platform: 'shopify' | 'woocommerce', file: string) => readFileSync(new URL(`../fixtures/${platform}/${file}`, import.meta.url));
const iso = (text: string) => new Date(text).toISOString();

describeEachDatabase('platform webhooks with the platforms\' fixtures', (h) => {
  const { api, contact: apiContact } = sendingHelpers(h);
  const knex = () => h().services.db.knex;

  async function integration(ws: TestWorkspace, platform: 'shopify' | 'woocommerce', fields: Record<string, unknown> = {}) {
    const reply = await api(ws, 'POST', '/integrations', { platform, secret: SECRET, ...fields });
    expect(reply.statusCode, reply.body).toBe(201);
    return reply.json().id as string;
  }

  /** `orders-create.json` as Shopify sends it: topic `orders/create`, the file's bytes signed, a delivery id. */
  function shopify(integrationId: string, file: string, deliveryId = `delivery-${file}`) {
    return shopifyBody(integrationId, file.replace(/\.json$/, '').replace('-', '/'), fixture('shopify', file), deliveryId, '2024-07');
  }

  /** A body derived from a fixture (JSON, or bytes), signed and sent under `topic` as Shopify sends it. */
  function shopifyBody(integrationId: string, topic: string, body: Buffer | object, deliveryId?: string, apiVersion = '2025-10') {
    return postPlatformDelivery(h, { platform: 'shopify', integrationId, topic, body, secret: SECRET, ...(deliveryId ? { deliveryId } : {}), headers: { 'x-shopify-api-version': apiVersion } });
  }
  const shopifyJson = (file: string): Row => JSON.parse(fixture('shopify', file).toString('utf8'));

  /** `order-updated-refunded.json` as WooCommerce sends it: topic `order.updated`, signed, with its source. */
  function woocommerce(integrationId: string, file: string) {
    const topic = file.replace(/\.json$/, '').split('-').slice(0, 2).join('.');
    return postPlatformDelivery(h, { platform: 'woocommerce', integrationId, topic, body: fixture('woocommerce', file), secret: SECRET, deliveryId: `delivery-${file}` });
  }

  const processed = async (reply: Promise<{ statusCode: number; json(): any; body: string }>, topic: string) => {
    const answered = await reply;
    expect(answered.statusCode, answered.body).toBe(200);
    expect(answered.json(), answered.body).toEqual({ status: 'processed', topic });
  };
  const contactOf = async (ws: TestWorkspace, email: string): Promise<Row | undefined> =>
    (await api(ws, 'GET', `/contacts?email=${encodeURIComponent(email)}`)).json().data[0];
  const orderOf = async (ws: TestWorkspace, externalId: string): Promise<Row | undefined> =>
    (await api(ws, 'GET', `/ecommerce/orders?external_id=${externalId}`)).json().data[0];
  const productOf = async (ws: TestWorkspace, externalId: string): Promise<Row | undefined> =>
    (await api(ws, 'GET', `/ecommerce/products?external_id=${externalId}`)).json().data[0];
  const consentOf = async (ws: TestWorkspace, contactId: string): Promise<Row[]> => (await api(ws, 'GET', `/contacts/${contactId}/consent`)).json().data;

  it('Shopify: the whole story of one customer, from the catalog to the shop that is gone', async () => {
    const ws = await h().workspace();
    const id = await integration(ws, 'shopify');
    const maya = 'maya.lindqvist@example.com';
    const source = `shopify:${SHOPIFY_SHOP}`;

    await processed(shopify(id, 'products-create.json'), 'products/create');
    const sweater = (await productOf(ws, '8901234567890'))!;
    expect(sweater).toMatchObject({
      title: 'Merino Crew Sweater',
      price: 89,
      currency: 'USD',
      platform: 'shopify',
      source,
      url: `https://${SHOPIFY_SHOP}/products/merino-crew-sweater`,
      categories: ['Knitwear', 'Merino', 'Winter'],
      product_type: 'Sweaters',
      metadata: { handle: 'merino-crew-sweater', vendor: 'Northwind Knits' },
      stock_qty: 21,
    });
    expect(sweater.variants.map((v: Row) => [v.external_id, v.price, v.stock_qty])).toEqual([
      ['45012345678901', 89, 12],
      ['45012345678902', 89, 4],
      ['45012345678903', 94, 5],
    ]);

    await processed(shopify(id, 'customers-create.json'), 'customers/create');
    const contact = (await contactOf(ws, maya))!;
    expect(contact).toMatchObject({ subscription_status: 'subscribed', source, properties: { first_name: 'Maya', last_name: 'Lindqvist', shopify_customer_id: '7012345678901' } });
    expect(await consentOf(ws, contact.id)).toEqual([{ status: 'subscribed', previous_status: null, origin: 'shopify', at: iso('2024-05-14T09:20:11-04:00') }]);

    // The checkout is a cart with its recovery URL; completed, it is marked converted.
    await processed(shopify(id, 'checkouts-create.json'), 'checkouts/create');
    const cartOf = () => knex()('carts').where({ workspace_id: ws.id, external_id: 'c1a5e2f0b7d94e3c8a61f0d2b9e7c4a3' }).first();
    expect(await cartOf()).toMatchObject({ contact_id: contact.id, integration_id: id, converted_at: null });
    expect((await cartOf()).checkout_url).toMatch(/^https:\/\/emk-demo\.myshopify\.com\/.*\/recover\?key=/);
    await processed(shopify(id, 'checkouts-update.json'), 'checkouts/update');
    expect((await cartOf()).converted_at).not.toBeNull();

    await processed(shopify(id, 'orders-create.json'), 'orders/create');
    expect((await shopify(id, 'orders-create.json')).json()).toEqual({ status: 'duplicate', topic: 'orders/create' });
    await processed(shopify(id, 'orders-paid.json'), 'orders/paid');
    const first = (await orderOf(ws, '5801234567890'))!;
    expect(first).toMatchObject({
      contact_id: contact.id,
      platform: 'shopify',
      order_number: '#1001',
      total_amount: 205.14,
      currency: 'USD',
      status: 'paid',
      ordered_at: iso('2024-05-14T09:32:10-04:00'),
      refunded_amount: 0,
      cancelled_at: null,
    });
    expect(first.items.map((i: Row) => [i.external_id, i.quantity, i.price])).toEqual([
      ['8901234567890', 1, 89],
      ['8901234567890', 1, 94],
    ]);
    expect(await contactOf(ws, maya)).toMatchObject({ orders_count: 1, lifetime_revenue: 205.14 });

    // Shipping: the fulfilment, then the carrier's delivery, on the order and the timeline (the shop as source).
    await processed(shopify(id, 'fulfillments-create.json'), 'fulfillments/create');
    expect((await orderOf(ws, '5801234567890'))!.shipping_status).toBe('info_received');
    await processed(shopify(id, 'orders-fulfilled.json'), 'orders/fulfilled');
    await processed(shopify(id, 'fulfillments-update.json'), 'fulfillments/update');
    expect((await orderOf(ws, '5801234567890'))!.shipping_status).toBe('delivered');
    const shipped = await knex()('events').where({ workspace_id: ws.id, event_name: 'shipping_information' }).orderBy('created_at');
    expect(shipped.map((e: Row) => [e.contact_id, e.source])).toEqual([
      [contact.id, source],
      [contact.id, source],
    ]);

    // The refund, by its own topic and again in the next snapshot: counted once.
    await processed(shopify(id, 'refunds-create.json'), 'refunds/create');
    await processed(shopify(id, 'orders-updated.json'), 'orders/updated');
    expect(await orderOf(ws, '5801234567890')).toMatchObject({ status: 'partially_refunded', refunded_amount: 101.52, total_amount: 205.14 });

    // The second order arrives cancelled and refunded: stored, counting nothing.
    await processed(shopify(id, 'orders-cancelled.json'), 'orders/cancelled');
    const second = (await orderOf(ws, '5801234567891'))!;
    expect(second).toMatchObject({ order_number: '#1002', total_amount: 103.62, refunded_amount: 103.62, contact_id: contact.id });
    expect(second.cancelled_at).not.toBeNull();
    expect(await contactOf(ws, maya)).toMatchObject({ orders_count: 2, lifetime_revenue: 103.62 });
    // A cancelled order fires no order_placed: only #1001 did.
    expect(await knex()('trigger_outbox').where({ workspace_id: ws.id, trigger_type: 'order_placed' })).toHaveLength(1);

    await processed(shopify(id, 'products-update.json'), 'products/update');
    expect(await productOf(ws, '8901234567890')).toMatchObject({ price: 74, compare_at_price: 94, id: sweater.id });
    await processed(shopify(id, 'products-delete.json'), 'products/delete');
    expect(await productOf(ws, '8901234567890')).toBeDefined();

    // She unsubscribes on the shop, later than anything emk recorded: the consent follows, with its time.
    await processed(shopify(id, 'customers-update.json'), 'customers/update');
    expect((await contactOf(ws, maya))!.subscription_status).toBe('unsubscribed');
    expect((await consentOf(ws, contact.id)).at(-1)).toEqual({ status: 'unsubscribed', previous_status: 'subscribed', origin: 'shopify', at: iso('2024-06-10T19:02:37-04:00') });

    await processed(shopify(id, 'customers-data_request.json'), 'customers/data_request');
    expect((await api(ws, 'GET', '/data-requests')).json().data).toMatchObject([{ email: maya, contact_id: contact.id, request_id: '2231987', integration_id: id }]);

    await processed(shopify(id, 'customers-redact.json'), 'customers/redact');
    expect((await api(ws, 'GET', `/contacts/${contact.id}`)).statusCode).toBe(404);
    expect((await orderOf(ws, '5801234567890'))!.contact_id).toBe(contact.id);

    await processed(shopify(id, 'shop-redact.json'), 'shop/redact');
    expect((await api(ws, 'GET', `/integrations/${id}`)).json()).toMatchObject({ active: false, domain: SHOPIFY_SHOP });
    expect(await productOf(ws, '8901234567890')).toBeUndefined();
    expect(await knex()('carts').where({ workspace_id: ws.id })).toEqual([]);
    expect((await shopify(id, 'orders-updated.json', 'after-redact')).statusCode).toBe(404);
    // Revenue reports do not change: the orders stay.
    expect(await knex()('orders').where({ workspace_id: ws.id })).toHaveLength(2);
  });

  it('Shopify: snapshots out of order, and a refund before its snapshot, leave the order as its latest snapshot says', async () => {
    const ws = await h().workspace();
    const id = await integration(ws, 'shopify', { shop_domain: SHOPIFY_SHOP });
    await processed(shopify(id, 'refunds-create.json'), 'refunds/create');
    await processed(shopify(id, 'orders-updated.json'), 'orders/updated');
    await processed(shopify(id, 'orders-fulfilled.json'), 'orders/fulfilled');
    await processed(shopify(id, 'orders-create.json'), 'orders/create');
    expect(await orderOf(ws, '5801234567890')).toMatchObject({ status: 'partially_refunded', refunded_amount: 101.52, total_amount: 205.14 });
    expect(await contactOf(ws, 'maya.lindqvist@example.com')).toMatchObject({ orders_count: 1, lifetime_revenue: 103.62 });
  });

  it('Shopify: a checkout starts the abandoned-cart flow; the same checkout completed starts none', async () => {
    const abandoned = await h().workspace('abandons');
    const completed = await h().workspace('completes');
    const flows = new Map<TestWorkspace, string>();
    for (const ws of [abandoned, completed]) {
      const reply = await api(ws, 'POST', '/flows', {
        name: 'Abandoned checkout',
        status: 'live',
        trigger: { type: 'abandoned_cart', delay_minutes: 0.001 },
        steps: [{ type: 'email', subject: 'Still thinking it over?', html: '<p>{{ cart.checkout_url }} {{ cart.total_amount }}</p>' }],
      });
      expect(reply.statusCode, reply.body).toBe(201);
      flows.set(ws, reply.json().id);
      const id = await integration(ws, 'shopify');
      await processed(shopify(id, 'checkouts-create.json'), 'checkouts/create');
      if (ws === completed) await processed(shopify(id, 'checkouts-update.json'), 'checkouts/update');
    }
    const enrolments = async (ws: TestWorkspace) => (await api(ws, 'GET', `/flows/${flows.get(ws)}/enrollments`)).json().data as Row[];
    const worker = startWorker(workerOptionsFor(h().services, { onFailure: () => {}, pollMs: 50 }));
    try {
      await eventually(() => enrolments(abandoned), (rows) => rows[0]?.status === 'completed');
      await eventually(() => h().services.jobs.pendingCount(['flow.cart_check']), (n) => n === 0);
    } finally {
      await worker.stop();
    }
    expect(await enrolments(abandoned)).toHaveLength(1);
    expect(await enrolments(completed)).toEqual([]);
    const [message] = (await api(abandoned, 'GET', `/messages?flow_id=${flows.get(abandoned)}`)).json().data as Row[];
    expect(message).toMatchObject({ to: 'maya.lindqvist@example.com' });
    expect(message!.html).toContain('/checkouts/ac/c1a5e2f0b7d94e3c8a61f0d2b9e7c4a3/recover');
    expect(message!.html).toContain('205.14');
  });

  // ------------------------------------------------------------------ Shopify consent, API 2025-01 on

  const CONSENT_TOPIC = 'customers_email_marketing_consent/update';
  const CONSENT_FILE = 'customers_email_marketing_consent-update.json';
  /** The consent topic's fixture with another state, time or address. */
  const consentBody = (state: string, consentUpdatedAt: string, emailAddress?: string) => {
    const sent = shopifyJson(CONSENT_FILE);
    return {
      ...sent,
      email_address: emailAddress ?? sent.email_address,
      email_marketing_consent: { ...sent.email_marketing_consent, state, consent_updated_at: consentUpdatedAt },
    };
  };
  /** An order fixture as API 2025-01 and later send it: its customer without `email_marketing_consent`. */
  const currentOrder = (file: string, patch: Row = {}) => {
    const { customer, ...order } = shopifyJson(file);
    const { email_marketing_consent: _removed, ...buyer } = customer;
    return { ...order, ...patch, customer: { ...buyer, ...patch.customer } };
  };
  const statusOf = async (ws: TestWorkspace, email: string) => (await contactOf(ws, email))?.subscription_status;

  it('Shopify consent topic: a new contact subscribes, then unsubscribes, at Shopify’s times; a redelivery or a stale change alters nothing', async () => {
    const ws = await h().workspace();
    const id = await integration(ws, 'shopify');
    const maya = 'maya.lindqvist@example.com';

    await processed(shopifyBody(id, CONSENT_TOPIC, consentBody('subscribed', '2024-05-14T09:20:11-04:00')), CONSENT_TOPIC);
    const contact = (await contactOf(ws, maya))!;
    expect(contact).toMatchObject({ subscription_status: 'subscribed', source: `shopify:${SHOPIFY_SHOP}`, properties: { shopify_customer_id: '7012345678901' } });

    await processed(shopify(id, CONSENT_FILE), CONSENT_TOPIC);
    expect(await statusOf(ws, maya)).toBe('unsubscribed');
    // The same delivery again is a duplicate; sent anew (another delivery id), it changes nothing either.
    expect((await shopify(id, CONSENT_FILE)).json()).toEqual({ status: 'duplicate', topic: CONSENT_TOPIC });
    await processed(shopify(id, CONSENT_FILE, 'sent-again'), CONSENT_TOPIC);
    // A subscribe Shopify recorded before her unsubscribe, arriving late, is ignored.
    await processed(shopifyBody(id, CONSENT_TOPIC, consentBody('subscribed', '2024-06-01T12:00:00-04:00')), CONSENT_TOPIC);
    expect(await statusOf(ws, maya)).toBe('unsubscribed');
    expect(await consentOf(ws, contact.id)).toEqual([
      { status: 'subscribed', previous_status: null, origin: 'shopify', at: iso('2024-05-14T09:20:11-04:00') },
      { status: 'unsubscribed', previous_status: 'subscribed', origin: 'shopify', at: iso('2024-06-10T19:02:37-04:00') },
    ]);
  });

  it('Shopify consent topic: a contact emk knew is unsubscribed and subscribed again by Shopify’s later records, not by older ones', async () => {
    const ws = await h().workspace();
    const id = await integration(ws, 'shopify');
    const known = 'ann@example.com';
    const contactId = await apiContact(ws, 'subscribed', { first_name: 'Ann' }, known);
    // Recorded by Shopify before emk's own subscribe: emk's newer decision stands.
    await processed(shopifyBody(id, CONSENT_TOPIC, consentBody('unsubscribed', '2024-06-10T19:02:37-04:00', known)), CONSENT_TOPIC);
    expect(await statusOf(ws, known)).toBe('subscribed');

    const unsubscribedAt = new Date(Date.now() + 60_000).toISOString();
    await processed(shopifyBody(id, CONSENT_TOPIC, consentBody('unsubscribed', unsubscribedAt, known)), CONSENT_TOPIC);
    expect(await contactOf(ws, known)).toMatchObject({ subscription_status: 'unsubscribed', properties: { first_name: 'Ann', shopify_customer_id: '7012345678901' } });
    const subscribedAt = new Date(Date.now() + 120_000).toISOString();
    await processed(shopifyBody(id, CONSENT_TOPIC, consentBody('subscribed', subscribedAt, known)), CONSENT_TOPIC);
    expect(await statusOf(ws, known)).toBe('subscribed');
    expect((await consentOf(ws, contactId)).slice(1)).toEqual([
      { status: 'unsubscribed', previous_status: 'subscribed', origin: 'shopify', at: unsubscribedAt },
      { status: 'subscribed', previous_status: 'unsubscribed', origin: 'shopify', at: subscribedAt },
    ]);
  });

  it('Shopify order box: a buyer the Web Pixel identified first is subscribed at the order’s time; later snapshots never outweigh a later unsubscribe', async () => {
    const ws = await h().workspace();
    const id = await integration(ws, 'shopify');
    const maya = 'maya.lindqvist@example.com';
    // The pixel identifies her at checkout, before any webhook: a contact that decided nothing yet.
    const identified = await h().request({ method: 'POST', url: '/collect/identify', json: { site_id: ws.siteId, email: maya, anonymous_id: 'pixel-visitor-1' } });
    expect(identified.statusCode, identified.body).toBe(200);
    const contactId = identified.json().contact_id as string;
    expect(await statusOf(ws, maya)).toBe('non_subscribed');

    await processed(shopifyBody(id, 'orders/create', currentOrder('orders-create.json')), 'orders/create');
    expect(await contactOf(ws, maya)).toMatchObject({ id: contactId, subscription_status: 'subscribed', orders_count: 1 });
    expect((await consentOf(ws, contactId)).at(-1)).toEqual({ status: 'subscribed', previous_status: 'non_subscribed', origin: 'shopify', at: iso('2024-05-14T09:32:10-04:00') });

    // She unsubscribes on the shop; a snapshot of the order made after that, its box still ticked, does not bring her back.
    await processed(shopify(id, CONSENT_FILE), CONSENT_TOPIC);
    await processed(shopifyBody(id, 'orders/updated', currentOrder('orders-updated.json', { updated_at: '2024-06-12T10:00:00-04:00' })), 'orders/updated');
    expect(await orderOf(ws, '5801234567890')).toMatchObject({ status: 'partially_refunded', refunded_amount: 101.52 });
    expect(await statusOf(ws, maya)).toBe('unsubscribed');
    expect((await consentOf(ws, contactId)).map((c) => [c.status, c.origin])).toEqual([
      ['non_subscribed', expect.stringMatching(/^create:/)],
      ['subscribed', 'shopify'],
      ['unsubscribed', 'shopify'],
    ]);
  });

  it('Shopify order box: left empty it is no unsubscribe; an older payload’s customer consent applies to a known contact at its own time', async () => {
    const ws = await h().workspace();
    const id = await integration(ws, 'shopify');
    const ann = 'ann@example.com';
    const annId = await apiContact(ws, 'subscribed', {}, ann);
    const later = new Date(Date.now() + 60_000).toISOString();
    const empty = currentOrder('orders-create.json', {
      id: 5801234567899,
      email: ann,
      buyer_accepts_marketing: false,
      processed_at: later,
      customer: { id: 7012345678999, email: ann },
    });
    await processed(shopifyBody(id, 'orders/create', empty), 'orders/create');
    expect(await orderOf(ws, '5801234567899')).toMatchObject({ contact_id: annId });
    expect(await statusOf(ws, ann)).toBe('subscribed');
    expect(await consentOf(ws, annId)).toHaveLength(1);
    // A new buyer with the box empty starts non_subscribed, as any contact emk creates without consent.
    const cleo = 'cleo@example.com';
    await processed(shopifyBody(id, 'orders/create', { ...empty, id: 5801234567898, email: cleo, customer: { ...empty.customer, id: 7012345678998, email: cleo } }), 'orders/create');
    expect(await statusOf(ws, cleo)).toBe('non_subscribed');

    // API 2024-07: the order's customer carries Shopify's consent record, applied at its time to the identified contact.
    const maya = 'maya.lindqvist@example.com';
    const identified = await h().request({ method: 'POST', url: '/collect/identify', json: { site_id: ws.siteId, email: maya } });
    expect(identified.statusCode, identified.body).toBe(200);
    await processed(shopify(id, 'orders-create.json'), 'orders/create');
    expect(await statusOf(ws, maya)).toBe('subscribed');
    expect((await consentOf(ws, identified.json().contact_id)).at(-1)).toEqual({
      status: 'subscribed',
      previous_status: 'non_subscribed',
      origin: 'shopify',
      at: iso('2024-05-14T09:20:11-04:00'),
    });
  });

  it('WooCommerce: the ping, a customer who subscribes, orders through their statuses and refunds, the catalog', async () => {
    const ws = await h().workspace();
    const id = await integration(ws, 'woocommerce');
    const source = `woocommerce:${WOO_SHOP}`;
    const ping = await h().request({
      method: 'POST',
      url: `/ecom/woocommerce/${id}`,
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      payload: fixture('woocommerce', 'ping.txt'),
    });
    expect(ping.json()).toEqual({ status: 'ignored', topic: 'ping' });

    await processed(woocommerce(id, 'product-created.json'), 'product.created');
    await processed(woocommerce(id, 'product-created-variable.json'), 'product.created');
    expect(await productOf(ws, '101')).toMatchObject({ title: 'Merino Wool Beanie', price: 24, stock_qty: 37, source, platform: 'woocommerce', categories: ['Accessories', 'Hats'] });
    expect(await productOf(ws, '120')).toMatchObject({ title: 'Organic Cotton Hoodie', price: 45 });
    // The integration learnt its shop from the first signed delivery.
    expect((await api(ws, 'GET', `/integrations/${id}`)).json().domain).toBe(WOO_SHOP);

    await processed(woocommerce(id, 'customer-created.json'), 'customer.created');
    const olivia = (await contactOf(ws, 'olivia.martin@example.com'))!;
    expect(olivia).toMatchObject({ subscription_status: 'non_subscribed', source, properties: { first_name: 'Olivia', woocommerce_customer_id: '42' } });
    await processed(woocommerce(id, 'customer-updated.json'), 'customer.updated');
    expect((await contactOf(ws, 'olivia.martin@example.com'))!.subscription_status).toBe('subscribed');
    expect((await consentOf(ws, olivia.id)).at(-1)).toMatchObject({ status: 'subscribed', origin: 'woocommerce', at: iso('2026-03-02T09:18:02Z') });
    const variation = await woocommerce(id, 'product-updated-variation.json');
    expect(variation.json()).toMatchObject({ status: 'processed', warnings: [expect.stringMatching(/variation/)] });

    await processed(woocommerce(id, 'order-created.json'), 'order.created');
    expect(await orderOf(ws, '5001')).toMatchObject({
      contact_id: olivia.id,
      platform: 'woocommerce',
      order_number: '5001',
      total_amount: 97.9,
      currency: 'EUR',
      status: 'processing',
      ordered_at: iso('2026-03-04T18:22:09Z'),
    });
    await processed(woocommerce(id, 'order-updated-completed.json'), 'order.updated');
    expect((await orderOf(ws, '5001'))!.status).toBe('completed');

    await processed(woocommerce(id, 'product-updated-sale.json'), 'product.updated');
    expect(await productOf(ws, '101')).toMatchObject({ price: 19, compare_at_price: 24, stock_qty: 35 });
    await processed(woocommerce(id, 'product-updated-draft.json'), 'product.updated');
    await processed(woocommerce(id, 'product-deleted.json'), 'product.deleted');
    expect(await productOf(ws, '130')).toBeUndefined();

    // A guest's unpaid order stores nothing; cancelled, it is stored counting nothing; trashed and restored, it stays cancelled.
    await processed(woocommerce(id, 'order-created-pending.json'), 'order.created');
    expect(await orderOf(ws, '5002')).toBeUndefined();
    await processed(woocommerce(id, 'order-updated-cancelled.json'), 'order.updated');
    const cancelled = (await orderOf(ws, '5002'))!;
    expect(cancelled.cancelled_at).not.toBeNull();
    await processed(woocommerce(id, 'order-deleted.json'), 'order.deleted');
    await processed(woocommerce(id, 'order-restored.json'), 'order.restored');
    expect((await orderOf(ws, '5002'))!.cancelled_at).toBe(cancelled.cancelled_at);
    expect(await contactOf(ws, 'noah.becker@example.org')).toMatchObject({ orders_count: 1, lifetime_revenue: 0, subscription_status: 'non_subscribed' });

    // Refunds by id: the partial one, then the full refund listing both, each counted once.
    await processed(woocommerce(id, 'order-updated-partial-refund.json'), 'order.updated');
    expect(await orderOf(ws, '5001')).toMatchObject({ refunded_amount: 24 });
    expect(await contactOf(ws, 'olivia.martin@example.com')).toMatchObject({ lifetime_revenue: 73.9 });
    await processed(woocommerce(id, 'order-updated-refunded.json'), 'order.updated');
    expect(await orderOf(ws, '5001')).toMatchObject({ refunded_amount: 97.9, status: 'refunded' });
    expect(await contactOf(ws, 'olivia.martin@example.com')).toMatchObject({ orders_count: 1, lifetime_revenue: 0 });

    // Deleting an account on the shop erases nothing here (no erasure request).
    await processed(woocommerce(id, 'customer-deleted.json'), 'customer.deleted');
    expect(await contactOf(ws, 'olivia.martin@example.com')).toBeDefined();
  });
});
