import { readdirSync, readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import type { MappedDelivery, StoreChange } from '../src/domain/platform-webhooks/store-change.js';
import { mapShopifyDelivery } from '../src/domain/shopify/shopify-mapping.js';

/** The Shopify mapper (docs/platforms/shopify.md, "What emk reads from each topic"): pure, so no database. */

const SHOP = 'emk-demo.myshopify.com';
const FIXTURES = 'fixtures/shopify';
type Body = Record<string, any>;

const fixture = (name: string): Body => JSON.parse(readFileSync(`${FIXTURES}/${name}.json`, 'utf8'));
const map = (topic: string, body: unknown, shopDomain = SHOP) => mapShopifyDelivery(topic, body, { shopDomain });

/** The one change a delivery maps to, its warnings asserted empty unless given. */
function changeOf(topic: string, body: unknown, warnings: string[] = []): StoreChange {
  const mapped = map(topic, body);
  expect(mapped).toMatchObject({ status: 'mapped', warnings });
  const changes = (mapped as Extract<MappedDelivery, { status: 'mapped' }>).changes;
  expect(changes).toHaveLength(1);
  return changes[0]!;
}

function nothingFrom(topic: string, body: unknown): string[] {
  const mapped = map(topic, body);
  expect(mapped).toMatchObject({ status: 'mapped', changes: [] });
  return (mapped as Extract<MappedDelivery, { status: 'mapped' }>).warnings;
}

const orderOf = (change: StoreChange) => {
  if (change.kind !== 'order') throw new Error(`expected an order, got ${change.kind}`);
  return change;
};
const productOf = (change: StoreChange) => {
  if (change.kind !== 'product_upsert') throw new Error(`expected a product, got ${change.kind}`);
  return change.product as Body;
};

const at = (iso: string) => Date.parse(iso);
const TOKEN = 'AQEAAZBvX2tA7n2Qy4hM3bEc9UcBAAGQb19rQO59kMuITN2xHPVHIsKCmTaYy2vCt0nJ1x4gqg';
const MAYA = {
  email: 'maya.lindqvist@example.com',
  properties: { first_name: 'Maya', last_name: 'Lindqvist', phone: '+16175550142', shopify_customer_id: '7012345678901' },
  consent: { status: 'subscribed', at: at('2024-05-14T13:20:11Z') },
};
const SWEATER = '8901234567890';
const ITEMS_1001 = [
  { external_id: SWEATER, title: 'Merino Crew Sweater', quantity: 1, price: 89 },
  { external_id: SWEATER, title: 'Merino Crew Sweater', quantity: 1, price: 94 },
];

describe('Shopify fixtures map to their store changes', () => {
  it('every fixture is one topic emk reads, and maps without a warning', () => {
    const files = readdirSync(FIXTURES).filter((f) => f.endsWith('.json') && f !== 'manifest.json');
    expect(files).toHaveLength(19);
    for (const file of files) {
      const topic = file.replace(/\.json$/, '').replace('-', '/');
      expect(map(topic, fixture(file.replace(/\.json$/, ''))), topic).toMatchObject({ status: 'mapped', warnings: [] });
    }
  });

  it('the fixtures tell one story: one shop, one customer, the order of the products, refund and fulfillment of the order', () => {
    const order = fixture('orders-create');
    const product = fixture('products-create');
    expect(order.line_items.map((l: Body) => l.product_id)).toEqual([product.id, product.id]);
    expect(order.line_items.map((l: Body) => l.variant_id)).toEqual([product.variants[0].id, product.variants[2].id]);
    for (const name of ['refunds-create', 'fulfillments-create', 'fulfillments-update']) expect(fixture(name).order_id).toBe(order.id);
    for (const name of ['orders-paid', 'orders-fulfilled', 'orders-updated']) expect(fixture(name).id).toBe(order.id);
    expect(fixture('checkouts-update').token).toBe(order.checkout_token);
    expect(fixture('orders-updated').refunds[0]).toEqual(fixture('refunds-create'));
    for (const name of ['orders-create', 'orders-cancelled', 'checkouts-create', 'customers-create', 'customers-update']) {
      expect(fixture(name).email, name).toBe(MAYA.email);
    }
    for (const name of ['customers-redact', 'customers-data_request', 'shop-redact']) expect(fixture(name).shop_domain).toBe(SHOP);
    expect(fixture('customers-redact').customer.id).toBe(fixture('customers-create').id);
    const consent = fixture('customers_email_marketing_consent-update');
    expect([consent.customer_id, consent.email_address]).toEqual([fixture('customers-create').id, MAYA.email]);
    expect(consent.email_marketing_consent).toMatchObject(fixture('customers-update').email_marketing_consent);
  });

  it('orders/create: the whole order, its buyer, the identity token and line items by product id', () => {
    expect(changeOf('orders/create', fixture('orders-create'))).toEqual({
      kind: 'order',
      customer: MAYA,
      identityToken: TOKEN,
      placed: true,
      order: {
        externalId: '5801234567890',
        orderNumber: '#1001',
        totalAmount: 205.14,
        currency: 'USD',
        shopCurrency: 'USD',
        presentment: null,
        status: 'paid',
        orderedAt: at('2024-05-14T13:32:10Z'),
        items: ITEMS_1001,
        cancelled: false,
        cancelledAt: null,
        refunds: [],
        updatedAt: at('2024-05-14T13:32:11Z'),
      },
    });
  });

  it('orders/paid and orders/fulfilled: the same order, later snapshots', () => {
    const paid = orderOf(changeOf('orders/paid', fixture('orders-paid'))).order;
    const fulfilled = orderOf(changeOf('orders/fulfilled', fixture('orders-fulfilled'))).order;
    expect([paid.externalId, fulfilled.externalId]).toEqual(['5801234567890', '5801234567890']);
    expect(paid.updatedAt).toBe(at('2024-05-14T13:32:13Z'));
    expect(fulfilled.updatedAt).toBe(at('2024-05-15T15:05:02Z'));
    expect(fulfilled.items).toEqual(ITEMS_1001);
  });

  it('orders/updated: the partial refund by its id, the total unchanged', () => {
    const { order } = orderOf(changeOf('orders/updated', fixture('orders-updated')));
    expect(order).toMatchObject({
      totalAmount: 205.14,
      status: 'partially_refunded',
      cancelled: false,
      refunds: [{ id: '9301234567890', amount: 101.52 }],
      updatedAt: at('2024-05-21T18:10:03Z'),
    });
  });

  it('orders/cancelled: cancelled, refunded in full by its refund id', () => {
    const { order } = orderOf(changeOf('orders/cancelled', fixture('orders-cancelled')));
    expect(order).toMatchObject({
      externalId: '5801234567891',
      orderNumber: '#1002',
      totalAmount: 103.62,
      status: 'refunded',
      cancelled: true,
      cancelledAt: at('2024-05-28T20:40:21Z'),
      refunds: [{ id: '9301234567891', amount: 103.62 }],
      items: [{ external_id: SWEATER, title: 'Merino Crew Sweater', quantity: 1, price: 89 }],
    });
  });

  it('refunds/create: the refund of the order, the sum of its successful refund transactions', () => {
    expect(changeOf('refunds/create', fixture('refunds-create'))).toEqual({
      kind: 'order_refunds',
      orderExternalId: '5801234567890',
      refunds: [{ id: '9301234567890', amount: 101.52, currency: 'USD', at: at('2024-05-21T18:10:00Z') }],
    });
  });

  it('fulfillments/create|update: info_received before tracking, then the tracking status', () => {
    const shipment = { kind: 'shipment', orderExternalId: '5801234567890', trackingNumber: '9400111899223344556677', carrier: 'USPS', email: MAYA.email };
    expect(changeOf('fulfillments/create', fixture('fulfillments-create'))).toEqual({ ...shipment, status: 'info_received' });
    expect(changeOf('fulfillments/update', fixture('fulfillments-update'))).toEqual({ ...shipment, status: 'delivered' });
  });

  it('checkouts/create|update: the cart by token, the recovery URL, completed once the order exists', () => {
    const cart = {
      externalId: 'c1a5e2f0b7d94e3c8a61f0d2b9e7c4a3',
      totalAmount: 205.14,
      currency: 'USD',
      checkoutUrl: `https://${SHOP}/76543210987/checkouts/ac/c1a5e2f0b7d94e3c8a61f0d2b9e7c4a3/recover?key=4f1d0c9b8a7e6d5c&locale=en-US`,
      items: ITEMS_1001,
    };
    expect(changeOf('checkouts/create', fixture('checkouts-create'))).toEqual({
      kind: 'cart',
      customer: MAYA,
      identityToken: TOKEN,
      cart: { ...cart, completed: false },
    });
    expect(changeOf('checkouts/update', fixture('checkouts-update'))).toMatchObject({ cart: { ...cart, completed: true } });
  });

  it('customers/create|update: the contact and its consent with Shopify’s consent time', () => {
    expect(changeOf('customers/create', fixture('customers-create'))).toEqual({ kind: 'customer', customer: MAYA });
    expect(changeOf('customers/update', fixture('customers-update'))).toEqual({
      kind: 'customer',
      customer: { ...MAYA, consent: { status: 'unsubscribed', at: at('2024-06-10T23:02:37Z') } },
    });
  });

  it('customers_email_marketing_consent/update: the consent alone, at Shopify’s time, with Shopify’s customer id', () => {
    expect(changeOf('customers_email_marketing_consent/update', fixture('customers_email_marketing_consent-update'))).toEqual({
      kind: 'customer',
      customer: { email: MAYA.email, properties: { shopify_customer_id: '7012345678901' }, consent: { status: 'unsubscribed', at: at('2024-06-10T23:02:37Z') } },
    });
  });

  it('products/create: the catalog product with its variants, options, stock and images', () => {
    const variant = (id: string, size: string, color: string, price: number, stock: number, image: string) => ({
      external_id: id,
      sku: `NWK-MCS-${size[0]}-${color.slice(0, 3).toUpperCase()}`,
      title: `${size} / ${color}`,
      options: { Size: size, Color: color },
      price,
      in_stock: true,
      stock_qty: stock,
      image_url: `https://cdn.shopify.com/s/files/1/0765/4321/0987/files/${image}?v=1714572000`,
      url: `https://${SHOP}/products/merino-crew-sweater?variant=${id}`,
    });
    expect(productOf(changeOf('products/create', fixture('products-create')))).toEqual({
      external_id: SWEATER,
      title: 'Merino Crew Sweater',
      description: expect.stringMatching(/^<p>A fine-gauge crew neck/),
      url: `https://${SHOP}/products/merino-crew-sweater`,
      image_url: 'https://cdn.shopify.com/s/files/1/0765/4321/0987/files/merino-crew-oatmeal.jpg?v=1714572000',
      product_type: 'Sweaters',
      categories: ['Knitwear', 'Merino', 'Winter'],
      price: 89,
      metadata: { handle: 'merino-crew-sweater', vendor: 'Northwind Knits' },
      variants: [
        { ...variant('45012345678901', 'Small', 'Oatmeal', 89, 12, 'merino-crew-oatmeal.jpg'), position: 1 },
        { ...variant('45012345678902', 'Medium', 'Oatmeal', 89, 4, 'merino-crew-oatmeal.jpg'), position: 2 },
        { ...variant('45012345678903', 'Large', 'Charcoal', 94, 5, 'merino-crew-charcoal.jpg'), position: 3 },
      ],
    });
  });

  it('products/update: a sale sets price and compare-at; sold out is out of stock unless it may be back-ordered', () => {
    const product = productOf(changeOf('products/update', fixture('products-update')));
    expect(product).toMatchObject({ price: 74, compare_at_price: 94 });
    expect(product.variants.map((v: Body) => [v.price, v.compare_at_price, v.stock_qty, v.in_stock])).toEqual([
      [89, undefined, 0, true],
      [89, undefined, 0, false],
      [74, 94, 3, true],
    ]);
  });

  it('products/delete and the privacy topics', () => {
    expect(changeOf('products/delete', fixture('products-delete'))).toEqual({ kind: 'product_delete', externalId: '8901234560001' });
    expect(changeOf('customers/redact', fixture('customers-redact'))).toEqual({ kind: 'customer_redact', email: MAYA.email });
    expect(changeOf('customers/data_request', fixture('customers-data_request'))).toEqual({ kind: 'data_request', email: MAYA.email, requestId: '2231987' });
    expect(changeOf('shop/redact', fixture('shop-redact'))).toEqual({ kind: 'shop_redact' });
  });
});

describe('Shopify payloads at the edges', () => {
  const order = (patch: Body = {}) => ({ ...fixture('orders-create'), ...patch });

  it('a topic emk does not read is ignored, whatever its body', () => {
    for (const topic of ['app/uninstalled', 'orders/edited', 'orders/delete', 'carts/create', 'inventory_levels/update', '']) {
      expect(map(topic, order())).toEqual({ status: 'ignored' });
    }
    expect(map('app/uninstalled', 'not json')).toEqual({ status: 'ignored' });
  });

  it('a body that is not an object maps to nothing, with a warning', () => {
    for (const body of [null, 'order', 42, [order()], undefined]) {
      expect(map('orders/create', body)).toEqual({ status: 'mapped', changes: [], warnings: ['body must be a JSON object (nothing was read)'] });
    }
  });

  it('money from decimal strings: "0.10" is ten cents, refund transactions add up exactly', () => {
    const refund = (id: number, amounts: string[]) => ({
      id,
      transactions: amounts.map((amount) => ({ kind: 'refund', status: 'success', amount })),
    });
    const { order: read } = orderOf(changeOf('orders/updated', order({ total_price: '0.10', refunds: [refund(1, ['0.10', '0.20']), refund(2, ['0.05'])] })));
    expect(read.totalAmount).toBe(0.1);
    expect(read.refunds).toEqual([
      { id: '1', amount: 0.3, currency: null, at: null },
      { id: '2', amount: 0.05, currency: null, at: null },
    ]);
  });

  it('only successful refund transactions count; a refund that returned no money is none', () => {
    const transactions = [
      { kind: 'refund', status: 'success', amount: '10.00' },
      { kind: 'refund', status: 'pending', amount: '20.00' },
      { kind: 'refund', status: 'failure', amount: '30.00' },
      { kind: 'sale', status: 'success', amount: '40.00' },
      { kind: 'void', status: 'success', amount: '50.00' },
    ];
    const body = { ...fixture('refunds-create'), transactions };
    expect(changeOf('refunds/create', body)).toMatchObject({ refunds: [{ id: '9301234567890', amount: 10 }] });
    expect(nothingFrom('refunds/create', { ...body, transactions: transactions.slice(1) })).toEqual([]);
    expect(nothingFrom('refunds/create', { ...body, transactions: [] })).toEqual([]);
  });

  it('a refund without its order id or its own id is not applied, and says so', () => {
    expect(nothingFrom('refunds/create', { ...fixture('refunds-create'), order_id: null })).toEqual(['order_id is required (refund 9301234567890 ignored)']);
    expect(nothingFrom('refunds/create', { ...fixture('refunds-create'), id: undefined })).toEqual(['id is required (refund of 101.52 ignored)']);
  });

  it('bad money: an unusable total keeps the order out; a bad line price or refund amount drops only itself', () => {
    expect(nothingFrom('orders/create', order({ total_price: '12,50' }))).toEqual([
      'total_price must be a number (got string) (ignored)',
      'the order was not applied: it needs total_price',
    ]);
    // Without a currency the order is in the workspace's: only the total is missing.
    expect(nothingFrom('orders/create', order({ total_price: '-3.00', currency: null, total_price_set: null }))).toEqual([
      'total_price must not be negative (ignored)',
      'the order was not applied: it needs total_price',
    ]);
    const lines = fixture('orders-create').line_items;
    const mapped = orderOf(
      changeOf('orders/create', order({ line_items: [{ ...lines[0], price: '1e13' }, lines[1]] }), ['line_items[0].price must be at most 1000000000000 (ignored)']),
    );
    expect(mapped.order.items).toEqual([{ ...ITEMS_1001[0], price: null }, ITEMS_1001[1]]);
    const refunds = [{ id: 7, transactions: [{ kind: 'refund', status: 'success', amount: 'ten' }, { kind: 'refund', status: 'success', amount: '4.00' }] }];
    expect(orderOf(changeOf('orders/updated', order({ refunds }), ['refunds[0].transactions[0].amount must be a number (got string) (ignored)'])).order.refunds).toEqual([
      { id: '7', amount: 4, currency: null, at: null },
    ]);
  });

  it('a line item with an unusable quantity is left out; one without a product keeps a null id', () => {
    const [first, second] = fixture('orders-create').line_items;
    const { order: read } = orderOf(
      changeOf('orders/create', order({ line_items: [{ ...first, quantity: -1 }, { ...second, product_id: null, title: 'Gift wrap' }, 'nonsense'] }), [
        'line_items[2] must be an object (ignored)',
        'line_items[0].quantity must not be negative (line item ignored)',
      ]),
    );
    expect(read.items).toEqual([{ external_id: null, title: 'Gift wrap', quantity: 1, price: 94 }]);
  });

  it('times keep their offsets; an unreadable update time is unknown, an unreadable creation time keeps the order out', () => {
    expect(orderOf(changeOf('orders/create', order({ created_at: '2024-05-14T23:30:00+09:00' }))).order.orderedAt).toBe(at('2024-05-14T14:30:00Z'));
    expect(orderOf(changeOf('orders/create', order({ updated_at: 'yesterday' }), ['updated_at must be an RFC 3339 time (ignored)'])).order.updatedAt).toBeNull();
    expect(nothingFrom('orders/create', order({ created_at: undefined }))).toEqual(['the order was not applied: it needs created_at']);
  });

  it('missing email: an order without one has no contact; a checkout or a customer without one stores nothing', () => {
    const body = order({ email: '', contact_email: null, customer: null });
    expect(orderOf(changeOf('orders/create', body, ['email is missing: the order goes to the contact of its customer id or phone, else is kept without a contact'])).customer).toBeNull();
    // The customer's own address when the order's is absent.
    expect(orderOf(changeOf('orders/create', order({ email: null }))).customer?.email).toBe(MAYA.email);
    expect(nothingFrom('checkouts/create', { ...fixture('checkouts-create'), email: null, customer: null })).toEqual([]);
    expect(nothingFrom('customers/create', { ...fixture('customers-create'), email: null })).toEqual([
      'email is missing: a customer without an email is no contact',
    ]);
    expect(nothingFrom('customers/redact', { ...fixture('customers-redact'), customer: { id: 1, email: null, phone: '+1555' } })).toEqual([
      'customer.email is missing: emk knows contacts by email only, so none is concerned',
    ]);
  });

  it('an unusable email is named and the customer’s own is taken', () => {
    const read = orderOf(changeOf('orders/create', order({ email: 'maya at example' }), ['email must be an email address (ignored)']));
    expect(read.customer?.email).toBe(MAYA.email);
  });

  it('consent states: pending, redacted, invalid and not_subscribed are not subscribed', () => {
    const consent = (state: unknown) =>
      (changeOf('customers/update', {
        ...fixture('customers-update'),
        email_marketing_consent: { state, opt_in_level: 'confirmed_opt_in', consent_updated_at: '2024-06-01T12:00:00Z' },
      }) as Extract<StoreChange, { kind: 'customer' }>).customer.consent;
    for (const state of ['not_subscribed', 'pending', 'redacted', 'invalid']) {
      expect(consent(state), state).toEqual({ status: 'non_subscribed', at: at('2024-06-01T12:00:00Z') });
    }
    expect(consent('subscribed')).toEqual({ status: 'subscribed', at: at('2024-06-01T12:00:00Z') });
  });

  it('an unknown consent state is named and the older accepts_marketing read instead', () => {
    const body = {
      ...fixture('customers-update'),
      email_marketing_consent: { state: 'maybe', opt_in_level: null, consent_updated_at: null },
      accepts_marketing: true,
      accepts_marketing_updated_at: '2020-01-02T03:04:05-05:00',
    };
    const change = changeOf('customers/update', body, [
      'email_marketing_consent.state must be one of subscribed, unsubscribed, not_subscribed, pending, redacted, invalid (ignored)',
    ]);
    expect(change).toMatchObject({ customer: { consent: { status: 'subscribed', at: at('2020-01-02T08:04:05Z') } } });
  });

  it('old-style accepts_marketing: true subscribes at its time, false is never subscribed, no time is no time', () => {
    const older = (patch: Body) => {
      const { email_marketing_consent: _dropped, ...body } = fixture('customers-create');
      return (changeOf('customers/create', { ...body, ...patch }) as Extract<StoreChange, { kind: 'customer' }>).customer.consent;
    };
    expect(older({ accepts_marketing: true, accepts_marketing_updated_at: '2019-03-01T10:00:00-05:00' })).toEqual({ status: 'subscribed', at: at('2019-03-01T15:00:00Z') });
    expect(older({ accepts_marketing: false, accepts_marketing_updated_at: null })).toEqual({ status: 'non_subscribed', at: null });
    expect(older({})).toBeNull();
  });

  it('the consent topic: any state as for a customer, any case; without a time it has none', () => {
    const topic = 'customers_email_marketing_consent/update';
    const sent = fixture('customers_email_marketing_consent-update');
    const consentOf = (patch: Body) =>
      (changeOf(topic, { ...sent, email_marketing_consent: { ...sent.email_marketing_consent, ...patch } }) as Extract<StoreChange, { kind: 'customer' }>).customer.consent;
    expect(consentOf({ state: 'subscribed', consent_updated_at: '2024-07-01T08:00:00-04:00' })).toEqual({ status: 'subscribed', at: at('2024-07-01T12:00:00Z') });
    expect(consentOf({ state: 'SUBSCRIBED' })).toEqual({ status: 'subscribed', at: at('2024-06-10T23:02:37Z') });
    expect(consentOf({ state: 'pending' })).toEqual({ status: 'non_subscribed', at: at('2024-06-10T23:02:37Z') });
    expect(consentOf({ consent_updated_at: null })).toEqual({ status: 'unsubscribed', at: null });
  });

  it('the consent topic without an email or a state applies nothing and says so (emk finds contacts by email)', () => {
    const topic = 'customers_email_marketing_consent/update';
    const sent = fixture('customers_email_marketing_consent-update');
    expect(nothingFrom(topic, { ...sent, email_address: null })).toEqual([
      'email_address is missing: emk finds contacts by email, so the consent of customer 7012345678901 was not applied',
    ]);
    expect(nothingFrom(topic, { ...sent, email_address: '', customer_id: null })).toEqual([
      'email_address is missing: emk finds contacts by email, so the consent of the customer was not applied',
    ]);
    expect(nothingFrom(topic, { ...sent, email_marketing_consent: { ...sent.email_marketing_consent, state: null } })).toEqual([
      'email_marketing_consent.state must be one of subscribed, unsubscribed, not_subscribed, pending, redacted, invalid (ignored)',
      'the consent was not applied: it needs email_marketing_consent.state',
    ]);
    expect(nothingFrom(topic, { customer_id: 1, email_address: MAYA.email })).toEqual(['the consent was not applied: it needs email_marketing_consent.state']);
  });

  it('the checkout box without the customer’s consent (API 2025-01 on): ticked, subscribed at the order’s processed_at, else created_at; unticked says nothing', () => {
    // From API 2025-01 Shopify's customer payloads, the order's customer included, carry no email_marketing_consent.
    const { email_marketing_consent: _removed, ...customer } = fixture('orders-create').customer;
    const consentOf = (patch: Body, warnings: string[] = []) => orderOf(changeOf('orders/create', order({ customer, ...patch }), warnings)).customer?.consent;
    expect(consentOf({ buyer_accepts_marketing: true, processed_at: '2024-05-14T09:33:00-04:00' })).toEqual({ status: 'subscribed', at: at('2024-05-14T13:33:00Z') });
    expect(consentOf({ buyer_accepts_marketing: true, processed_at: null })).toEqual({ status: 'subscribed', at: at('2024-05-14T13:32:10Z') });
    expect(consentOf({ buyer_accepts_marketing: true, processed_at: 'soon' }, ['processed_at must be an RFC 3339 time (ignored)'])).toEqual({
      status: 'subscribed',
      at: at('2024-05-14T13:32:10Z'),
    });
    // An empty box is no unsubscribe, and what is not a boolean is no box.
    expect(consentOf({ buyer_accepts_marketing: false })).toBeNull();
    expect(consentOf({ buyer_accepts_marketing: undefined })).toBeNull();
    expect(orderOf(changeOf('orders/create', order({ customer: null, buyer_accepts_marketing: 'yes' }))).customer).toEqual({
      email: MAYA.email,
      properties: { first_name: 'Maya', last_name: 'Lindqvist' },
      consent: null,
    });
    // A checkout has no processed_at: its box is dated by its creation.
    const { email_marketing_consent: _alsoRemoved, ...buyer } = fixture('checkouts-create').customer;
    const cart = changeOf('checkouts/create', { ...fixture('checkouts-create'), customer: buyer }) as Extract<StoreChange, { kind: 'cart' }>;
    expect(cart.customer?.consent).toEqual({ status: 'subscribed', at: at('2024-05-14T13:18:40Z') });
  });

  it('older payloads: the customer’s dated consent is Shopify’s own record and wins over the box; an undated one gives way to it', () => {
    expect(orderOf(changeOf('orders/create', order({ buyer_accepts_marketing: true }))).customer?.consent).toEqual(MAYA.consent);
    const unsubscribed = { ...fixture('orders-create').customer, email_marketing_consent: { state: 'unsubscribed', opt_in_level: null, consent_updated_at: '2024-05-20T10:00:00Z' } };
    expect(orderOf(changeOf('orders/updated', order({ customer: unsubscribed, buyer_accepts_marketing: true }))).customer?.consent).toEqual({
      status: 'unsubscribed',
      at: at('2024-05-20T10:00:00Z'),
    });
    const undated = { ...fixture('orders-create').customer, email_marketing_consent: { state: 'not_subscribed', opt_in_level: null, consent_updated_at: null } };
    const consentOf = (box: boolean) => orderOf(changeOf('orders/create', order({ customer: undated, buyer_accepts_marketing: box }))).customer?.consent;
    expect(consentOf(true)).toEqual({ status: 'subscribed', at: at('2024-05-14T13:32:10Z') });
    expect(consentOf(false)).toEqual({ status: 'non_subscribed', at: null });
  });

  it('the identity token: note attribute _ir_id or _emk, as a list or an object; none without', () => {
    expect(orderOf(changeOf('orders/create', order({ note_attributes: [{ name: 'gift', value: 'no' }, { name: '_emk', value: 'tok-1' }] }))).identityToken).toBe('tok-1');
    expect(orderOf(changeOf('orders/create', order({ note_attributes: { _ir_id: 'tok-2' } }))).identityToken).toBe('tok-2');
    expect(orderOf(changeOf('orders/create', order({ note_attributes: [] }))).identityToken).toBeNull();
    expect(orderOf(changeOf('orders/create', order({ note_attributes: [{ name: '_ir_id', value: 12 }] }))).identityToken).toBeNull();
  });

  it('ids sent as text read like ids sent as numbers', () => {
    expect(orderOf(changeOf('orders/create', order({ id: '5801234567890', name: null, order_number: 1001 }))).order).toMatchObject({
      externalId: '5801234567890',
      orderNumber: '1001',
    });
    expect(nothingFrom('orders/create', order({ id: 12.5 }))).toEqual(['id must be a whole number or text (ignored)', 'the order was not applied: it needs id']);
  });

  describe('fulfillments → shipping status', () => {
    const fulfillment = (patch: Body) => ({ ...fixture('fulfillments-create'), ...patch });
    const statusOf = (patch: Body, warnings: string[] = []) =>
      (changeOf('fulfillments/update', fulfillment(patch), warnings) as Extract<StoreChange, { kind: 'shipment' }>).status;

    it('the tracking status table', () => {
      const table: Record<string, string> = {
        label_printed: 'info_received',
        label_purchased: 'info_received',
        confirmed: 'info_received',
        in_transit: 'in_transit',
        out_for_delivery: 'out_for_delivery',
        ready_for_pickup: 'out_for_delivery',
        attempted_delivery: 'failed_attempt',
        delivered: 'delivered',
        picked_up: 'delivered',
        failure: 'exception',
      };
      for (const [shipmentStatus, expected] of Object.entries(table)) expect(statusOf({ shipment_status: shipmentStatus }), shipmentStatus).toBe(expected);
    });

    it('null or absent tracking: info_received once the fulfillment succeeded, nothing while it is pending or open', () => {
      expect(statusOf({ shipment_status: null })).toBe('info_received');
      expect(statusOf({ shipment_status: undefined })).toBe('info_received');
      expect(nothingFrom('fulfillments/create', fulfillment({ shipment_status: null, status: 'pending' }))).toEqual([]);
      expect(nothingFrom('fulfillments/create', fulfillment({ shipment_status: null, status: 'open' }))).toEqual([]);
    });

    it('a cancelled, failed or erroneous fulfillment is an exception, whatever its tracking said', () => {
      for (const status of ['cancelled', 'failure', 'error']) expect(statusOf({ status, shipment_status: 'in_transit' }), status).toBe('exception');
    });

    it('an unknown tracking status is named; the fulfillment still counts as info_received', () => {
      expect(statusOf({ shipment_status: 'lost_in_space' }, [
        'shipment_status must be one of label_printed, label_purchased, confirmed, in_transit, out_for_delivery, ready_for_pickup, attempted_delivery, delivered, picked_up, failure (ignored)',
      ])).toBe('info_received');
    });

    it('tracking from tracking_numbers when tracking_number is absent; no order id, no shipment', () => {
      expect(changeOf('fulfillments/update', fulfillment({ tracking_number: null, tracking_company: null, email: null }))).toMatchObject({
        trackingNumber: '9400111899223344556677',
        carrier: null,
        email: null,
      });
      expect(nothingFrom('fulfillments/update', fulfillment({ order_id: null }))).toEqual(['order_id is required (fulfillment ignored)']);
    });
  });

  describe('products', () => {
    const product = (patch: Body) => ({ ...fixture('products-create'), ...patch });

    it('a draft or archived product leaves the catalog; no status reads as active', () => {
      for (const status of ['draft', 'archived', 'unlisted']) {
        expect(changeOf('products/update', product({ status })), status).toEqual({ kind: 'product_delete', externalId: SWEATER });
      }
      expect(changeOf('products/update', product({ status: undefined })).kind).toBe('product_upsert');
    });

    it('untracked inventory: always for sale, no quantity; the placeholder option of a single variant is dropped', () => {
      const variant = { ...fixture('products-create').variants[0], inventory_management: null, title: 'Default Title', option1: 'Default Title', option2: null, image_id: null };
      const read = productOf(changeOf('products/update', product({ options: [{ name: 'Title', position: 1, values: ['Default Title'] }], variants: [variant] })));
      expect(read.variants).toEqual([
        {
          external_id: '45012345678901',
          sku: 'NWK-MCS-S-OAT',
          price: 89,
          in_stock: true,
          url: `https://${SHOP}/products/merino-crew-sweater?variant=45012345678901`,
          position: 1,
        },
      ]);
    });

    it('the image of the first images entry without a main image; empty tags, no categories; no variants list leaves variants alone', () => {
      const { image: _image, variants: _variants, ...rest } = fixture('products-create');
      const read = productOf(changeOf('products/update', { ...rest, tags: '' }));
      expect(read.image_url).toBe('https://cdn.shopify.com/s/files/1/0765/4321/0987/files/merino-crew-oatmeal.jpg?v=1714572000');
      expect(read.categories).toEqual([]);
      expect(read).not.toHaveProperty('variants');
      expect(read).not.toHaveProperty('price');
    });

    it('the lowest price above 0 is the product’s; an unusable field drops only itself', () => {
      const [a, b, c] = fixture('products-create').variants;
      const read = productOf(
        changeOf(
          'products/update',
          product({ product_type: { name: 'Sweaters' }, variants: [{ ...a, price: '0.00' }, { ...b, price: '79.50', inventory_quantity: 3e9 }, { ...c, price: 'free' }] }),
          ['variants[1].inventory_quantity must be at most 2147483647 (ignored)', 'variants[2].price must be a number (got string) (ignored)', 'product_type must be a string (got object) (ignored)'],
        ),
      );
      expect(read.price).toBe(79.5);
      expect(read).not.toHaveProperty('product_type');
      expect(read.variants.map((v: Body) => [v.price, v.stock_qty])).toEqual([
        [0, 12],
        [79.5, undefined],
        [undefined, 5],
      ]);
    });

    it('no id or no title: nothing; a shop not yet known: no URLs', () => {
      expect(nothingFrom('products/create', product({ id: null }))).toEqual(['id is required (product ignored)']);
      expect(nothingFrom('products/create', product({ title: '  ' }))).toEqual(['title is required (product ignored)']);
      const mapped = map('products/create', product({}), '') as Extract<MappedDelivery, { status: 'mapped' }>;
      const read = productOf(mapped.changes[0]!);
      expect(read).not.toHaveProperty('url');
      expect(read.variants[0]).not.toHaveProperty('url');
    });
  });
});

