import { readFileSync } from 'node:fs';
import { expect, it } from 'vitest';
import { refundedInShopMoney } from '../src/domain/orders/shop-money.js';
import { describeEachDatabase, type TestWorkspace } from './helpers/harness.js';
import { postPlatformDelivery } from './helpers/platform-deliveries.js';
import { sendingHelpers } from './helpers/sending.js';

/**
 * The shop's currency (settings `currency`) and orders paid in another one (docs/platforms/README.md, Currencies):
 * a Shopify Markets order booked in AUD and paid in USD, refunded in full in USD, leaves nothing standing; a
 * WooPayments order paid in EUR is booked in the store's USD; products and orders without a currency are in the
 * shop's, which a platform's first order sets unless the operator did.
 */

type Row = Record<string, any>;

const SECRET = 'whsec_currency_5e4d3c2b1a';
const fixture = (path: string) => readFileSync(new URL(`../fixtures/${path}`, import.meta.url));
const json = (path: string): Row => JSON.parse(fixture(path).toString('utf8'));

it('a refund in the currency paid converts at the order\'s own rate; one in the order\'s currency counts as it is', () => {
  const order = { currency: 'AUD', total_amount: 309.95, presentment_currency: 'USD', presentment_total_amount: 205.14 };
  expect(refundedInShopMoney([{ currency: 'USD', amount: 205.14 }], order)).toBe(309.95);
  expect(refundedInShopMoney([{ currency: 'USD', amount: 100 }, { currency: 'USD', amount: 105.14 }], order)).toBe(309.95);
  expect(refundedInShopMoney([{ currency: 'USD', amount: 50 }], order)).toBe(75.546);
  expect(refundedInShopMoney([{ currency: 'AUD', amount: 20 }, { currency: null, amount: 5 }], order)).toBe(25);
  // Without a presentment total there is no rate: the amount counts as sent.
  expect(refundedInShopMoney([{ currency: 'USD', amount: 50 }], { ...order, presentment_total_amount: null })).toBe(50);
});

