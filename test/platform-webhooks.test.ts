import { createHmac } from 'node:crypto';
import { expect, it, vi } from 'vitest';
import type { PlatformConsent, PlatformCustomer, StoreChange } from '../src/domain/platform-webhooks/store-change.js';
import { runEmk } from './helpers/cli.js';
import { describeEachDatabase, type TestWorkspace } from './helpers/harness.js';
import { sendingHelpers } from './helpers/sending.js';

/**
 * The applier of Shopify's and WooCommerce's webhooks through the real routes, signatures and databases. The
 * platforms' mappers are replaced by one that reads the store changes from the body itself (`{changes}`; any
 * other body is a topic emk ignores), so each rule of the applier is driven exactly; the mappers' own readings
 * of real payloads are tested with the platforms' fixtures (platform-fixtures.test.ts).
 */
vi.mock('../src/domain/shopify/shopify-mapping.js', () => ({
  mapShopifyDelivery: (_topic: string, body: { changes?: unknown[]; warnings?: string[] }) =>
    Array.isArray(body.changes) ? { status: 'mapped', changes: body.changes, warnings: body.warnings ?? [] } : { status: 'ignored' },
}));
vi.mock('../src/domain/woocommerce/woocommerce-mapping.js', () => ({
  mapWooCommerceDelivery: (_topic: string, body: { changes?: unknown[] }) =>
    Array.isArray(body.changes) ? { status: 'mapped', changes: body.changes, warnings: [] } : { status: 'ignored' },
}));

type Row = Record<string, any>;

const SECRET = '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';
const SHOP = 'acme.myshopify.com';
const HOUR = 3_600_000;

const sign = (secret: string, body: string | Buffer) => createHmac('sha256', secret).update(body).digest('base64');

