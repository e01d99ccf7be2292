import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import type { Knex } from 'knex';
import { expect, it } from 'vitest';
import { migrations, type Migration } from '../migrations/index.js';
import { openDatabase } from '../src/domain/db/database.js';
import { runEmk } from './helpers/cli.js';
import { describeEachDatabase, type TestWorkspace } from './helpers/harness.js';
import { postPlatformDelivery } from './helpers/platform-deliveries.js';
import { sendingHelpers } from './helpers/sending.js';
import { createTestDatabase } from './helpers/test-databases.js';

/**
 * Orders without an email (issue 43, point 4; docs/platforms/README.md, Orders without an email): a shop
 * platform's order whose buyer gave no email goes to the contact its platform customer id or phone names, else is
 * kept without a contact, counted in the store's revenue, mailed to nobody, and joins the contact that appears
 * later with its customer id. The platforms' payloads are the fixtures of fixtures/{shopify,woocommerce}/without-email.
 */

type Row = Record<string, any>;

const SECRET = 'whsec_contactless_4d3c2b1a';
const FIXTURES = join(import.meta.dirname, '../fixtures');
const fixture = (path: string) => readFileSync(join(FIXTURES, path));

const WALK_IN = 'shopify/without-email/orders-create-pos-walk-in.json';
const PHONE_CUSTOMER = 'shopify/without-email/orders-create-pos-phone-customer.json';
const JONAS_EMAIL_ADDED = 'shopify/without-email/customers-update-email-added.json';
const JONAS = { email: 'jonas.berg@example.com', customerRef: 'shopify:7012345679999' };
const COD_GUEST = 'woocommerce/without-email/order-created-cod-guest.json';
const PHONE_ORDER = 'woocommerce/without-email/order-created-phone-order.json';
const FELIX_EMAIL_ADDED = 'woocommerce/without-email/customer-updated-email-added.json';
const SHOPIFY_WARNING = 'email is missing: the order goes to the contact of its customer id or phone, else is kept without a contact';
const WOO_WARNING = 'the order has no usable billing.email: it goes to the contact of its identity token, customer id or phone, else is kept without a contact';
const SINCE = 'from=2024-01-01';

