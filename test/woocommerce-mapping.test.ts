import { readdirSync, readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { readCsvRows } from '../src/cli/input/record-reader.js';
import type { MappedDelivery, StoreChange } from '../src/domain/platform-webhooks/store-change.js';
import { productSchema } from '../src/domain/products/product.schema.js';
import { decodeHtmlEntities } from '../src/domain/shared/html-entities.js';
import { mapWooCommerceDelivery } from '../src/domain/woocommerce/woocommerce-mapping.js';
import { wooCommerceProductsExport } from '../src/domain/woocommerce/woocommerce-products-export.js';
import { describeEachDatabase, type TestWorkspace } from './helpers/harness.js';
import { postPlatformDelivery } from './helpers/platform-deliveries.js';
import { sendingHelpers } from './helpers/sending.js';

/** The story of fixtures/woocommerce/README.md: shop.example.com, Olivia's order 5001 and Noah's unpaid 5002. */
const FIXTURES = new URL('../fixtures/woocommerce/', import.meta.url);
const fixture = (name: string): Record<string, unknown> => JSON.parse(readFileSync(new URL(name, FIXTURES), 'utf8'));
const context = { shopDomain: 'shop.example.com' };
const map = (topic: string, body: unknown) => mapWooCommerceDelivery(topic, body, context);
/** A `*_gmt` time is UTC written without a zone. */
const utc = (time: string) => Date.parse(`${time}Z`);

const mapped = (delivery: MappedDelivery) => {
  if (delivery.status !== 'mapped') throw new Error('expected a mapped delivery');
  return delivery;
};
/** The one change of a delivery, of the kind expected. */
const only = <K extends StoreChange['kind']>(delivery: MappedDelivery, kind: K) => {
  const { changes } = mapped(delivery);
  expect(changes).toHaveLength(1);
  expect(changes[0]!.kind).toBe(kind);
  return changes[0] as Extract<StoreChange, { kind: K }>;
};
const orderOf = (body: unknown, topic = 'order.updated') => only(map(topic, body), 'order');
/** order-created.json with some fields replaced. */
const order5001 = (changes: Record<string, unknown>) => ({ ...fixture('order-created.json'), ...changes });

const OLIVIA = {
  email: 'olivia.martin@example.com',
  properties: { first_name: 'Olivia', last_name: 'Martin', phone: '+49 30 1234567', woocommerce_customer_id: '42' },
  // The order's `_emk_subscribed` meta, at checkout.
  consent: { status: 'subscribed', at: utc('2026-03-04T18:22:09') },
};
const ORDER_5001_ITEMS = [
  { external_id: '101', title: 'Merino Wool Beanie', quantity: 2, price: 24 },
  // The hoodie in size L is variation 122 of product 120: the item names the product.
  { external_id: '120', title: 'Organic Cotton Hoodie - L', quantity: 1, price: 45 },
];
const ORDER_5001 = {
  externalId: '5001',
  orderNumber: '5001',
  totalAmount: 97.9,
  currency: 'EUR',
  // The store's currency, paid in it: nothing converted.
  shopCurrency: 'EUR',
  presentment: null,
  status: 'processing',
  orderedAt: utc('2026-03-04T18:22:09'),
  items: ORDER_5001_ITEMS,
  cancelled: false,
  cancelledAt: null,
  refunds: [],
  updatedAt: utc('2026-03-04T18:22:14'),
};
const ORDER_5002 = {
  externalId: '5002',
  orderNumber: '5002',
  totalAmount: 49.9,
  currency: 'EUR',
  shopCurrency: 'EUR',
  presentment: null,
  orderedAt: utc('2026-03-06T20:03:44'),
  items: [{ external_id: '120', title: 'Organic Cotton Hoodie - M', quantity: 1, price: 45 }],
  refunds: [],
};
const NOAH = {
  email: 'noah.becker@example.org',
  properties: { first_name: 'Noah', last_name: 'Becker' },
  consent: { status: 'non_subscribed', at: null },
};

describe('WooCommerce fixtures map to store changes', () => {
  it('order-created.json: a paid order (processing) with its buyer, consent, identity token and items', () => {
    expect(map('order.created', fixture('order-created.json'))).toEqual({
      status: 'mapped',
      warnings: [],
      changes: [
        {
          kind: 'order',
          customer: OLIVIA,
          identityToken: 'AQMBc2Y0cTdrMm05eHd2YjNuOHAxbGo2aGQwZ3R6NWNyYQ',
          order: ORDER_5001,
          placed: true,
        },
      ],
    });
  });

  it('order-updated-completed.json: the same order, completed, a later snapshot', () => {
    const change = orderOf(fixture('order-updated-completed.json'));
    expect(change.order).toEqual({ ...ORDER_5001, status: 'completed', updatedAt: utc('2026-03-05T10:41:37') });
    expect(change.placed).toBe(true);
    expect(change.customer).toEqual(OLIVIA);
  });

  it('order-updated-partial-refund.json: a refund by its id, the absolute value of its negative total', () => {
    const change = orderOf(fixture('order-updated-partial-refund.json'));
    expect(change.order).toMatchObject({ status: 'completed', cancelled: false, refunds: [{ id: '5010', amount: 24 }] });
    expect(change.order.updatedAt).toBe(utc('2026-03-09T13:05:52'));
  });

  it('order-updated-refunded.json: every refund listed, no extra one for the status; consent keeps the checkout time', () => {
    const delivery = map('order.updated', fixture('order-updated-refunded.json'));
    const change = only(delivery, 'order');
    expect(change.order).toMatchObject({
      status: 'refunded',
      totalAmount: 97.9,
      cancelled: false,
      refunds: [
        { id: '5011', amount: 73.9 },
        { id: '5010', amount: 24 },
      ],
      updatedAt: utc('2026-03-16T09:12:30'),
    });
    expect(change.placed).toBe(true);
    expect(change.customer?.consent).toEqual({ status: 'subscribed', at: utc('2026-03-04T18:22:09') });
    expect(mapped(delivery).warnings).toEqual([]);
  });

  it('order-created-pending.json: an unpaid guest order is not placed', () => {
    expect(map('order.created', fixture('order-created-pending.json'))).toEqual({
      status: 'mapped',
      warnings: [],
      changes: [
        {
          kind: 'order',
          customer: NOAH,
          identityToken: null,
          order: { ...ORDER_5002, status: 'pending', cancelled: false, cancelledAt: null, updatedAt: utc('2026-03-06T20:03:45') },
          placed: false,
        },
      ],
    });
  });

  it('order-updated-cancelled.json: the unpaid order cancelled by WooCommerce', () => {
    const change = orderOf(fixture('order-updated-cancelled.json'));
    expect(change.order).toEqual({ ...ORDER_5002, status: 'cancelled', cancelled: true, cancelledAt: utc('2026-03-06T21:04:02'), updatedAt: utc('2026-03-06T21:04:02') });
    expect(change.customer).toEqual(NOAH);
  });

  it('order-deleted.json: the trashed order (only its id) is cancelled', () => {
    expect(map('order.deleted', fixture('order-deleted.json'))).toEqual({
      status: 'mapped',
      warnings: [],
      changes: [{ kind: 'order_cancelled', orderExternalId: '5002' }],
    });
  });

  it('order-restored.json: the restored order is its snapshot, still cancelled', () => {
    const change = orderOf(fixture('order-restored.json'), 'order.restored');
    expect(change.order).toEqual({ ...ORDER_5002, status: 'cancelled', cancelled: true, cancelledAt: utc('2026-03-20T08:15:00'), updatedAt: utc('2026-03-20T08:15:00') });
  });

  it('customer-created.json: an account without consent is non_subscribed, at no time', () => {
    expect(map('customer.created', fixture('customer-created.json'))).toEqual({
      status: 'mapped',
      warnings: [],
      changes: [
        {
          kind: 'customer',
          customer: {
            email: 'olivia.martin@example.com',
            properties: { first_name: 'Olivia', last_name: 'Martin', woocommerce_customer_id: '42' },
            consent: { status: 'non_subscribed', at: null },
          },
        },
      ],
    });
  });

  it('customer-updated.json: `_emk_subscribed` "yes" subscribes at the time the meta `_emk_subscribed_at` gives', () => {
    const change = only(map('customer.updated', fixture('customer-updated.json')), 'customer');
    expect(change.customer).toEqual({
      email: 'olivia.martin@example.com',
      properties: { first_name: 'Olivia', last_name: 'Martin', phone: '+49 30 1234567', woocommerce_customer_id: '42' },
      consent: { status: 'subscribed', at: Date.parse('2026-03-02T09:18:02Z') },
    });
  });

  it('a customer\'s "yes" without `emk_subscribed_at` has no consent time: it only sets a new contact\'s status', () => {
    const body = fixture('customer-updated.json') as { meta_data: Array<{ key: string }> };
    const withoutTime = { ...body, meta_data: body.meta_data.filter((m) => m.key !== '_emk_subscribed_at') };
    expect(only(map('customer.updated', withoutTime), 'customer').customer.consent).toEqual({ status: 'subscribed', at: null });
  });

  it('customer-deleted.json: deleting a store account changes nothing (it is no erasure request)', () => {
    expect(map('customer.deleted', fixture('customer-deleted.json'))).toEqual({ status: 'mapped', changes: [], warnings: [] });
  });

  it('product-created.json: a simple product in the catalog\'s field names', () => {
    expect(map('product.created', fixture('product-created.json'))).toEqual({
      status: 'mapped',
      warnings: [],
      changes: [
        {
          kind: 'product_upsert',
          product: {
            external_id: '101',
            title: 'Merino Wool Beanie',
            url: 'https://shop.example.com/product/merino-wool-beanie/',
            image_url: 'https://shop.example.com/wp-content/uploads/2026/02/beanie-grey.jpg',
            description: '<p>A soft, warm beanie knitted from 100% extra-fine merino wool. One size fits most.</p>\n',
            price: 24,
            in_stock: true,
            stock_qty: 37,
            categories: ['Accessories', 'Hats'],
            product_type: 'simple',
            weight: 0.12,
            metadata: { sku: 'BEANIE-MER-GRY' },
          },
        },
      ],
    });
  });

  it('product-updated-sale.json: on sale, the regular price is the compare-at price', () => {
    const { product } = only(map('product.updated', fixture('product-updated-sale.json')), 'product_upsert');
    expect(product).toMatchObject({ external_id: '101', price: 19, compare_at_price: 24, stock_qty: 35, in_stock: true });
  });

  it('product-created-variable.json: a variable product has the parent\'s price and no counted stock', () => {
    const { product } = only(map('product.created', fixture('product-created-variable.json')), 'product_upsert');
    expect(product).toEqual({
      external_id: '120',
      title: 'Organic Cotton Hoodie',
      url: 'https://shop.example.com/product/organic-cotton-hoodie/',
      image_url: 'https://shop.example.com/wp-content/uploads/2026/02/hoodie-forest.jpg',
      description: '<p>Heavyweight hoodie in GOTS-certified organic cotton, brushed inside.</p>\n',
      price: 45,
      in_stock: true,
      categories: ['Clothing', 'Hoodies'],
      product_type: 'variable',
      weight: 0.65,
      metadata: { sku: 'HOODIE-ORG' },
    });
  });

  it('product-updated-variation.json: a variation\'s own delivery changes nothing', () => {
    const delivery = mapped(map('product.updated', fixture('product-updated-variation.json')));
    expect(delivery.changes).toEqual([]);
    expect(delivery.warnings).toEqual(['a variation is not a catalog product: its parent product is (ignored)']);
  });

  it('product-updated-draft.json: a product back to draft leaves the catalog', () => {
    expect(map('product.updated', fixture('product-updated-draft.json'))).toEqual({
      status: 'mapped',
      warnings: [],
      changes: [{ kind: 'product_delete', externalId: '130' }],
    });
  });

  it('product-deleted.json: the trashed product (only its id) leaves the catalog', () => {
    expect(only(map('product.deleted', fixture('product-deleted.json')), 'product_delete')).toEqual({ kind: 'product_delete', externalId: '130' });
  });

  it('every fixture but the ping is a JSON object, and every product written is one the catalog accepts', () => {
    const files = readdirSync(FIXTURES).filter((name) => name.endsWith('.json'));
    expect(files.length).toBeGreaterThanOrEqual(17);
    for (const name of files.filter((file) => file.startsWith('product-'))) {
      const topic = `product.${name.split('-')[1]!.replace('.json', '')}`;
      for (const change of mapped(map(topic, fixture(name))).changes) {
        if (change.kind === 'product_upsert') expect(productSchema.safeParse(change.product).success, name).toBe(true);
      }
    }
    expect(readFileSync(new URL('ping.txt', FIXTURES), 'utf8')).toMatch(/^webhook_id=\d+$/);
  });
});

describe('WooCommerce order statuses', () => {
  it.each([
    ['processing', true, false],
    ['on-hold', true, false],
    ['completed', true, false],
    ['pending', false, false],
    ['failed', false, false],
    ['checkout-draft', false, false],
    ['cancelled', true, true],
    ['trash', true, true],
    ['refunded', true, false],
  ])('%s → placed %s, cancelled %s; the status is stored as sent', (status, placed, cancelled) => {
    const change = orderOf(order5001({ status }));
    expect(change.placed).toBe(placed);
    expect(change.order.cancelled).toBe(cancelled);
    expect(change.order.status).toBe(status);
  });

  it('refunded with no refund listed is a full refund under the id `status:refunded`', () => {
    expect(orderOf(order5001({ status: 'refunded', refunds: [] })).order.refunds).toEqual([{ id: 'status:refunded', amount: 97.9, currency: null, at: ORDER_5001.updatedAt }]);
  });

  it('a status a plugin added counts as placed once paid, else not', () => {
    expect(orderOf(order5001({ status: 'shipped' })).placed).toBe(true);
    expect(orderOf(order5001({ status: 'shipped', date_paid_gmt: null })).placed).toBe(false);
  });

  it('a stored status with its `wc-` prefix means the same and is kept as sent', () => {
    const change = orderOf(order5001({ status: 'wc-completed' }));
    expect(change.placed).toBe(true);
    expect(change.order.status).toBe('wc-completed');
  });
});

describe('WooCommerce order edge cases', () => {
  it('partial refunds add up by id; a refund without a usable total or id is skipped with a warning', () => {
    const delivery = map(
      'order.updated',
      order5001({
        refunds: [
          { id: 61, reason: '', total: '-10.50' },
          { id: 62, reason: '', total: '-0.40' },
          { id: 63, reason: '', total: 'minus five' },
          { reason: 'no id', total: '-1.00' },
        ],
      }),
    );
    expect(only(delivery, 'order').order.refunds).toEqual([
      { id: '61', amount: 10.5, currency: null, at: ORDER_5001.updatedAt },
      { id: '62', amount: 0.4, currency: null, at: ORDER_5001.updatedAt },
    ]);
    expect(mapped(delivery).warnings).toEqual([
      'refunds[2].total must be a number (got string) (ignored)',
      'refunds[2] was not applied: it needs id and total',
      'refunds[3] was not applied: it needs id and total',
    ]);
  });

  it('an order without a billing email keeps its identity token and warns; a bad one is named', () => {
    const withoutEmail = map('order.created', order5001({ billing: { ...(fixture('order-created.json').billing as object), email: '' } }));
    const change = only(withoutEmail, 'order');
    expect(change.customer).toBeNull();
    expect(change.identityToken).toBe('AQMBc2Y0cTdrMm05eHd2YjNuOHAxbGo2aGQwZ3R6NWNyYQ');
    expect(mapped(withoutEmail).warnings).toEqual([
      'the order has no usable billing.email: it goes to the contact of its identity token, customer id or phone, else is kept without a contact',
    ]);

    const badEmail = mapped(map('order.created', order5001({ billing: { email: 'olivia at example.com' } })));
    expect(badEmail.warnings[0]).toBe('billing.email must be an email address (ignored)');
    expect(only(badEmail, 'order').customer).toBeNull();
    expect(only(map('order.created', order5001({ billing: null })), 'order').customer).toBeNull();
  });

  it('`_emk` is the identity token when `_ir_id` is absent', () => {
    const change = orderOf(order5001({ meta_data: [{ id: 1, key: '_emk', value: 'tok-emk' }] }));
    expect(change.identityToken).toBe('tok-emk');
    expect(change.customer?.consent).toEqual({ status: 'non_subscribed', at: null });
  });

  it.each([
    ['12,50', 'total must be a number (got string) (ignored)'],
    ['-5.00', 'total must not be negative (ignored)'],
    ['1e13', 'total must be at most 1000000000000 (ignored)'],
    [{ amount: 5 }, 'total must be a number (got object) (ignored)'],
  ])('a total of %j is bad money: the order is not applied', (total, warning) => {
    const delivery = mapped(map('order.created', order5001({ total })));
    expect(delivery.changes).toEqual([]);
    expect(delivery.warnings).toEqual([warning, 'the order was not applied: it needs total']);
  });

  it('an order needs an id, a currency, a status and date_created_gmt; all that is missing is named', () => {
    const delivery = mapped(map('order.created', order5001({ id: null, currency: 'EURO', status: '', date_created_gmt: undefined })));
    expect(delivery.changes).toEqual([]);
    expect(delivery.warnings).toEqual([
      'currency must be a three-letter ISO 4217 code (ignored)',
      'the order was not applied: it needs id, currency, status, date_created_gmt',
    ]);
  });

  it('money arrives as decimal strings or numbers; a currency in lower case is upper-cased', () => {
    const change = orderOf(order5001({ total: 97.9, currency: 'eur' }));
    expect(change.order.totalAmount).toBe(97.9);
    expect(change.order.currency).toBe('EUR');
    expect(orderOf(order5001({ total: '10.123456' })).order.totalAmount).toBe(10.1235);
  });

  it('line items: a bad quantity skips the item, a bad price drops the price, product 0 (deleted) has no id', () => {
    const delivery = map(
      'order.created',
      order5001({
        line_items: [
          { id: 1, name: 'Beanie', product_id: 101, variation_id: 0, quantity: 2.5, price: 24 },
          { id: 2, name: 'Hoodie', product_id: 120, variation_id: 121, quantity: 1, price: 'n/a' },
          { id: 3, name: 'Retired scarf', product_id: 0, variation_id: 0, quantity: 1, price: 13.333333333 },
          'not an item',
        ],
      }),
    );
    expect(only(delivery, 'order').order.items).toEqual([
      { external_id: '120', title: 'Hoodie', quantity: 1, price: null },
      { external_id: null, title: 'Retired scarf', quantity: 1, price: 13.3333 },
    ]);
    expect(mapped(delivery).warnings).toEqual([
      'line_items[3] must be an object (ignored)',
      'line_items[0].quantity must be an integer (got number) (item ignored)',
      'line_items[1].price must be a number (got string) (ignored)',
    ]);
  });

  it('a bad date_modified_gmt leaves the snapshot time unknown, with a warning', () => {
    const delivery = map('order.updated', order5001({ date_modified_gmt: 'yesterday' }));
    expect(only(delivery, 'order').order.updatedAt).toBeNull();
    expect(mapped(delivery).warnings).toEqual(['date_modified_gmt must be an RFC 3339 time (ignored)']);
  });

  it('order.deleted without an id applies nothing and says so', () => {
    expect(map('order.deleted', {})).toEqual({ status: 'mapped', changes: [], warnings: ['the deletion was not applied: it needs id'] });
  });
});

describe('WooCommerce customers and products: edge cases', () => {
  it('a customer without an account email is known by the billing email; without either nothing is applied', () => {
    const customer = fixture('customer-updated.json');
    expect(only(map('customer.updated', { ...customer, email: '' }), 'customer').customer.email).toBe('olivia.martin@example.com');
    expect(map('customer.updated', { ...customer, email: '', billing: { email: '' } })).toEqual({
      status: 'mapped',
      changes: [],
      warnings: ['the customer was not applied: it needs email'],
    });
  });

  it('only "yes" subscribes: another value of the meta leaves the consent unknown', () => {
    const customer = fixture('customer-updated.json');
    for (const value of ['no', '1', true]) {
      const change = only(map('customer.updated', { ...customer, meta_data: [{ id: 1, key: 'emk_subscribed', value }] }), 'customer');
      expect(change.customer.consent).toEqual({ status: 'non_subscribed', at: null });
    }
    const yes = only(map('customer.updated', { ...customer, meta_data: [{ id: 1, key: 'emk_subscribed', value: ' YES ' }] }), 'customer');
    expect(yes.customer.consent?.status).toBe('subscribed');
  });

  it.each(['draft', 'pending', 'private', 'future'])('a %s product leaves the catalog', (status) => {
    expect(only(map('product.updated', { ...fixture('product-created.json'), status }), 'product_delete').externalId).toBe('101');
  });

  it('stock: out of stock and on backorder are not in stock; without stock management the quantity is unknown', () => {
    const beanie = fixture('product-created.json');
    const outOfStock = only(map('product.updated', { ...beanie, stock_status: 'outofstock', stock_quantity: 0 }), 'product_upsert');
    expect(outOfStock.product).toMatchObject({ in_stock: false, stock_qty: 0 });
    const backorder = only(map('product.updated', { ...beanie, stock_status: 'onbackorder', stock_quantity: -2 }), 'product_upsert');
    expect(backorder.product).toMatchObject({ in_stock: false, stock_qty: -2 });
    const untracked = only(map('product.updated', { ...beanie, manage_stock: false, stock_quantity: 37 }), 'product_upsert');
    expect(untracked.product).not.toHaveProperty('stock_qty');
  });

  it('a bad field is left out with a warning naming WooCommerce\'s field; a product without a name is not applied', () => {
    const beanie = fixture('product-created.json');
    const delivery = map('product.updated', { ...beanie, price: '24,00', images: [{ id: 1 }], categories: [{ id: 1 }, { name: 'Hats' }] });
    const { product } = only(delivery, 'product_upsert');
    expect(product).not.toHaveProperty('price');
    expect(product).not.toHaveProperty('image_url');
    expect(product.categories).toEqual(['Hats']);
    expect(mapped(delivery).warnings).toEqual(['price must be a number (got string) (ignored)']);

    expect(map('product.updated', { ...beanie, name: '' })).toEqual({
      status: 'mapped',
      changes: [],
      warnings: ['the product was not applied: it needs name'],
    });
  });
});

describe('WooCommerce deliveries emk does not use', () => {
  it.each(['coupon.created', 'product.restored', 'action.woocommerce_add_to_cart', 'Order.Created', 'constructor', '__proto__', ''])(
    'topic %j is ignored',
    (topic) => {
      expect(map(topic, fixture('order-created.json'))).toEqual({ status: 'ignored' });
    },
  );

  it.each([null, [], 'webhook_id=7', 42, true])('a body that is no JSON object (%j) maps to no change', (body) => {
    expect(map('order.created', body)).toEqual({ status: 'mapped', changes: [], warnings: ['body must be a JSON object'] });
  });

  it('never throws over a payload\'s shape: any field of any fixture replaced by any odd value', () => {
    const oddValues = [null, '', 'x', -1, 0, 1e308, Number.NaN, true, [], [null], {}, { id: 'x' }, '\u0000'];
    const cases: Array<[string, string]> = [
      ['order.created', 'order-created.json'],
      ['order.updated', 'order-updated-refunded.json'],
      ['customer.updated', 'customer-updated.json'],
      ['product.created', 'product-created.json'],
    ];
    let deliveries = 0;
    for (const [topic, name] of cases) {
      const body = fixture(name);
      for (const field of Object.keys(body)) {
        for (const value of oddValues) {
          const delivery = map(topic, { ...body, [field]: value });
          expect(delivery.status).toBe('mapped');
          deliveries += 1;
        }
      }
    }
    expect(deliveries).toBeGreaterThan(500);
  });
});

/** fixtures/woocommerce/names-and-opt-ins (its README): Emma's order 5101 and the gift box, names as WooCommerce serves them. */
const EXTRA = 'names-and-opt-ins/';
const ORDER_5101_ITEMS = [
  { external_id: '140', title: 'Tea & Biscuits Gift Box', quantity: 1, price: 29.5 },
  { external_id: '120', title: 'Organic Cotton Hoodie - Forest & Moss', quantity: 1, price: 45 },
  { external_id: '130', title: 'Linen Tote Bag – Natural', quantity: 1, price: 19 },
  { external_id: '150', title: 'Baker’s Apron – Navy', quantity: 1, price: 22 },
];
/** Order 5101 with its `meta_data` replaced. */
const order5101With = (meta: Array<{ key: string; value: unknown }>) => ({
  ...fixture(`${EXTRA}order-created.json`),
  meta_data: meta.map((entry, i) => ({ id: 9900 + i, ...entry })),
});

describe('HTML entities in WooCommerce names', () => {
  it.each([
    ['Tea &amp; Biscuits', 'Tea & Biscuits'],
    ['&lt;b&gt; &quot;x&quot; &apos;y&apos;', '<b> "x" \'y\''],
    // wptexturize's and esc_html's numeric forms, decimal and hex
    ['Baker&#8217;s &#8220;best&#8221; &#8211; 2&#215;3&#8230;', 'Baker’s “best” – 2×3…'],
    ['Chef&#039;s &#x2013; &#X2014; &#x1F36A;', 'Chef\'s – — 🍪'],
    // named: the typographic ones, and HTML 4's Latin-1 block whole (PHP's htmlentities), case-sensitive
    ['&ndash;&mdash;&lsquo;&rsquo;&ldquo;&rdquo;&hellip;&trade;&euro;&bull;', '–—‘’“”…™€•'],
    ['&nbsp;|&copy;&reg;&deg;&frac12;&times;&divide;&szlig;&yuml;', '\u00a0|©®°½×÷ßÿ'],
    ['Caf&eacute; &Eacute;T&Eacute; cr&egrave;me br&ucirc;l&eacute;e', 'Café ÉTÉ crème brûlée'],
    // one pass: text encoded twice is decoded once
    ['&amp;ndash; &amp;amp;', '&ndash; &amp;'],
    // not references, or none emk knows: kept as written
    ['a & b, AT&T; &; &#; &#x; &unknown; &AMP; &Ndash;', 'a & b, AT&T; &; &#; &#x; &unknown; &AMP; &Ndash;'],
    ['&#0; &#xD800; &#1114112; &#x110000; &#12345678;', '&#0; &#xD800; &#1114112; &#x110000; &#12345678;'],
    ['no reference at all', 'no reference at all'],
  ])('%j → %j', (text, decoded) => {
    expect(decodeHtmlEntities(text)).toBe(decoded);
  });

  it('names-and-opt-ins/order-created.json: line item names are decoded, a variation\'s too', () => {
    expect(orderOf(fixture(`${EXTRA}order-created.json`), 'order.created').order.items).toEqual(ORDER_5101_ITEMS);
  });

  it('a decoded name is checked for length as the text it is', () => {
    const order = fixture(`${EXTRA}order-created.json`) as { line_items: Array<Record<string, unknown>> };
    // 2,000 characters once decoded (400 `&amp;` are 2,000 characters as sent, 400 decoded, with 1,600 more)
    const name = `${'&amp;'.repeat(400)}${'x'.repeat(1600)}`;
    const change = orderOf({ ...order, line_items: [{ ...order.line_items[0], name }] }, 'order.created');
    expect(change.order.items[0]!.title).toBe(`${'&'.repeat(400)}${'x'.repeat(1600)}`);
  });

  it('names-and-opt-ins/product-created.json: the product\'s name and its categories are decoded; its description is HTML, as sent', () => {
    const body = fixture(`${EXTRA}product-created.json`);
    const { product } = only(map('product.created', body), 'product_upsert');
    expect(product).toMatchObject({ external_id: '140', title: 'Tea & Biscuits Gift Box', categories: ['Food & Drink', 'Tea & Coffee'] });
    expect(product.description).toBe(body.description);
  });

  it('names-and-opt-ins/wc-product-export.csv: names, category paths and attribute values are decoded after the lists are split', async () => {
    const file = fileURLToPath(new URL(`${EXTRA}wc-product-export.csv`, FIXTURES));
    const records = [];
    for await (const record of wooCommerceProductsExport(() => readCsvRows(file), context)) records.push(record);
    expect(records).toMatchObject([
      { line: 2, record: { external_id: '140', title: 'Tea & Biscuits Gift Box', categories: ['Tea & Coffee', 'Gifts'] } },
      {
        line: 3,
        record: {
          external_id: '150',
          title: 'Baker’s Apron',
          categories: ['Kitchen & Dining'],
          variants: [
            { external_id: '151', title: 'Baker’s Apron - Navy', options: { Colour: 'Navy' } },
            { external_id: '152', title: 'Baker’s Apron - Sand & Stone', options: { Colour: 'Sand & Stone' } },
          ],
        },
      },
    ]);
  });

  it('a `&gt;` in a category name does not split its path', async () => {
    const row = { line: 2, cells: { ID: '9', Type: 'simple', Name: 'Sampler', Published: '1', Categories: 'Offers > Tea &lt;&gt; Coffee, Caf&eacute;' } };
    const records = [];
    for await (const record of wooCommerceProductsExport(async function* () { yield row; }, context)) records.push(record);
    expect(records).toMatchObject([{ line: 2, record: { categories: ['Tea <> Coffee', 'Café'] } }]);
  });
});

describe('WooCommerce consent from checkbox plugins', () => {
  const checkout = utc('2026-03-10T09:41:27');

  it('names-and-opt-ins/order-created.json: Mailchimp for WooCommerce\'s ticked box subscribes at the checkout time', () => {
    const change = orderOf(fixture(`${EXTRA}order-created.json`), 'order.created');
    expect(change.customer).toEqual({
      email: 'emma.weber@example.net',
      properties: { first_name: 'Emma', last_name: 'Weber', phone: '+49 30 7654321', woocommerce_customer_id: '57' },
      consent: { status: 'subscribed', at: checkout },
    });
  });

  it.each([
    ['mailchimp_woocommerce_is_subscribed', '1'],
    ['mailchimp_woocommerce_is_subscribed', true],
    ['mailchimp_woocommerce_is_subscribed', 1],
    ['marketing_opt_in_consent', 'checkout'],
    ['_wc_other/ckwc/opt-in', '1'],
    ['_wc_billing/ckwc/opt-in', 'true'],
    ['_emk_subscribed', 'yes'],
  ])('%s = %j on an order is an opt-in at date_created_gmt', (key, value) => {
    const change = orderOf(order5101With([{ key: 'is_vat_exempt', value: 'no' }, { key, value }]), 'order.created');
    expect(change.customer?.consent).toEqual({ status: 'subscribed', at: checkout });
  });

  it.each([
    ['mailchimp_woocommerce_is_subscribed', '0'],
    ['mailchimp_woocommerce_is_subscribed', ''],
    ['mailchimp_woocommerce_is_subscribed', false],
    ['mailchimp_woocommerce_is_subscribed', 'unsubscribed'],
    ['mailchimp_woocommerce_is_subscribed', 'transactional'],
    ['marketing_opt_in_consent', ''],
    // Kit and MailerLite write their meta on every order when the shop hides their box: no one was asked.
    ['ckwc_opt_in', 'yes'],
    ['_woo_ml_subscribe', '1'],
    // Klaviyo and MailPoet keep the box on their side; their form field names are no meta.
    ['kl_newsletter_checkbox', '1'],
    ['mailpoet_woocommerce_checkout_optin', '1'],
    // emk's own keys take "yes" only, as documented.
    ['emk_subscribed', '1'],
  ])('%s = %j is no opt-in, and no opt-out either: the consent is unknown', (key, value) => {
    const change = orderOf(order5101With([{ key, value }]), 'order.created');
    expect(change.customer?.consent).toEqual({ status: 'non_subscribed', at: null });
  });

  it('the first ticked box of several plugins is enough; an unticked one beside it takes nothing away', () => {
    const change = orderOf(order5101With([{ key: 'mailchimp_woocommerce_is_subscribed', value: '0' }, { key: 'marketing_opt_in_consent', value: 'checkout' }]), 'order.created');
    expect(change.customer?.consent).toEqual({ status: 'subscribed', at: checkout });
  });

  it('a later snapshot of the order keeps the checkout time, not its own', () => {
    const updated = { ...fixture(`${EXTRA}order-created.json`), status: 'completed', date_modified_gmt: '2026-03-12T08:00:00' };
    expect(orderOf(updated).customer?.consent).toEqual({ status: 'subscribed', at: checkout });
  });

  it('Mailchimp\'s account choice on a customer has no time: it only sets a new contact\'s status', () => {
    const customer = { ...fixture('customer-created.json'), meta_data: [{ id: 1, key: 'mailchimp_woocommerce_is_subscribed', value: '1' }] };
    expect(only(map('customer.updated', customer), 'customer').customer.consent).toEqual({ status: 'subscribed', at: null });
  });
});

const WOO_SECRET = 'whsec_woo_names_4b3c2d1e';
const WOO_SHOP = 'shop.example.com';

describeEachDatabase('WooCommerce names and opt-ins, end to end', (h) => {
  const { api, contact } = sendingHelpers(h);

  async function connected(ws: TestWorkspace) {
    const reply = await api(ws, 'POST', '/integrations', { platform: 'woocommerce', secret: WOO_SECRET, shop_domain: WOO_SHOP });
    expect(reply.statusCode, reply.body).toBe(201);
    return reply.json().id as string;
  }

  /** A body as WooCommerce posts it: signed, with its topic and a delivery id of its own. */
  async function deliver(integrationId: string, topic: string, body: object) {
    const reply = await postPlatformDelivery(h, { platform: 'woocommerce', integrationId, topic, body, secret: WOO_SECRET });
    expect(reply.json(), reply.body).toMatchObject({ status: 'processed', topic });
  }

  const contactOf = async (ws: TestWorkspace, email: string) => (await api(ws, 'GET', `/contacts?email=${encodeURIComponent(email)}`)).json().data[0];
  const consentOf = async (ws: TestWorkspace, id: string) =>
    (await api(ws, 'GET', `/contacts/${id}/consent`)).json().data.map((c: Record<string, unknown>) => [c.status, c.origin, c.at]);
  const orderOf = async (ws: TestWorkspace, externalId: string) => (await api(ws, 'GET', `/ecommerce/orders?external_id=${externalId}`)).json().data[0];

  it('a plugin\'s opt-in on an order subscribes a contact emk already knew, at the checkout, and the items keep their decoded names', async () => {
    const ws = await h().workspace();
    const id = await connected(ws);
    // The storefront identified Emma before she checked out (emk.js's setCustomer): a known contact, non_subscribed.
    const identified = await h().request({ method: 'POST', url: '/collect/identify', json: { site_id: ws.siteId, email: 'emma.weber@example.net', anonymous_id: 'anon-emma' } });
    expect(identified.statusCode, identified.body).toBe(200);
    const emma = identified.json().contact_id as string;
    expect(await contactOf(ws, 'emma.weber@example.net')).toMatchObject({ id: emma, subscription_status: 'non_subscribed' });

    await deliver(id, 'order.created', fixture(`${EXTRA}order-created.json`));
    expect(await contactOf(ws, 'emma.weber@example.net')).toMatchObject({ id: emma, subscription_status: 'subscribed' });
    expect((await consentOf(ws, emma)).at(-1)).toEqual(['subscribed', 'woocommerce', '2026-03-10T09:41:27.000Z']);
    expect((await orderOf(ws, '5101')).items.map((item: { title: string }) => item.title)).toEqual(ORDER_5101_ITEMS.map((item) => item.title));

    // She unsubscribes in emk afterwards; the order's later snapshots repeat the checkout's opt-in, which is older.
    expect((await api(ws, 'PATCH', `/contacts/${emma}`, { subscription_status: 'unsubscribed' })).statusCode).toBe(200);
    await deliver(id, 'order.updated', { ...fixture(`${EXTRA}order-created.json`), status: 'completed', date_modified_gmt: '2026-03-12T08:00:00' });
    expect(await orderOf(ws, '5101')).toMatchObject({ status: 'completed' });
    expect(await contactOf(ws, 'emma.weber@example.net')).toMatchObject({ subscription_status: 'unsubscribed' });
  });

  it('an unticked box is no opt-out: a subscribed contact stays subscribed, a new one is non_subscribed', async () => {
    const ws = await h().workspace();
    const id = await connected(ws);
    const emma = await contact(ws, 'subscribed', {}, 'emma.weber@example.net');
    const before = await consentOf(ws, emma);
    const unticked = order5101With([{ key: 'mailchimp_woocommerce_is_subscribed', value: '0' }]);
    await deliver(id, 'order.created', unticked);
    expect(await orderOf(ws, '5101')).toMatchObject({ contact_id: emma });
    expect(await contactOf(ws, 'emma.weber@example.net')).toMatchObject({ subscription_status: 'subscribed' });
    expect(await consentOf(ws, emma)).toEqual(before);

    await deliver(id, 'order.created', { ...unticked, id: 5102, number: '5102', billing: { ...(fixture(`${EXTRA}order-created.json`).billing as object), email: 'new.buyer@example.net' } });
    expect(await orderOf(ws, '5102')).toBeDefined();
    expect(await contactOf(ws, 'new.buyer@example.net')).toMatchObject({ subscription_status: 'non_subscribed' });
  });

  it('the gift box\'s name and categories reach the catalog decoded', async () => {
    const ws = await h().workspace();
    const id = await connected(ws);
    await deliver(id, 'product.created', fixture(`${EXTRA}product-created.json`));
    const product = (await api(ws, 'GET', '/ecommerce/products?external_id=140')).json().data[0];
    expect(product).toMatchObject({ title: 'Tea & Biscuits Gift Box', categories: ['Food & Drink', 'Tea & Coffee'] });
  });
});