describeEachDatabase('the shop\'s currency and multi-currency orders', (h) => {
  const { api } = sendingHelpers(h);

  async function integration(ws: TestWorkspace, platform: 'shopify' | 'woocommerce') {
    const reply = await api(ws, 'POST', '/integrations', { platform, secret: SECRET });
    expect(reply.statusCode, reply.body).toBe(201);
    return reply.json().id as string;
  }

  async function shopify(integrationId: string, topic: string, body: Buffer | object) {
    const reply = await postPlatformDelivery(h, { platform: 'shopify', integrationId, topic, body, secret: SECRET, headers: { 'x-shopify-api-version': '2025-10' } });
    expect(reply.statusCode, reply.body).toBe(200);
    expect(reply.json(), reply.body).toMatchObject({ status: 'processed', topic });
    return reply.json();
  }

  async function woocommerce(integrationId: string, topic: string, body: Buffer) {
    const reply = await postPlatformDelivery(h, { platform: 'woocommerce', integrationId, topic, body, secret: SECRET });
    expect(reply.statusCode, reply.body).toBe(200);
    return reply.json();
  }

  const order = async (ws: TestWorkspace, externalId: string): Promise<Row> => {
    const [found] = (await api(ws, 'GET', `/ecommerce/orders?external_id=${externalId}`)).json().data;
    expect(found, `order ${externalId}`).toBeDefined();
    return found;
  };
  const contact = async (ws: TestWorkspace, email: string): Promise<Row> => (await api(ws, 'GET', `/contacts?email=${encodeURIComponent(email)}`)).json().data[0];
  const settings = async (ws: TestWorkspace): Promise<Row> => (await api(ws, 'GET', '/settings')).json();
  const product = async (ws: TestWorkspace, body: Row): Promise<Row> => {
    const reply = await api(ws, 'POST', '/ecommerce/products', body);
    expect(reply.statusCode, reply.body).toBe(201);
    return reply.json();
  };
  const productCurrency = async (ws: TestWorkspace, id: string) => (await api(ws, 'GET', `/ecommerce/products/${id}`)).json().currency;

  it('a Markets order is booked in the shop\'s currency, keeps what was paid, and a full refund in USD leaves nothing', async () => {
    const ws = await h().workspace();
    const id = await integration(ws, 'shopify');
    await shopify(id, 'orders/create', fixture('shopify/markets/orders-create.json'));
    const placed = await order(ws, '5801234567890');
    expect(placed).toMatchObject({ total_amount: 309.95, currency: 'AUD', presentment_currency: 'USD', presentment_total_amount: 205.14, refunded_amount: 0 });

    await shopify(id, 'refunds/create', fixture('shopify/markets/refunds-create.json'));
    expect(await order(ws, '5801234567890')).toMatchObject({ total_amount: 309.95, currency: 'AUD', refunded_amount: 309.95 });
    expect(await contact(ws, 'maya.lindqvist@example.com')).toMatchObject({ lifetime_revenue: 0, orders_count: 1 });
  });

  it('refunds listed in a later Markets snapshot convert the same way, and each counts once', async () => {
    const ws = await h().workspace();
    const id = await integration(ws, 'shopify');
    const placed = json('shopify/markets/orders-create.json');
    await shopify(id, 'orders/create', placed);
    const refund = json('shopify/markets/refunds-create.json');
    refund.transactions[0].amount = '50.00';
    await shopify(id, 'refunds/create', refund);
    expect((await order(ws, String(placed.id))).refunded_amount).toBe(75.546);
    // The snapshot lists the same refund again and a second one: 50 + 155.14 USD is everything paid.
    const second = { ...refund, id: refund.id + 1, transactions: [{ ...refund.transactions[0], id: 1, amount: '155.14' }] };
    await shopify(id, 'orders/updated', { ...placed, updated_at: '2024-05-22T10:00:00-04:00', financial_status: 'refunded', refunds: [refund, second] });
    expect(await order(ws, String(placed.id))).toMatchObject({ refunded_amount: 309.95, status: 'refunded' });
    expect((await contact(ws, placed.email)).lifetime_revenue).toBe(0);
  });

  it('the first Shopify order sets the shop\'s currency; products that named none follow it, and so do reports', async () => {
    const ws = await h().workspace();
    expect((await settings(ws)).currency).toBe('USD');
    const plain = await product(ws, { title: 'Plain tee', price: 2199 });
    const euro = await product(ws, { title: 'Euro tee', price: 20, currency: 'eur' });
    expect(plain.currency).toBe('USD');
    expect(euro.currency).toBe('EUR');

    const id = await integration(ws, 'shopify');
    await shopify(id, 'orders/create', fixture('shopify/markets/orders-create.json'));
    expect((await settings(ws)).currency).toBe('AUD');
    expect(await productCurrency(ws, plain.id)).toBe('AUD');
    expect(await productCurrency(ws, euro.id)).toBe('EUR');
    const campaign = (await api(ws, 'POST', '/campaigns', { name: 'c', subject: 's', html: '<p>x</p>' })).json();
    expect((await api(ws, 'GET', `/campaigns/${campaign.id}/report`)).json()).toMatchObject({ revenue: 0, currency: 'AUD' });

    // A later shop in another currency changes nothing: the first one set it.
    const other = json('shopify/orders-create.json');
    await shopify(id, 'orders/create', { ...other, id: 1, currency: 'NZD', presentment_currency: 'NZD' });
    expect((await settings(ws)).currency).toBe('AUD');
  });

  it('a currency set in settings wins over the platform\'s, and an order naming none is in it', async () => {
    const ws = await h().workspace();
    const bad = await api(ws, 'PATCH', '/settings', { currency: 'rupees' });
    expect(bad.statusCode).toBe(400);
    expect(bad.json().error).toMatch(/currency/);
    const plain = await product(ws, { title: 'Kurta', price: 2199 });
    const set = await api(ws, 'PATCH', '/settings', { currency: 'inr' });
    expect(set.statusCode, set.body).toBe(200);
    expect(set.json().currency).toBe('INR');
    expect(await productCurrency(ws, plain.id)).toBe('INR');
    expect((await product(ws, { title: 'Saree', price: 4999 })).currency).toBe('INR');

    const id = await integration(ws, 'shopify');
    const placed = json('shopify/orders-create.json');
    delete placed.currency;
    delete placed.total_price_set;
    await shopify(id, 'orders/create', placed);
    expect(await order(ws, String(placed.id))).toMatchObject({ currency: 'INR', total_amount: 205.14, presentment_currency: null });
    expect((await settings(ws)).currency).toBe('INR');

    // null forgets it: back to USD, and the next platform order names it again.
    expect((await api(ws, 'PATCH', '/settings', { currency: null })).json().currency).toBe('USD');
    expect(await productCurrency(ws, plain.id)).toBe('USD');
    await shopify(id, 'orders/create', { ...json('shopify/markets/orders-create.json'), id: 2 });
    expect((await settings(ws)).currency).toBe('AUD');
    expect(await productCurrency(ws, plain.id)).toBe('AUD');
  });

  it('a WooPayments order paid in EUR is booked in the store\'s USD, and its refunds convert at its rate', async () => {
    const ws = await h().workspace();
    const id = await integration(ws, 'woocommerce');
    const body = json('woocommerce/multi-currency/order-created.json');
    await woocommerce(id, 'order.created', Buffer.from(JSON.stringify(body)));
    expect(await order(ws, String(body.id))).toMatchObject({ total_amount: 110, currency: 'USD', presentment_currency: 'EUR', presentment_total_amount: 97.9 });
    expect((await settings(ws)).currency).toBe('USD');

    const refunded = { ...body, status: 'refunded', date_modified_gmt: '2026-03-06T10:00:00', refunds: [{ id: 77, reason: '', total: '-97.90' }] };
    await woocommerce(id, 'order.updated', Buffer.from(JSON.stringify(refunded)));
    expect(await order(ws, String(body.id))).toMatchObject({ refunded_amount: 110 });
    expect((await contact(ws, body.billing.email)).lifetime_revenue).toBe(0);
  });

  it('a plain WooCommerce order names the store\'s currency and sets it', async () => {
    const ws = await h().workspace();
    const id = await integration(ws, 'woocommerce');
    await woocommerce(id, 'order.created', fixture('woocommerce/order-created.json'));
    expect(await order(ws, '5001')).toMatchObject({ total_amount: 97.9, currency: 'EUR', presentment_currency: null, presentment_total_amount: null });
    expect((await settings(ws)).currency).toBe('EUR');
  });
});