describeEachDatabase('orders without an email', (h, dialect) => {
  const { api } = sendingHelpers(h);
  const knex = () => h().services.db.knex;

  async function integration(ws: TestWorkspace, platform: 'shopify' | 'woocommerce') {
    const reply = await api(ws, 'POST', '/integrations', { platform, secret: SECRET, shop_domain: platform === 'shopify' ? 'emk-demo.myshopify.com' : 'shop.example.com' });
    expect(reply.statusCode, reply.body).toBe(201);
    return reply.json().id as string;
  }

  /** A fixture (or a body derived from one) as the platform posts it: signed bytes, its topic, a delivery id. */
  async function deliver(integrationId: string, platform: 'shopify' | 'woocommerce', topic: string, body: Buffer | object) {
    const reply = await postPlatformDelivery(h, { platform, integrationId, topic, body, secret: SECRET });
    expect(reply.statusCode, reply.body).toBe(200);
    return reply.json();
  }
  const shopify = (id: string, topic: string, file: string) => deliver(id, 'shopify', topic, fixture(file));
  const woocommerce = (id: string, topic: string, file: string) => deliver(id, 'woocommerce', topic, fixture(file));

  const orderOf = async (ws: TestWorkspace, externalId: string): Promise<Row> => {
    const { data } = (await api(ws, 'GET', `/ecommerce/orders?external_id=${externalId}`)).json();
    expect(data, externalId).toHaveLength(1);
    return data[0];
  };
  const orderCount = async (ws: TestWorkspace) => (await api(ws, 'GET', '/ecommerce/orders?perPage=1')).json().meta.total;
  const contactOf = async (ws: TestWorkspace, email: string): Promise<Row | undefined> =>
    (await api(ws, 'GET', `/contacts?email=${encodeURIComponent(email)}`)).json().data[0];
  const contactCount = async (ws: TestWorkspace) => (await api(ws, 'GET', '/contacts?perPage=1')).json().meta.total;
  const revenue = async (ws: TestWorkspace) => (await api(ws, 'GET', `/reports/revenue?${SINCE}`)).json();
  /** What the order's row keeps of its platform customer (not in the API's record). */
  const customerRefOf = async (orderId: string) => (await knex()('orders').where({ id: orderId }).first('customer_ref')).customer_ref;
  const facts = async (ws: TestWorkspace, triggerType: string) =>
    (await knex()('trigger_outbox').where({ workspace_id: ws.id, trigger_type: triggerType }).orderBy('id')).map((row: Row) => ({
      contact_id: row.contact_id,
      change: (typeof row.payload === 'string' ? JSON.parse(row.payload) : row.payload)?.change,
    }));
  /** A contact made through the API with a phone (a customers import, a sign-up form). */
  async function contactWithPhone(ws: TestWorkspace, email: string, phone: string) {
    const reply = await api(ws, 'POST', '/contacts', { email, properties: { phone } });
    expect(reply.statusCode, reply.body).toBe(201);
    return reply.json().id as string;
  }

  it('Shopify: a point-of-sale sale with no customer is kept without a contact, in the revenue report\'s total, for nobody to be mailed; a redelivery never counts it twice', async () => {
    const ws = await h().workspace();
    const id = await integration(ws, 'shopify');
    expect(await shopify(id, 'orders/create', WALK_IN)).toEqual({ status: 'processed', topic: 'orders/create', warnings: [SHOPIFY_WARNING] });

    const order = await orderOf(ws, '5801234567900');
    expect(order).toMatchObject({ contact_id: null, platform: 'shopify', order_number: '#1003', total_amount: 96.12, currency: 'USD', status: 'paid', ordered_at: '2024-06-01T15:05:00.000Z' });
    expect(order.items).toEqual([{ external_id: '8901234567890', title: 'Merino Crew Sweater', quantity: 1, price: 89 }]);
    expect(await customerRefOf(order.id)).toBeNull();
    // The store's own revenue counts it; no campaign or flow earned it.
    expect(await revenue(ws)).toEqual({ data: [], total: [{ currency: 'USD', orders: 1, revenue: 96.12 }] });
    // Nobody to mail: no contact, no order_placed, no contact change.
    expect(await contactCount(ws)).toBe(0);
    expect(await facts(ws, 'order_placed')).toEqual([]);
    expect(await facts(ws, 'contact_changed')).toEqual([]);

    // The same snapshot again, and a later one (another delivery, another topic): one order, counted once.
    await shopify(id, 'orders/create', WALK_IN);
    const later = { ...JSON.parse(fixture(WALK_IN).toString('utf8')), financial_status: 'partially_refunded', updated_at: '2024-06-02T09:00:00-04:00' };
    await deliver(id, 'shopify', 'orders/updated', later);
    expect(await orderCount(ws)).toBe(1);
    expect(await orderOf(ws, '5801234567900')).toMatchObject({ contact_id: null, status: 'partially_refunded' });
    expect((await revenue(ws)).total).toEqual([{ currency: 'USD', orders: 1, revenue: 96.12 }]);
  });

  it('Shopify: a customer with a phone only is kept on the order, which joins the contact that appears with that customer id (lifetime revenue, segments; no order_placed)', async () => {
    const ws = await h().workspace();
    const id = await integration(ws, 'shopify');
    await shopify(id, 'orders/create', PHONE_CUSTOMER);
    const kept = await orderOf(ws, '5801234567901');
    expect(kept.contact_id).toBeNull();
    expect(await customerRefOf(kept.id)).toBe(JONAS.customerRef);

    // Jonas gives his email: his contact is written with his Shopify id, and his order becomes his.
    expect(await shopify(id, 'customers/update', JONAS_EMAIL_ADDED)).toEqual({ status: 'processed', topic: 'customers/update' });
    const jonas = (await contactOf(ws, JONAS.email))!;
    expect(jonas).toMatchObject({ lifetime_revenue: 96.12, orders_count: 1, properties: { shopify_customer_id: '7012345679999', phone: '+16175550199' } });
    const joined = await orderOf(ws, '5801234567901');
    expect(joined).toMatchObject({ id: kept.id, contact_id: jonas.id });
    expect(await customerRefOf(kept.id)).toBeNull();
    expect(await facts(ws, 'contact_changed')).toEqual([
      { contact_id: jonas.id, change: 'created' },
      { contact_id: jonas.id, change: 'orders' },
    ]);
    expect(await facts(ws, 'order_placed')).toEqual([]);
    // The store's revenue is what it was: the order moved into a contact's totals, not into the sum twice.
    expect((await revenue(ws)).total).toEqual([{ currency: 'USD', orders: 1, revenue: 96.12 }]);

    // A redelivery of the sale finds Jonas by his id and changes nothing.
    await shopify(id, 'orders/create', PHONE_CUSTOMER);
    expect(await orderCount(ws)).toBe(1);
    expect(await contactOf(ws, JONAS.email)).toMatchObject({ lifetime_revenue: 96.12, orders_count: 1 });
  });

  it('Shopify: a buyer without an email goes to the contact holding its customer id, else to the contact of its phone, and that order never moves', async () => {
    // Known by the Shopify id: an ordinary new order of the contact (order_placed fires).
    const byId = await h().workspace();
    const shop = await integration(byId, 'shopify');
    await shopify(shop, 'customers/update', JONAS_EMAIL_ADDED);
    const jonas = (await contactOf(byId, JONAS.email))!;
    await shopify(shop, 'orders/create', PHONE_CUSTOMER);
    expect(await orderOf(byId, '5801234567901')).toMatchObject({ contact_id: jonas.id });
    expect(await contactOf(byId, JONAS.email)).toMatchObject({ lifetime_revenue: 96.12, orders_count: 1 });
    expect(await facts(byId, 'order_placed')).toEqual([{ contact_id: jonas.id, change: undefined }]);

    // Known by the phone only, written another way (`+1 (617) 555-0199` is `+16175550199`).
    const byPhone = await h().workspace();
    const other = await integration(byPhone, 'shopify');
    const partner = await contactWithPhone(byPhone, 'household@example.com', '+1 (617) 555-0199');
    await shopify(other, 'orders/create', PHONE_CUSTOMER);
    const order = await orderOf(byPhone, '5801234567901');
    expect(order.contact_id).toBe(partner);
    expect(await customerRefOf(order.id)).toBeNull();
    // Jonas's own contact appears with his Shopify id later: the order has a contact, and keeps it.
    await shopify(other, 'customers/update', JONAS_EMAIL_ADDED);
    expect((await contactOf(byPhone, JONAS.email))!).toMatchObject({ lifetime_revenue: 0, orders_count: 0 });
    expect(await orderOf(byPhone, '5801234567901')).toMatchObject({ contact_id: partner });
    expect((await api(byPhone, 'GET', `/contacts/${partner}`)).json()).toMatchObject({ lifetime_revenue: 96.12, orders_count: 1 });
  });

  it('WooCommerce: a guest\'s cash-on-delivery order without a billing email is kept without a contact, or goes to its phone\'s contact; a registered customer\'s joins when the account gets an email', async () => {
    const ws = await h().workspace();
    const id = await integration(ws, 'woocommerce');
    expect(await woocommerce(id, 'order.created', COD_GUEST)).toEqual({ status: 'processed', topic: 'order.created', warnings: [WOO_WARNING] });
    const guest = await orderOf(ws, '5201');
    expect(guest).toMatchObject({ contact_id: null, platform: 'woocommerce', total_amount: 28.9, currency: 'EUR', status: 'processing' });
    // A guest (customer_id 0) names no customer: nothing to join later.
    expect(await customerRefOf(guest.id)).toBeNull();

    await woocommerce(id, 'order.created', PHONE_ORDER);
    const kept = await orderOf(ws, '5202');
    expect(kept.contact_id).toBeNull();
    expect(await customerRefOf(kept.id)).toBe('woocommerce:63');
    expect((await revenue(ws)).total).toEqual([{ currency: 'EUR', orders: 2, revenue: 57.8 }]);

    await woocommerce(id, 'customer.updated', FELIX_EMAIL_ADDED);
    const felix = (await contactOf(ws, 'felix.wagner@example.com'))!;
    expect(felix).toMatchObject({ lifetime_revenue: 28.9, orders_count: 1, properties: { woocommerce_customer_id: '63' } });
    expect(await orderOf(ws, '5202')).toMatchObject({ contact_id: felix.id });
    expect(await orderOf(ws, '5201')).toMatchObject({ contact_id: null });
    expect((await revenue(ws)).total).toEqual([{ currency: 'EUR', orders: 2, revenue: 57.8 }]);
    expect(await facts(ws, 'order_placed')).toEqual([]);

    // Lukas is known by his phone in another workspace (`+4915123456789`, written without spaces): his order is his.
    const known = await h().workspace();
    const shop = await integration(known, 'woocommerce');
    const lukas = await contactWithPhone(known, 'lukas.schmidt@example.com', '+4915123456789');
    await woocommerce(shop, 'order.created', COD_GUEST);
    expect(await orderOf(known, '5201')).toMatchObject({ contact_id: lukas });
    expect(await facts(known, 'order_placed')).toEqual([{ contact_id: lukas, change: undefined }]);
  });

  it('Shopify\'s orders export: rows without an Email are kept, a row\'s Phone finds its contact; a re-run never double counts; the API\'s sync still needs an email', async () => {
    const ws = await h().workspace();
    const jonas = await contactWithPhone(ws, JONAS.email, '+16175550199');
    const emk = (args: string[]) => runEmk([...args, '--db', h().database.url, '--workspace', ws.id, '--json']);
    const args = ['sync-orders', '--file', join(FIXTURES, 'shopify/without-email/orders_export.csv'), '--format', 'shopify'];
    const first = await emk(args);
    expect(first.code, first.stderr).toBe(0);
    expect(JSON.parse(first.stdout)).toEqual({ rows: 2, inserted: 2, updated: 0, skipped: 0, errors: [], dry_run: false });
    expect(await orderOf(ws, '5801234567900')).toMatchObject({ contact_id: null, order_number: '#1003', total_amount: 96.12, platform: 'shopify' });
    expect(await orderOf(ws, '5801234567901')).toMatchObject({ contact_id: jonas, order_number: '#1004' });
    expect((await api(ws, 'GET', `/contacts/${jonas}`)).json()).toMatchObject({ lifetime_revenue: 96.12, orders_count: 1 });
    expect(await contactCount(ws)).toBe(1);

    const again = await emk(args);
    expect(JSON.parse(again.stdout)).toEqual({ rows: 2, inserted: 0, updated: 0, skipped: 2, errors: [], dry_run: false });
    expect((await revenue(ws)).total).toEqual([{ currency: 'USD', orders: 2, revenue: 192.24 }]);

    const refused = await api(ws, 'POST', '/ecommerce/sync-historical-orders', {
      orders: [{ external_id: 'api-1', order_number: '1', total_amount: 10, currency: 'USD', ordered_at: '2024-06-01T10:00:00Z' }],
    });
    expect(refused.json().errors).toEqual([{ index: 0, external_id: 'api-1', error: 'invalid request: email is required' }]);
    expect(await orderCount(ws)).toBe(2);
  });

  it('a customers import naming the customer id joins the orders kept for that customer', async () => {
    const ws = await h().workspace();
    const id = await integration(ws, 'shopify');
    await shopify(id, 'orders/create', PHONE_CUSTOMER);
    // A row of Shopify's customers export (`emk contacts import --format shopify` reads `Customer ID` into this).
    const imported = await h().services.contacts.importContacts(ws.id, [
      { email: JONAS.email, subscription_status: 'non_subscribed', properties: { shopify_customer_id: '7012345679999' } },
    ]);
    expect(imported).toEqual({ created: 1, updated: 0, errors: [] });
    const jonas = (await contactOf(ws, JONAS.email))!;
    expect(jonas).toMatchObject({ lifetime_revenue: 96.12, orders_count: 1 });
    expect(await orderOf(ws, '5801234567901')).toMatchObject({ contact_id: jonas.id });
  });

  it('an order the export kept without a contact joins its customer\'s contact when a later snapshot of it names that customer', async () => {
    const ws = await h().workspace();
    const id = await integration(ws, 'shopify');
    const synced = await runEmk(['sync-orders', '--file', join(FIXTURES, 'shopify/without-email/orders_export.csv'), '--format', 'shopify', '--db', h().database.url, '--workspace', ws.id]);
    expect(synced.code, synced.stderr).toBe(0);
    // The export names no customer: Jonas's contact appearing with his id finds nothing to join yet.
    await shopify(id, 'customers/update', JONAS_EMAIL_ADDED);
    const jonas = (await contactOf(ws, JONAS.email))!;
    expect(await orderOf(ws, '5801234567901')).toMatchObject({ contact_id: null });

    // The shop's next snapshot of the sale names customer 7012345679999, whom Jonas's contact holds.
    const refunded = { ...JSON.parse(fixture(PHONE_CUSTOMER).toString('utf8')), financial_status: 'partially_refunded', updated_at: '2024-06-03T10:00:00-04:00' };
    await deliver(id, 'shopify', 'orders/updated', refunded);
    expect(await orderOf(ws, '5801234567901')).toMatchObject({ contact_id: jonas.id, status: 'partially_refunded' });
    expect(await contactOf(ws, JONAS.email)).toMatchObject({ lifetime_revenue: 96.12, orders_count: 1 });
    expect(await facts(ws, 'contact_changed')).toContainEqual({ contact_id: jonas.id, change: 'orders' });
    expect(await facts(ws, 'order_placed')).toEqual([]);
    expect(await orderOf(ws, '5801234567900')).toMatchObject({ contact_id: null });
    expect((await revenue(ws)).total).toEqual([{ currency: 'USD', orders: 2, revenue: 192.24 }]);
  });

  it('the website webhook keeps its rule: an order it cannot tie to a contact is not stored', async () => {
    const ws = await h().workspace();
    const website = (body: unknown) => h().request({ method: 'POST', url: `/ecom/website/${ws.integrationId}`, headers: { authorization: `Bearer ${ws.integrationKey}` }, json: body });
    expect((await website({ event_type: 'order_placed', external_id: 'w-1', order: { external_id: 'web-1', total_amount: 50, currency: 'USD' } })).statusCode).toBe(200);
    expect((await website({ event_type: 'order_placed', external_id: 'w-2', email: 'buyer@example.com', order: { external_id: 'web-2', total_amount: 50, currency: 'USD' } })).statusCode).toBe(200);
    expect((await orderOf(ws, 'web-2')).contact_id).not.toBeNull();
    expect(await orderCount(ws)).toBe(1);
  });

  it('erasure takes a contact\'s identities: a later sale of its customer is kept without a contact, and the erased contact\'s orders stay with it', async () => {
    const ws = await h().workspace();
    const id = await integration(ws, 'shopify');
    await shopify(id, 'customers/update', JONAS_EMAIL_ADDED);
    const jonas = (await contactOf(ws, JONAS.email))!;
    await shopify(id, 'orders/create', PHONE_CUSTOMER);
    expect(await knex()('contact_identities').where({ workspace_id: ws.id }).orderBy('kind').select('kind', 'value', 'contact_id')).toEqual([
      { kind: 'phone', value: '+16175550199', contact_id: jonas.id },
      { kind: 'shopify', value: '7012345679999', contact_id: jonas.id },
    ]);

    expect((await api(ws, 'DELETE', `/contacts/${jonas.id}`)).statusCode).toBe(204);
    expect(await knex()('contact_identities').where({ workspace_id: ws.id })).toEqual([]);
    expect(await orderOf(ws, '5801234567901')).toMatchObject({ contact_id: jonas.id });
    const next = { ...JSON.parse(fixture(PHONE_CUSTOMER).toString('utf8')), id: 5801234567999, name: '#1099', order_number: 1099 };
    await deliver(id, 'shopify', 'orders/create', next);
    expect(await orderOf(ws, '5801234567999')).toMatchObject({ contact_id: null });
    expect((await revenue(ws)).total).toEqual([{ currency: 'USD', orders: 2, revenue: 192.24 }]);
  });

  it('a contact\'s identities follow its writes: a phone changed is released, a customer id written again is taken back by that contact', async () => {
    const ws = await h().workspace();
    const identities = async () =>
      (await knex()('contact_identities').where({ workspace_id: ws.id }).orderBy(['kind', 'value']).select('kind', 'value', 'contact_id')) as Row[];
    const ann = await contactWithPhone(ws, 'ann@example.com', '0049 30 1234567');
    expect(await identities()).toEqual([{ kind: 'phone', value: '+49301234567', contact_id: ann }]);
    await api(ws, 'PATCH', `/contacts/${ann}`, { properties: { phone: '+49 30 7654321', shopify_customer_id: 901 } });
    expect(await identities()).toEqual([
      { kind: 'phone', value: '+49307654321', contact_id: ann },
      { kind: 'shopify', value: '901', contact_id: ann },
    ]);
    // Another contact written with the same customer id holds it now; Ann written with it again takes it back.
    const bob = (await api(ws, 'POST', '/contacts', { email: 'bob@example.com', properties: { shopify_customer_id: '901' } })).json().id;
    expect((await identities()).find((row) => row.kind === 'shopify')).toEqual({ kind: 'shopify', value: '901', contact_id: bob });
    await api(ws, 'POST', '/contacts', { email: 'ann@example.com', properties: { shopify_customer_id: '901' } });
    expect((await identities()).find((row) => row.kind === 'shopify')).toEqual({ kind: 'shopify', value: '901', contact_id: ann });
    // A number too short to be one names nobody.
    await api(ws, 'PATCH', `/contacts/${ann}`, { properties: { phone: '12345' } });
    expect(await identities()).toEqual([{ kind: 'shopify', value: '901', contact_id: ann }]);
  });

  it('the migrations keep every order and its items, indexes and foreign keys, and read the identities of the contacts stored before', async () => {
    const database = await createTestDatabase(dialect);
    const db = openDatabase(database.url);
    try {
      const k = db.knex;
      const migrationSource: Knex.MigrationSource<readonly [string, Migration]> = {
        getMigrations: async () => [...migrations],
        getMigrationName: ([name]) => name,
        getMigration: async ([, migration]) => migration,
      };
      const down = (name: string) => k.migrate.down({ migrationSource, name });
      const up = (name: string) => k.migrate.up({ migrationSource, name });
      const schema = () => catalog(k, dialect);
      const before = await schema();

      await down('202612020210_allow_orders_without_contact');
      await down('202612020200_create_contact_identities');
      await k('workspaces').insert({ id: 'w', name: 'n', site_id: 's-contactless', created_at: 1 });
      const contact = (id: string, properties: object, erased = false) => ({
        id, workspace_id: 'w', email: `${id}@example.com`, email_key: `${id}@example.com`, properties: JSON.stringify(properties),
        subscription_status: 'non_subscribed', created_at: 1, updated_at: 1, ...(erased ? { erased_at: 2 } : {}),
      });
      await k('contacts').insert([
        contact('c1', { shopify_customer_id: 7012345678901, phone: '+49 30 1234567' }),
        contact('c2', { phone: '0049-30-1234567', woocommerce_customer_id: '42' }),
        contact('c3', { phone: '+16175550100' }, true),
      ]);
      const order = { workspace_id: 'w', platform: 'shopify', origin: 'sync', total_amount: 10, currency: 'USD', status: '', ordered_at: 1, created_at: 1, updated_at: 1 };
      await k('orders').insert({ ...order, id: 'o1', contact_id: 'c1', upsert_key: 'o1' });
      const item = (orderId: string, position: number) => ({ order_id: orderId, workspace_id: 'w', quantity: 1, position, ordered_at: 1 });
      await k('order_items').insert([item('o1', 0), item('o1', 1)]);

      await up('202612020200_create_contact_identities');
      await up('202612020210_allow_orders_without_contact');
      expect(await schema()).toEqual(before);
      // The newer contact holds the phone both wrote; an erased contact names nothing.
      expect(await k('contact_identities').orderBy(['kind', 'value']).select('kind', 'value', 'contact_id')).toEqual([
        { kind: 'phone', value: '+49301234567', contact_id: 'c2' },
        { kind: 'shopify', value: '7012345678901', contact_id: 'c1' },
        { kind: 'woocommerce', value: '42', contact_id: 'c2' },
      ]);
      expect(Number((await k('order_items').where({ order_id: 'o1' }).count({ n: '*' }))[0]!.n)).toBe(2);

      // Down, an order without a contact goes with its items; the others stay, with theirs.
      await k('orders').insert({ ...order, id: 'o2', contact_id: null, upsert_key: 'o2', customer_ref: 'shopify:1' });
      await k('order_items').insert(item('o2', 0));
      await down('202612020210_allow_orders_without_contact');
      expect((await k('orders').orderBy('id').select('id')).map((row: Row) => row.id)).toEqual(['o1']);
      expect((await k('order_items').orderBy('position').select('order_id')).map((row: Row) => row.order_id)).toEqual(['o1', 'o1']);
      await up('202612020210_allow_orders_without_contact');
      expect(await schema()).toEqual(before);
      expect(Number((await k('order_items').count({ n: '*' }))[0]!.n)).toBe(2);
    } finally {
      await db.close();
      await database.drop();
    }
  });
});