describeEachDatabase('platform webhooks', (h) => {
  const { api, contact, work } = sendingHelpers(h);
  const knex = () => h().services.db.knex;

  async function integration(ws: TestWorkspace, platform: 'shopify' | 'woocommerce' = 'shopify', fields: Record<string, unknown> = { shop_domain: SHOP }) {
    const reply = await api(ws, 'POST', '/integrations', { platform, secret: SECRET, ...fields });
    if (reply.statusCode !== 201) throw new Error(reply.body);
    return reply.json().id as string;
  }

  interface Sent {
    topic?: string;
    id?: string | null;
    secret?: string;
    signature?: string | null;
    shop?: string | null;
    platform?: 'shopify' | 'woocommerce';
  }

  /** A delivery as the platform sends it: the raw JSON bytes, signed, with the platform's headers. */
  function deliver(integrationId: string, body: unknown, sent: Sent = {}) {
    const platform = sent.platform ?? 'shopify';
    const raw = typeof body === 'string' ? body : JSON.stringify(body);
    const signature = sent.signature === undefined ? sign(sent.secret ?? SECRET, raw) : sent.signature;
    const names =
      platform === 'shopify'
        ? { signature: 'x-shopify-hmac-sha256', topic: 'x-shopify-topic', id: 'x-shopify-webhook-id', shop: 'x-shopify-shop-domain' }
        : { signature: 'x-wc-webhook-signature', topic: 'x-wc-webhook-topic', id: 'x-wc-webhook-delivery-id', shop: 'x-wc-webhook-source' };
    const headers: Record<string, string> = { 'content-type': 'application/json', [names.topic]: sent.topic ?? 'orders/updated' };
    if (signature !== null) headers[names.signature] = signature;
    if (sent.id !== null) headers[names.id] = sent.id ?? `delivery-${Math.random().toString(36).slice(2)}`;
    if (sent.shop !== null) headers[names.shop] = sent.shop ?? (platform === 'shopify' ? SHOP : `https://${SHOP}/`);
    return h().request({ method: 'POST', url: `/ecom/${platform}/${integrationId}`, headers, payload: raw });
  }
  const changes = (integrationId: string, list: StoreChange[], sent: Sent = {}) => deliver(integrationId, { changes: list }, sent);

  let serial = 0;
  const customer = (email: string, consent: PlatformConsent | null = null): PlatformCustomer => ({ email, properties: { first_name: 'Ada' }, consent });
  const order = (externalId: string, fields: Record<string, unknown> = {}) => ({
    externalId,
    orderNumber: `#${1000 + ++serial}`,
    totalAmount: 100,
    currency: 'USD',
    shopCurrency: 'USD',
    presentment: null,
    status: 'paid',
    orderedAt: Date.now() - HOUR,
    items: [{ external_id: '632910392', title: 'IPod Nano', quantity: 1, price: 100 }],
    cancelled: false,
    cancelledAt: null,
    refunds: [],
    updatedAt: Date.now() - HOUR,
    ...fields,
  });
  const orderChange = (email: string | null, externalId: string, fields: Record<string, unknown> = {}, placed = true): StoreChange =>
    ({ kind: 'order', customer: email ? customer(email) : null, identityToken: null, order: order(externalId, fields), placed }) as StoreChange;
  const storedOrder = async (ws: TestWorkspace, externalId: string): Promise<Row | undefined> =>
    (await api(ws, 'GET', `/ecommerce/orders?external_id=${externalId}`)).json().data[0];
  const contactOf = async (ws: TestWorkspace, email: string): Promise<Row | undefined> =>
    (await api(ws, 'GET', `/contacts?email=${encodeURIComponent(email)}`)).json().data[0];
  const processed = (topic = 'orders/updated') => ({ status: 'processed', topic });

  // ------------------------------------------------------------------ integrations

  it('POST /integrations makes a Shopify or WooCommerce integration: the contract shape, the secret kept, no key', async () => {
    const ws = await h().workspace();
    const reply = await api(ws, 'POST', '/integrations', { platform: 'shopify', secret: SECRET, shop_domain: 'https://Acme.myshopify.com/' });
    expect(reply.statusCode, reply.body).toBe(201);
    const body = reply.json();
    expect(Object.keys(body).sort()).toEqual(['active', 'created_at', 'id', 'platform', 'webhook_url']);
    expect(body).toMatchObject({ platform: 'shopify', active: true, webhook_url: `${h().config.baseUrl}/ecom/shopify/${body.id}` });
    const row = await knex()('integrations').where({ id: body.id }).first();
    expect(row).toMatchObject({ secret: SECRET, api_key_hash: null, domain: 'acme.myshopify.com', workspace_id: ws.id });

    const woo = await api(ws, 'POST', '/integrations', { platform: 'woocommerce', secret: 'wc-secret' });
    expect(woo.statusCode).toBe(201);
    expect(woo.json().webhook_url).toMatch(/\/ecom\/woocommerce\/[0-9a-f-]{36}$/);

    for (const [json, message] of [
      [{ platform: 'shopify' }, /secret is required/],
      [{ platform: 'woocommerce', secret: '' }, /secret must not be empty/],
      [{ platform: 'shopify', secret: SECRET, shop_domain: 'not a domain' }, /shop_domain/],
    ] as const) {
      const refused = await api(ws, 'POST', '/integrations', json);
      expect(refused.statusCode, JSON.stringify(json)).toBe(400);
      expect(refused.json().error).toMatch(message);
    }
    // The list and the record show the webhook URL, never the secret; a platform integration has no key to rotate.
    const listed = (await api(ws, 'GET', '/integrations')).json().data as Row[];
    expect(listed.find((i) => i.id === body.id)).toMatchObject({ webhook_url: body.webhook_url, domain: 'acme.myshopify.com' });
    expect(JSON.stringify(listed)).not.toContain(SECRET);
    expect((await api(ws, 'GET', `/integrations/${body.id}`)).json()).toMatchObject({ ignored_topics: {}, webhook_url: body.webhook_url });
    expect((await api(ws, 'POST', `/integrations/${body.id}/rotate-key`)).statusCode).toBe(400);
    expect(await knex()('integrations').where({ workspace_id: ws.id })).toHaveLength(3);
  });

  it('emk integrations create prints the same shape; a bad platform is a usage error', async () => {
    const ws = await h().workspace();
    const args = ['integrations', 'create', '--db', h().database.url, '--workspace', ws.id];
    const created = await runEmk([...args, '--platform', 'woocommerce', '--secret', 'wc-secret', '--shop-domain', 'shop.example.com', '--json']);
    expect(created.code, created.stderr).toBe(0);
    const body = JSON.parse(created.stdout);
    expect(Object.keys(body).sort()).toEqual(['active', 'created_at', 'id', 'platform', 'webhook_url']);
    expect(body.webhook_url).toMatch(new RegExp(`/ecom/woocommerce/${body.id}$`));
    expect(await knex()('integrations').where({ id: body.id }).first()).toMatchObject({ platform: 'woocommerce', secret: 'wc-secret', domain: 'shop.example.com' });
    const human = await runEmk([...args, '--platform', 'shopify', '--secret', SECRET]);
    expect(human.code, human.stderr).toBe(0);
    expect(human.stdout).toMatch(/webhook URL +http.*\/ecom\/shopify\//);

    const bad = await runEmk([...args, '--platform', 'magento', '--secret', 's', '--json']);
    expect(bad.code).toBe(2);
    expect(bad.stderr).toMatch(/--platform must be shopify or woocommerce/);
    expect(bad.stdout).toBe('');
  });

  // ------------------------------------------------------------------ authentication

  it('a missing or wrong signature is 401 and stores nothing; unknown, inactive or other-platform integrations are 404', async () => {
    const ws = await h().workspace();
    const id = await integration(ws);
    const body = { changes: [orderChange('signed@example.com', '5001')] };
    for (const sent of [{ signature: null }, { secret: 'another secret' }, { signature: 'not base64 at all' }, { signature: '' }] as Sent[]) {
      const reply = await deliver(id, body, { ...sent, id: 'same-delivery' });
      expect(reply.statusCode, JSON.stringify(sent)).toBe(401);
      expect(reply.json().error).toBe('invalid signature');
    }
    // A signature of other bytes (the same JSON, spaced differently) is no signature of these.
    const spaced = JSON.stringify(body, null, 2);
    const replay = await h().request({
      method: 'POST',
      url: `/ecom/shopify/${id}`,
      headers: { 'content-type': 'application/json', 'x-shopify-topic': 'orders/create', 'x-shopify-hmac-sha256': sign(SECRET, JSON.stringify(body)) },
      payload: spaced,
    });
    expect(replay.statusCode).toBe(401);
    expect(await contactOf(ws, 'signed@example.com')).toBeUndefined();
    expect(await knex()('webhook_deliveries').where({ workspace_id: ws.id })).toEqual([]);

    const notFound = async (path: string) => {
      const reply = await h().request({ method: 'POST', url: path, headers: { 'content-type': 'application/json', 'x-shopify-hmac-sha256': sign(SECRET, '{}') }, payload: '{}' });
      expect(reply.statusCode, path).toBe(404);
      expect(reply.json().error).toBe('integration not found');
    };
    await notFound('/ecom/shopify/00000000-0000-0000-0000-000000000000');
    await notFound(`/ecom/shopify/${'x'.repeat(100)}`);
    await notFound(`/ecom/woocommerce/${id}`);
    await notFound(`/ecom/shopify/${ws.integrationId}`);
    expect((await api(ws, 'PATCH', `/integrations/${id}`, { active: false })).statusCode).toBe(200);
    await notFound(`/ecom/shopify/${id}`);
    // The signed order of a now active integration is applied: the signature was the only thing missing.
    await api(ws, 'PATCH', `/integrations/${id}`, { active: true });
    expect((await deliver(id, body, { id: 'same-delivery' })).json()).toEqual(processed());
    expect(await storedOrder(ws, '5001')).toMatchObject({ platform: 'shopify', total_amount: 100 });
  });

  it("WooCommerce's unsigned ping answers 200 and applies nothing; a signed body that is not JSON is processed with a warning", async () => {
    const ws = await h().workspace();
    const id = await integration(ws, 'woocommerce', { shop_domain: 'shop.example.com' });
    const ping = await h().request({
      method: 'POST',
      url: `/ecom/woocommerce/${id}`,
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      payload: 'webhook_id=42',
    });
    expect(ping.statusCode, ping.body).toBe(200);
    expect(ping.json()).toEqual({ status: 'ignored', topic: 'ping' });
    expect((await api(ws, 'GET', `/integrations/${id}`)).json().ignored_topics).toEqual({});
    // Anything else unsigned is refused, form-encoded or not.
    const unsigned = await h().request({ method: 'POST', url: `/ecom/woocommerce/${id}`, headers: { 'content-type': 'application/x-www-form-urlencoded' }, payload: 'webhook_id=42&x=1' });
    expect(unsigned.statusCode).toBe(401);

    const notJson = await deliver(id, 'this is not json', { platform: 'woocommerce', topic: 'order.created' });
    expect(notJson.statusCode).toBe(200);
    expect(notJson.json()).toEqual({ status: 'processed', topic: 'order.created', warnings: ['the body is not a JSON object: nothing was applied'] });
  });

  it('the delivery id is the retry key: a retry is a duplicate, concurrent copies apply once, no id applies each time', async () => {
    const ws = await h().workspace();
    const id = await integration(ws);
    const body = { changes: [orderChange('retry@example.com', '6001', { refunds: [{ id: 'r1', amount: 10, currency: null, at: null }] })] };
    expect((await deliver(id, body, { id: 'd-1' })).json()).toEqual(processed());
    expect((await deliver(id, body, { id: 'd-1' })).json()).toEqual({ status: 'duplicate', topic: 'orders/updated' });
    // The key is per topic: the same id under another topic is another delivery.
    expect((await deliver(id, body, { id: 'd-1', topic: 'orders/paid' })).json()).toEqual(processed('orders/paid'));

    const replies = await Promise.all(Array.from({ length: 6 }, () => deliver(id, { changes: [orderChange('retry@example.com', '6002')] }, { id: 'd-2' })));
    expect(replies.map((r) => r.json().status).sort()).toEqual(['duplicate', 'duplicate', 'duplicate', 'duplicate', 'duplicate', 'processed']);
    expect(await knex()('orders').where({ workspace_id: ws.id })).toHaveLength(2);
    expect(await knex()('webhook_deliveries').where({ workspace_id: ws.id }).orderBy('event_type')).toMatchObject([
      { event_type: 'shopify:orders/paid', external_id: 'd-1' },
      { event_type: 'shopify:orders/updated', external_id: 'd-1' },
      { event_type: 'shopify:orders/updated', external_id: 'd-2' },
    ]);
    const buyer = await contactOf(ws, 'retry@example.com');
    expect(buyer).toMatchObject({ orders_count: 2, lifetime_revenue: 190 });

    // WooCommerce's X-WC-Webhook-Delivery-ID is its retry key the same way.
    const woo = await integration(ws, 'woocommerce');
    const wooSent = { platform: 'woocommerce' as const, topic: 'order.updated', id: 'wc-7' };
    const wooBody = { changes: [orderChange('retry@example.com', '6003')] };
    expect((await deliver(woo, wooBody, wooSent)).json()).toMatchObject({ status: 'processed', topic: 'order.updated' });
    expect((await deliver(woo, wooBody, wooSent)).json()).toEqual({ status: 'duplicate', topic: 'order.updated' });
    expect(await knex()('webhook_deliveries').where({ workspace_id: ws.id, event_type: 'woocommerce:order.updated' })).toMatchObject([{ external_id: 'wc-7' }]);
    expect(await contactOf(ws, 'retry@example.com')).toMatchObject({ orders_count: 3 });

    // Without an id, each copy is applied (an ignored topic is counted each time).
    await deliver(id, { id: 1 }, { id: null, topic: 'app/uninstalled' });
    await deliver(id, { id: 1 }, { id: null, topic: 'app/uninstalled' });
    await deliver(id, { id: 1 }, { id: 'd-3', topic: 'app/uninstalled' });
    await deliver(id, { id: 1 }, { id: 'd-3', topic: 'app/uninstalled' });
    await deliver(id, { id: 1 }, { topic: 'orders/edited' });
    expect((await api(ws, 'GET', `/integrations/${id}`)).json().ignored_topics).toEqual({ 'app/uninstalled': 3, 'orders/edited': 1 });
  });

  it('an integration without a shop domain learns it from its first signed delivery; sources carry it', async () => {
    const ws = await h().workspace();
    const id = await integration(ws, 'shopify', {});
    expect((await api(ws, 'GET', `/integrations/${id}`)).json().domain).toBe('');
    const reply = await changes(id, [{ kind: 'customer', customer: customer('learnt@example.com') }], { topic: 'customers/create', shop: 'Learnt-Shop.myshopify.com' });
    expect(reply.json()).toEqual(processed('customers/create'));
    expect((await api(ws, 'GET', `/integrations/${id}`)).json().domain).toBe('learnt-shop.myshopify.com');
    expect(await contactOf(ws, 'learnt@example.com')).toMatchObject({ source: 'shopify:learnt-shop.myshopify.com', subscription_status: 'non_subscribed' });
    // A later delivery naming another shop changes nothing: the integration's domain wins.
    await changes(id, [{ kind: 'customer', customer: customer('second@example.com') }], { topic: 'customers/create', shop: 'other.myshopify.com' });
    expect((await api(ws, 'GET', `/integrations/${id}`)).json().domain).toBe('learnt-shop.myshopify.com');
    expect(await contactOf(ws, 'second@example.com')).toMatchObject({ source: 'shopify:learnt-shop.myshopify.com' });
  });

  // ------------------------------------------------------------------ orders

  it('orders are snapshots: an older one changes no field but adds its refunds; refunds add up by id; cancelled is sticky', async () => {
    const ws = await h().workspace();
    const id = await integration(ws);
    const t0 = Date.now() - 10 * HOUR;
    const snapshot = (fields: Record<string, unknown>) => changes(id, [orderChange('snap@example.com', '7001', { orderNumber: '#1001', orderedAt: t0, ...fields })]);

    await snapshot({ updatedAt: t0 + 2 * HOUR, totalAmount: 120, status: 'paid' });
    // An older snapshot (it left the platform earlier, arrived later): no field changes, its unseen refund counts.
    await snapshot({ updatedAt: t0 + HOUR, totalAmount: 80, status: 'pending', items: [], refunds: [{ id: 'r-1', amount: 20, currency: null, at: null }] });
    let stored = await storedOrder(ws, '7001');
    expect(stored).toMatchObject({ total_amount: 120, status: 'paid', refunded_amount: 20, order_number: '#1001', cancelled_at: null });
    expect(stored!.items).toHaveLength(1);

    // refunds/create names a refund again and a new one; a later snapshot lists both: each counts once.
    await changes(id, [{ kind: 'order_refunds', orderExternalId: '7001', refunds: [{ id: 'r-1', amount: 20, currency: null, at: null }, { id: 'r-2', amount: 15, currency: null, at: null }] }], { topic: 'refunds/create' });
    await snapshot({ updatedAt: t0 + 3 * HOUR, totalAmount: 120, status: 'partially_refunded', refunds: [{ id: 'r-1', amount: 20, currency: null, at: null }, { id: 'r-2', amount: 15, currency: null, at: null }] });
    stored = await storedOrder(ws, '7001');
    expect(stored).toMatchObject({ total_amount: 120, status: 'partially_refunded', refunded_amount: 35 });
    expect(await contactOf(ws, 'snap@example.com')).toMatchObject({ lifetime_revenue: 85, orders_count: 1 });

    // Refunds never exceed the total.
    await changes(id, [{ kind: 'order_refunds', orderExternalId: '7001', refunds: [{ id: 'r-3', amount: 500, currency: null, at: null }] }], { topic: 'refunds/create' });
    expect((await storedOrder(ws, '7001'))!.refunded_amount).toBe(120);

    // Cancelled, then a later snapshot that does not say so: still cancelled, and it counts nothing.
    await snapshot({ updatedAt: t0 + 4 * HOUR, cancelled: true, status: 'voided' });
    const cancelledAt = (await storedOrder(ws, '7001'))!.cancelled_at;
    expect(cancelledAt).not.toBeNull();
    await snapshot({ updatedAt: t0 + 5 * HOUR, cancelled: false, status: 'paid' });
    expect(await storedOrder(ws, '7001')).toMatchObject({ cancelled_at: cancelledAt, status: 'paid' });
    expect(await contactOf(ws, 'snap@example.com')).toMatchObject({ lifetime_revenue: 0, orders_count: 1 });
    expect(await knex()('orders').where({ workspace_id: ws.id })).toHaveLength(1);
  });

  it('refunds and a cancellation of an order not stored yet count when it arrives; an order keeps its first owner', async () => {
    const ws = await h().workspace();
    const id = await integration(ws);
    await changes(id, [{ kind: 'order_refunds', orderExternalId: '7101', refunds: [{ id: 'early', amount: 30, currency: null, at: null }] }], { topic: 'refunds/create' });
    await changes(id, [{ kind: 'order_cancelled', orderExternalId: '7102' }], { topic: 'order.deleted' });
    expect(await knex()('orders').where({ workspace_id: ws.id })).toEqual([]);
    await changes(id, [orderChange('first@example.com', '7101'), orderChange('first@example.com', '7102')]);
    expect(await storedOrder(ws, '7101')).toMatchObject({ refunded_amount: 30, cancelled_at: null });
    // The cancellation of an order not stored was not kept (WooCommerce sends only the id): the order arrives live.
    expect(await storedOrder(ws, '7102')).toMatchObject({ cancelled_at: null });
    await changes(id, [{ kind: 'order_cancelled', orderExternalId: '7102' }], { topic: 'order.deleted' });
    expect((await storedOrder(ws, '7102'))!.cancelled_at).not.toBeNull();

    // A later snapshot with another customer's email: the order stays its first owner's (spec rule 6).
    const first = (await contactOf(ws, 'first@example.com'))!;
    await changes(id, [orderChange('second@example.com', '7101', { updatedAt: Date.now() })]);
    expect((await storedOrder(ws, '7101'))!.contact_id).toBe(first.id);
    expect(await contactOf(ws, 'second@example.com')).toMatchObject({ orders_count: 0 });
    expect(await contactOf(ws, 'first@example.com')).toMatchObject({ orders_count: 2, lifetime_revenue: 70 });
  });

  it("a snapshot's refunds only add to what another origin recorded as refunded", async () => {
    const ws = await h().workspace();
    const id = await integration(ws);
    const website = (body: Record<string, unknown>) =>
      h().request({ method: 'POST', url: `/ecom/website/${ws.integrationId}`, headers: { authorization: `Bearer ${ws.integrationKey}` }, json: body });
    await website({ event_type: 'order_placed', email: 'both@example.com', order: { external_id: '7301', total_amount: 100, currency: 'USD' } });
    await website({ event_type: 'refunded_order', email: 'both@example.com', order: { external_id: '7301', refund_amount: 10 } });
    expect((await storedOrder(ws, '7301'))!.refunded_amount).toBe(10);
    await changes(id, [orderChange('both@example.com', '7301', { refunds: [] })]);
    expect((await storedOrder(ws, '7301'))!.refunded_amount).toBe(10);
    await changes(id, [orderChange('both@example.com', '7301', { refunds: [{ id: 'r-1', amount: 15, currency: null, at: null }] })]);
    expect(await storedOrder(ws, '7301')).toMatchObject({ refunded_amount: 15, platform: 'website' });
  });

  it('an order that is not placed stores nothing new but updates a stored one; placed, it fires order_placed once', async () => {
    const ws = await h().workspace();
    const id = await integration(ws, 'woocommerce', { shop_domain: 'shop.example.com' });
    const woo = { platform: 'woocommerce' as const, topic: 'order.updated' };
    await changes(id, [orderChange('pending@example.com', '8001', { status: 'pending' }, false)], woo);
    expect(await storedOrder(ws, '8001')).toBeUndefined();
    expect(await contactOf(ws, 'pending@example.com')).toBeUndefined();
    await changes(id, [orderChange('pending@example.com', '8001', { status: 'processing', updatedAt: Date.now() - HOUR / 2 })], woo);
    await changes(id, [orderChange('pending@example.com', '8001', { status: 'failed', updatedAt: Date.now() }, false)], woo);
    const stored = (await storedOrder(ws, '8001'))!;
    expect(stored).toMatchObject({ status: 'failed', platform: 'woocommerce' });
    expect(await knex()('trigger_outbox').where({ workspace_id: ws.id, trigger_type: 'order_placed' })).toHaveLength(1);
    expect(await contactOf(ws, 'pending@example.com')).toMatchObject({ source: 'woocommerce:shop.example.com' });
    // Placed without a customer nobody knows: kept without a contact (test/contactless-orders.test.ts), firing nothing.
    await changes(id, [orderChange(null, '8002')], woo);
    expect(await storedOrder(ws, '8002')).toMatchObject({ contact_id: null, platform: 'woocommerce' });
    expect(await knex()('trigger_outbox').where({ workspace_id: ws.id, trigger_type: 'order_placed' })).toHaveLength(1);
    // Not placed and without a customer: nothing.
    await changes(id, [orderChange(null, '8003', { status: 'pending' }, false)], woo);
    expect(await storedOrder(ws, '8003')).toBeUndefined();
  });

  // ------------------------------------------------------------------ customers and consent

  it("consent: a new contact takes the platform's; an existing one changes only for a consent newer than its last change", async () => {
    const ws = await h().workspace();
    const id = await integration(ws);
    const now = Date.now();
    const topic = { topic: 'customers/update' };
    await changes(id, [{ kind: 'customer', customer: customer('new@example.com', { status: 'subscribed', at: now - 5 * HOUR }) }], topic);
    const created = (await contactOf(ws, 'new@example.com'))!;
    expect(created).toMatchObject({ subscription_status: 'subscribed', source: `shopify:${SHOP}`, properties: { first_name: 'Ada' } });
    expect((await api(ws, 'GET', `/contacts/${created.id}/consent`)).json().data).toEqual([
      { status: 'subscribed', previous_status: null, origin: 'shopify', at: new Date(now - 5 * HOUR).toISOString() },
    ]);

    // Unsubscribed in emk now: an older platform record does not undo it, a newer one does.
    await api(ws, 'PATCH', `/contacts/${created.id}`, { subscription_status: 'unsubscribed' });
    await changes(id, [{ kind: 'customer', customer: customer('new@example.com', { status: 'subscribed', at: now - HOUR }) }], topic);
    expect((await contactOf(ws, 'new@example.com'))!.subscription_status).toBe('unsubscribed');
    // A consent without a time never changes an existing contact.
    await changes(id, [{ kind: 'customer', customer: customer('new@example.com', { status: 'subscribed', at: null }) }], topic);
    expect((await contactOf(ws, 'new@example.com'))!.subscription_status).toBe('unsubscribed');
    await changes(id, [{ kind: 'customer', customer: customer('new@example.com', { status: 'subscribed', at: Date.now() + 1000 }) }], topic);
    expect((await contactOf(ws, 'new@example.com'))!.subscription_status).toBe('subscribed');
    const history = (await api(ws, 'GET', `/contacts/${created.id}/consent`)).json().data as Row[];
    expect(history.map((c) => [c.status, c.origin])).toEqual([
      ['subscribed', 'shopify'],
      ['unsubscribed', 'api:update'],
      ['subscribed', 'shopify'],
    ]);
    // Without consent, a new contact is non_subscribed; an existing contact keeps its status, its properties merge.
    await contact(ws, 'subscribed', { first_name: 'Old' }, 'known@example.com');
    await changes(id, [{ kind: 'customer', customer: customer('known@example.com') }, { kind: 'customer', customer: customer('plain@example.com') }], topic);
    expect(await contactOf(ws, 'known@example.com')).toMatchObject({ subscription_status: 'subscribed', source: 'api', properties: { first_name: 'Ada' } });
    expect(await contactOf(ws, 'plain@example.com')).toMatchObject({ subscription_status: 'non_subscribed' });
    // Created non_subscribed by default, nothing was decided: a platform consent of any time applies, and an
    // older one of the platform's own after it does not.
    await changes(id, [{ kind: 'customer', customer: customer('plain@example.com', { status: 'subscribed', at: now - 10 * HOUR }) }], topic);
    await changes(id, [{ kind: 'customer', customer: customer('plain@example.com', { status: 'unsubscribed', at: now - 20 * HOUR }) }], topic);
    expect(await contactOf(ws, 'plain@example.com')).toMatchObject({ subscription_status: 'subscribed' });
  });

  // ------------------------------------------------------------------ carts and flows

  it('a checkout is a cart of the integration; completed, it is marked converted; of nobody known, nothing is stored', async () => {
    const ws = await h().workspace();
    const id = await integration(ws);
    const checkout = (email: string, token: string, completed: boolean): StoreChange => ({
      kind: 'cart',
      customer: customer(email),
      identityToken: null,
      cart: { externalId: token, totalAmount: 398, currency: 'USD', checkoutUrl: `https://${SHOP}/checkouts/${token}/recover`, items: [], completed },
    });
    await changes(id, [checkout('abandons@example.com', 'tok-a', false)], { topic: 'checkouts/create' });
    await changes(id, [checkout('completes@example.com', 'tok-b', false)], { topic: 'checkouts/create' });
    await changes(id, [checkout('completes@example.com', 'tok-b', true)], { topic: 'checkouts/update' });
    // Converted stays converted; a later update fires its cart trigger, whose wait then ends on the converted cart
    // (the abandoned-cart flows: platform-fixtures.test.ts).
    await changes(id, [checkout('completes@example.com', 'tok-b', false)], { topic: 'checkouts/update' });
    await changes(id, [{ kind: 'cart', customer: null, identityToken: null, cart: { externalId: 'tok-c', totalAmount: 1, currency: 'USD', checkoutUrl: null, items: [], completed: false } }], { topic: 'checkouts/create' });
    const carts = await knex()('carts').where({ workspace_id: ws.id }).orderBy('external_id');
    expect(carts.map((c: Row) => [c.external_id, c.converted_at !== null, c.integration_id, c.checkout_url])).toEqual([
      ['tok-a', false, id, `https://${SHOP}/checkouts/tok-a/recover`],
      ['tok-b', true, id, `https://${SHOP}/checkouts/tok-b/recover`],
    ]);
    const cartFacts = await knex()('trigger_outbox').where({ workspace_id: ws.id, trigger_type: 'cart' }).orderBy('id');
    // The completed checkout fired none.
    expect(cartFacts.map((f: Row) => f.subject_id)).toEqual([carts[0]!.id, carts[1]!.id, carts[1]!.id]);
  });

  it('a fulfilment sets the shipping status of a stored order and fires shipping_information with the shop as source', async () => {
    const ws = await h().workspace();
    const id = await integration(ws);
    await changes(id, [orderChange('ships@example.com', '9001')]);
    const exact = await api(ws, 'POST', '/flows', { name: 'Shipped', status: 'live', trigger: { type: 'shipping_information', source_filter: `shopify:${SHOP}` }, steps: [{ type: 'email', subject: 'On its way', html: '<p>{{ event.properties.tracking_number }}</p>' }] });
    const other = await api(ws, 'POST', '/flows', { name: 'Other', status: 'live', trigger: { type: 'shipping_information', source_filter: 'aftership' }, steps: [{ type: 'email', subject: 'x', html: '<p>x</p>' }] });
    await changes(id, [{ kind: 'shipment', orderExternalId: '9001', status: 'in_transit', trackingNumber: '1Z999', carrier: 'UPS', email: 'ships@example.com' }], { topic: 'fulfillments/update' });
    expect((await storedOrder(ws, '9001'))!.shipping_status).toBe('in_transit');
    await work();
    expect((await api(ws, 'GET', `/flows/${exact.json().id}/enrollments`)).json().data).toHaveLength(1);
    expect((await api(ws, 'GET', `/flows/${other.json().id}/enrollments`)).json().data).toHaveLength(0);
    const [event] = await knex()('events').where({ workspace_id: ws.id, event_name: 'shipping_information' });
    expect(event).toMatchObject({ source: `shopify:${SHOP}` });
  });

  // ------------------------------------------------------------------ products

  it('products: upserted with the shop as source, a handle-keyed export row adopted, deleted', async () => {
    const ws = await h().workspace();
    const id = await integration(ws);
    const shop = { workspaceId: ws.id, platform: 'shopify', domain: SHOP };
    // What the products export stored: keyed by handle, no id.
    await h().services.products.upsertForIntegration(shop, [{ external_id: 'ipod-nano', title: 'IPod Nano (export)', price: 199, metadata: { handle: 'ipod-nano' } }]);
    const exported = (await api(ws, 'GET', '/ecommerce/products?external_id=ipod-nano')).json().data[0];
    const product = (externalId: string, title: string, handle: string) => ({
      external_id: externalId,
      title,
      price: 199,
      url: `https://${SHOP}/products/${handle}`,
      categories: ['Music'],
      metadata: { handle, vendor: 'Apple' },
    });
    await changes(id, [{ kind: 'product_upsert', product: product('632910392', 'IPod Nano - 8GB', 'ipod-nano') }, { kind: 'product_upsert', product: product('921728736', 'IPod Touch', 'ipod-touch') }], { topic: 'products/update' });
    const listed = (await api(ws, 'GET', '/ecommerce/products?platform=shopify&perPage=10')).json().data as Row[];
    expect(listed.map((p) => [p.external_id, p.title, p.source]).sort()).toEqual([
      ['632910392', 'IPod Nano - 8GB', `shopify:${SHOP}`],
      ['921728736', 'IPod Touch', `shopify:${SHOP}`],
    ]);
    expect(listed.find((p) => p.external_id === '632910392')!.id).toBe(exported.id);

    const bad = await changes(id, [{ kind: 'product_upsert', product: { external_id: '1', title: 7 } }], { topic: 'products/create' });
    expect(bad.json()).toMatchObject({ status: 'processed', warnings: ['product 1 could not be read: nothing of it was stored'] });
    await changes(id, [{ kind: 'product_delete', externalId: '921728736' }], { topic: 'products/delete' });
    expect((await api(ws, 'GET', '/ecommerce/products?platform=shopify')).json().data.map((p: Row) => p.external_id)).toEqual(['632910392']);
  });

  // ------------------------------------------------------------------ privacy

  it('customers/redact erases the contact as DELETE /contacts does; customers/data_request is listed for the operator', async () => {
    const ws = await h().workspace();
    const id = await integration(ws);
    await changes(id, [orderChange('gone@example.com', '9101')]);
    const gone = (await contactOf(ws, 'gone@example.com'))!;
    await changes(id, [{ kind: 'data_request', email: 'gone@example.com', requestId: '9999' }, { kind: 'data_request', email: 'nobody@example.com', requestId: null }], { topic: 'customers/data_request' });
    const requests = await api(ws, 'GET', '/data-requests');
    expect(requests.statusCode).toBe(200);
    expect(requests.json().data.map((r: Row) => [r.email, r.contact_id, r.request_id, r.integration_id]).sort()).toEqual([
      ['gone@example.com', gone.id, '9999', id],
      ['nobody@example.com', null, null, id],
    ]);

    expect((await changes(id, [{ kind: 'customer_redact', email: 'GONE@example.com' }, { kind: 'customer_redact', email: 'never@example.com' }], { topic: 'customers/redact' })).json()).toEqual(processed('customers/redact'));
    expect((await api(ws, 'GET', `/contacts/${gone.id}`)).statusCode).toBe(404);
    expect(await contactOf(ws, 'gone@example.com')).toBeUndefined();
    // The order stays, on the tombstone, so revenue does not change.
    expect((await storedOrder(ws, '9101'))!.contact_id).toBe(gone.id);
    expect(await knex()('subscription_changes').where({ contact_id: gone.id })).toEqual([]);
  });

  it('shop/redact: the integration is deactivated, its products and carts deleted, and the contacts that came only from it erased', async () => {
    const ws = await h().workspace();
    const id = await integration(ws);
    const otherShop = await integration(ws, 'shopify', { shop_domain: 'other.myshopify.com' });
    await changes(id, [
      orderChange('only-shop@example.com', '9201'),
      { kind: 'customer', customer: customer('also-api@example.com') },
      { kind: 'customer', customer: customer('also-event@example.com') },
      { kind: 'customer', customer: customer('also-consent@example.com') },
      { kind: 'customer', customer: customer('also-other-shop@example.com') },
      { kind: 'cart', customer: customer('only-shop@example.com'), identityToken: null, cart: { externalId: 'tok-r', totalAmount: 5, currency: 'USD', checkoutUrl: null, items: [], completed: false } },
      { kind: 'product_upsert', product: { external_id: '1', title: 'Gone', price: 5 } },
    ]);
    await contact(ws, 'subscribed', {}, 'api-first@example.com');
    await changes(id, [orderChange('api-first@example.com', '9202')]);
    const eventOwner = (await contactOf(ws, 'also-event@example.com'))!;
    await api(ws, 'POST', '/events', { contact_id: eventOwner.id, event_name: 'viewed_product', source: 'website', properties: { product_id: '1' } });
    await api(ws, 'PATCH', `/contacts/${(await contactOf(ws, 'also-consent@example.com'))!.id}`, { subscription_status: 'subscribed' });
    await changes(otherShop, [orderChange('also-other-shop@example.com', '9203')]);
    const onlyShop = (await contactOf(ws, 'only-shop@example.com'))!;

    expect((await changes(id, [{ kind: 'shop_redact' }], { topic: 'shop/redact' })).json()).toEqual(processed('shop/redact'));
    expect((await api(ws, 'GET', `/integrations/${id}`)).json().active).toBe(false);
    expect((await changes(id, [{ kind: 'shop_redact' }], { topic: 'shop/redact' })).statusCode).toBe(404);
    expect((await api(ws, 'GET', '/ecommerce/products?platform=shopify')).json().data).toEqual([]);
    expect(await knex()('carts').where({ workspace_id: ws.id })).toEqual([]);
    expect((await api(ws, 'GET', `/contacts/${onlyShop.id}`)).statusCode).toBe(404);
    expect(await contactOf(ws, 'also-api@example.com')).toBeUndefined();
    for (const kept of ['api-first@example.com', 'also-event@example.com', 'also-consent@example.com', 'also-other-shop@example.com']) {
      expect(await contactOf(ws, kept), kept).toBeDefined();
    }
    // Orders stay (on tombstones), so revenue reports do not change.
    expect(await knex()('orders').where({ workspace_id: ws.id })).toHaveLength(3);
    expect((await storedOrder(ws, '9201'))!.contact_id).toBe(onlyShop.id);
  });
});

describeEachDatabase(
  'platform webhooks: rate limits',
  (h) => {
    it('the webhook budget per integration applies to the platform paths, before the signature is checked', async () => {
      const ws = await h().workspace();
      const reply = await h().request({ method: 'POST', url: '/api/v1/integrations', key: ws.apiKey, json: { platform: 'shopify', secret: SECRET } });
      const id = reply.json().id as string;
      const post = (signature: string) =>
        h().request({ method: 'POST', url: `/ecom/shopify/${id}`, headers: { 'content-type': 'application/json', 'x-shopify-topic': 'app/uninstalled', 'x-shopify-hmac-sha256': signature }, payload: '{}' });
      expect((await post(sign(SECRET, '{}'))).statusCode).toBe(200);
      const second = await post('wrong');
      expect(second.statusCode).toBe(401);
      expect(second.headers['ratelimit-remaining']).toBe('0');
      const refused = await post(sign(SECRET, '{}'));
      expect(refused.statusCode).toBe(429);
      expect(refused.headers['retry-after']).toMatch(/^\d+$/);
      // The refused delivery was not applied: one ignored topic counted.
      expect((await h().request({ method: 'GET', url: `/api/v1/integrations/${id}`, key: ws.apiKey })).json().ignored_topics).toEqual({ 'app/uninstalled': 1 });
    });
  },
  { EMK_LIMIT_WEBHOOK_PER_INTEGRATION: '2' },
);