/** The columns (nullability), indexes and foreign keys of `orders` and `order_items`, as each database lists them. */
async function catalog(k: Knex, dialect: string) {
  const rows = (result: any): Row[] => (Array.isArray(result) ? result : result.rows);
  if (dialect === 'postgres') {
    return {
      columns: rows(await k.raw(`SELECT table_name, column_name, is_nullable, data_type FROM information_schema.columns WHERE table_name IN ('orders', 'order_items') ORDER BY 1, 2`)),
      indexes: rows(await k.raw(`SELECT indexname, indexdef FROM pg_indexes WHERE tablename IN ('orders', 'order_items') ORDER BY 1`)),
      keys: rows(await k.raw(`SELECT conname, pg_get_constraintdef(oid) AS def FROM pg_constraint WHERE conrelid IN ('orders'::regclass, 'order_items'::regclass) ORDER BY 1`)),
    };
  }
  const byName = (list: Row[]) => [...list].sort((a, b) => String(a.name ?? a.id).localeCompare(String(b.name ?? b.id)));
  return {
    columns: Object.fromEntries(
      await Promise.all(['orders', 'order_items'].map(async (table) => [table, byName(await k.raw(`PRAGMA table_info(${table})`)).map((c: Row) => [c.name, c.type, c.notnull, c.pk])])),
    ),
    indexes: rows(await k.raw(`SELECT name, sql FROM sqlite_master WHERE type = 'index' AND tbl_name IN ('orders', 'order_items') AND sql IS NOT NULL ORDER BY name`)),
    keys: Object.fromEntries(
      await Promise.all(['orders', 'order_items'].map(async (table) => [table, (await k.raw(`PRAGMA foreign_key_list(${table})`)).map((f: Row) => [f.table, f.from, f.to, f.on_delete])])),
    ),
  };
}
