import { identityTokenOf } from '../identity-tokens/identity-token.schema.js';
import type { OrderItem } from '../orders/order.schema.js';
import { asArray, asObject, fieldReader, isAbsent, type FieldReader, type Payload } from '../platform-webhooks/payload-fields.js';
import type {
  MappedDelivery,
  MappingContext,
  PlatformBuyer,
  PlatformConsent,
  PlatformCustomer,
  PlatformOrder,
  PlatformRefund,
  StoreChange,
} from '../platform-webhooks/store-change.js';
import { productSchema } from '../products/product.schema.js';
import { decodeHtmlEntities } from '../shared/html-entities.js';
import { quantitySchema } from '../shared/numbers.js';
import type { FieldPath } from '../shared/storable.js';
import { fieldName } from '../shared/validate.js';

/**
 * WooCommerce webhooks: the body of every topic but `*.deleted` is the REST API v3 resource
 * (`/wc/v3/orders/{id}`, `/customers/{id}`, `/products/{id}`); a `*.deleted` body is only `{"id"}`.
 * Times ending in `_gmt` are UTC written without a zone. docs/platforms/woocommerce.md has the tables.
 */

type TopicMapper = (body: Payload, read: FieldReader) => StoreChange[];

const TOPICS = new Map<string, TopicMapper>([
  ['order.created', mapOrder],
  ['order.updated', mapOrder],
  // An order taken out of the trash: its snapshot (a cancellation emk recorded stays: cancelled is sticky).
  ['order.restored', mapOrder],
  ['order.deleted', mapOrderDeleted],
  ['customer.created', mapCustomer],
  ['customer.updated', mapCustomer],
  // Deleting a store account is not an erasure request: the contact and its history stay.
  ['customer.deleted', () => []],
  ['product.created', mapProduct],
  ['product.updated', mapProduct],
  ['product.deleted', mapProductDeleted],
]);

/**
 * A WooCommerce webhook (`X-WC-Webhook-Topic` and its JSON body) in emk's terms (docs/platforms/woocommerce.md).
 * The context goes unused: WooCommerce sends each product's own `permalink`.
 */
export function mapWooCommerceDelivery(topic: string, body: unknown, _context: MappingContext): MappedDelivery {
  const mapTopic = TOPICS.get(topic);
  if (!mapTopic) return { status: 'ignored' };
  const payload = asObject(body);
  if (!payload) return { status: 'mapped', changes: [], warnings: ['body must be a JSON object'] };
  const read = fieldReader();
  const changes = mapTopic(payload, read);
  return { status: 'mapped', changes, warnings: read.warnings };
}

/** What an order status means to emk. */
type StatusMeaning = 'placed' | 'not_placed' | 'cancelled' | 'refunded';

/** WooCommerce's core statuses (the REST API drops the `wc-` prefix of the stored ones). */
const STATUS_MEANINGS = new Map<string, StatusMeaning>([
  ['processing', 'placed'],
  ['on-hold', 'placed'],
  ['completed', 'placed'],
  ['pending', 'not_placed'],
  ['failed', 'not_placed'],
  ['checkout-draft', 'not_placed'],
  ['cancelled', 'cancelled'],
  ['trash', 'cancelled'],
  ['refunded', 'refunded'],
]);

/** A status a plugin added (`shipped`, `awaiting-pickup`, …) counts as placed once the order is paid. */
function statusMeaning(status: string, paid: boolean): StatusMeaning {
  return STATUS_MEANINGS.get(status.toLowerCase().replace(/^wc-/, '')) ?? (paid ? 'placed' : 'not_placed');
}

/** The refund a `refunded` status stands for when the order lists none (a status set by hand). */
const STATUS_REFUND_ID = 'status:refunded';

/** True when every field the record needs is usable; else says what it lacked, after the warnings about its fields. */
function usable<T extends Record<string, unknown>>(read: FieldReader, what: string, needs: T): needs is { [K in keyof T]: NonNullable<T[K]> } {
  const missing = Object.keys(needs).filter((field) => needs[field] === null);
  if (missing.length > 0) read.warn(`${what} was not applied: it needs ${missing.join(', ')}`);
  return missing.length === 0;
}

/** The entries that have a value. */
const present = (record: Record<string, unknown>) => Object.fromEntries(Object.entries(record).filter(([, value]) => value !== null));

function mapOrder(body: Payload, read: FieldReader): StoreChange[] {
  const needs = {
    id: read.id(body.id, ['id']),
    total: read.money(body.total, ['total']),
    currency: currencyOf(body.currency, read),
    status: read.text(body.status, ['status'], 255),
    date_created_gmt: read.time(body.date_created_gmt, ['date_created_gmt']),
  };
  if (!usable(read, 'the order', needs)) return [];
  const meta = metaOf(body.meta_data);
  // WooPayments marks the orders paid in its test mode (WooCommerce's own analytics leave them out): no sale.
  if (meta.get('_wcpay_mode') === 'test') {
    read.warn('a test order (meta _wcpay_mode: test): not stored, nor its buyer');
    return [{ kind: 'test_order', orderExternalId: needs.id }];
  }

  const meaning = statusMeaning(needs.status, read.time(body.date_paid_gmt, ['date_paid_gmt']) !== null);
  const updatedAt = read.time(body.date_modified_gmt, ['date_modified_gmt']);
  // Order payloads give no refund or cancellation time: the snapshot's own time (the change that showed it) is the
  // closest the platform says.
  const money = storeMoney(meta, needs.currency, needs.total, read);
  // Refunds are in the currency paid: converted at the order's rate when that is not the store's.
  const refunds = refundsOf(body.refunds, updatedAt, money.presentment?.currency ?? null, read);
  if (meaning === 'refunded' && refunds.length === 0) refunds.push({ id: STATUS_REFUND_ID, amount: money.totalAmount, currency: null, at: updatedAt });
  const order: PlatformOrder = {
    externalId: needs.id,
    orderNumber: read.id(body.number, ['number']),
    ...money,
    status: needs.status,
    orderedAt: needs.date_created_gmt,
    items: itemsOf(body.line_items, read),
    cancelled: meaning === 'cancelled',
    cancelledAt: meaning === 'cancelled' ? updatedAt : null,
    refunds,
    updatedAt,
  };
  // The consent box is ticked at checkout: a later change of the order (a refund) is no new consent.
  const customer = orderCustomer(body, meta, needs.date_created_gmt, read);
  return [
    {
      kind: 'order',
      customer,
      identityToken: identityTokenOf({ _ir_id: meta.get('_ir_id'), _emk: meta.get('_emk') }),
      order,
      placed: meaning !== 'not_placed',
      ...(customer === null ? { buyer: buyerWithoutEmail(body, read) } : {}),
    },
  ];
}

/**
 * The buyer of an order without a billing email (a phone order, a cash-on-delivery order entered in the admin):
 * its account's id (0 is a guest) and billing phone (docs/platforms/README.md, Orders without an email).
 */
function buyerWithoutEmail(body: Payload, read: FieldReader): PlatformBuyer {
  return {
    customerId: body.customer_id === 0 ? null : read.id(body.customer_id, ['customer_id']),
    phone: read.text(asObject(body.billing)?.phone, ['billing', 'phone'], 255),
  };
}

function mapOrderDeleted(body: Payload, read: FieldReader): StoreChange[] {
  const needs = { id: read.id(body.id, ['id']) };
  return usable(read, 'the deletion', needs) ? [{ kind: 'order_cancelled', orderExternalId: needs.id }] : [];
}

function mapProductDeleted(body: Payload, read: FieldReader): StoreChange[] {
  const needs = { id: read.id(body.id, ['id']) };
  return usable(read, 'the deletion', needs) ? [{ kind: 'product_delete', externalId: needs.id }] : [];
}

function mapCustomer(body: Payload, read: FieldReader): StoreChange[] {
  const billing = asObject(body.billing) ?? {};
  // The account's email; a customer without one (rare: created by hand) is known by the billing email.
  const needs = { email: read.email(body.email, ['email']) ?? read.email(billing.email, ['billing', 'email']) };
  if (!usable(read, 'the customer', needs)) return [];
  const properties = present({
    first_name: read.text(body.first_name, ['first_name'], 255) ?? read.text(billing.first_name, ['billing', 'first_name'], 255),
    last_name: read.text(body.last_name, ['last_name'], 255) ?? read.text(billing.last_name, ['billing', 'last_name'], 255),
    phone: read.text(billing.phone, ['billing', 'phone'], 255),
    woocommerce_customer_id: read.id(body.id, ['id']),
  });
  // The account's last change is no consent time (every checkout touches it): only a stated time can change a
  // stored contact's status, so an unsubscribe made in emk is never undone by an unrelated account change.
  const meta = metaOf(body.meta_data);
  const consent = consentOf(meta, read.time(meta.get('emk_subscribed_at') ?? meta.get('_emk_subscribed_at'), ['meta_data', 'emk_subscribed_at']));
  return [{ kind: 'customer', customer: { email: needs.email, properties, consent } }];
}

/** The order's buyer: the billing email (a guest's too); null without one (the order then needs its identity token). */
function orderCustomer(body: Payload, meta: Map<string, unknown>, consentAt: number, read: FieldReader): PlatformCustomer | null {
  const billing = asObject(body.billing) ?? {};
  const email = read.email(billing.email, ['billing', 'email']);
  if (email === null) {
    read.warn('the order has no usable billing.email: it goes to the contact of its identity token, customer id or phone, else is kept without a contact');
    return null;
  }
  const properties = present({
    first_name: read.text(billing.first_name, ['billing', 'first_name'], 255),
    last_name: read.text(billing.last_name, ['billing', 'last_name'], 255),
    phone: read.text(billing.phone, ['billing', 'phone'], 255),
    // 0 is WooCommerce's guest.
    woocommerce_customer_id: body.customer_id === 0 ? null : read.id(body.customer_id, ['customer_id']),
  });
  return { email, properties, consent: consentOf(meta, consentAt) };
}

/** The values a checkbox plugin stores for a ticked box (`true` is stored, and served, as "1"). */
const TICKED = new Set(['1', 'true', 'yes']);

/**
 * The opt-ins a shopper gave through a checkbox, as plugins keep them in `meta_data`, and the values that mean
 * ticked (docs/platforms/woocommerce.md#consent-from-plugins). Only a box the shopper saw: Kit's `ckwc_opt_in` and
 * MailerLite's `_woo_ml_subscribe` are not here (both are set on every order when the shop hides the box), nor
 * are Klaviyo and MailPoet, which keep the opt-in on their own side and write none on the order.
 */
const OPT_IN_META = new Map<string, ReadonlySet<string>>([
  // emk's own keys, for a shop's own checkbox.
  ['emk_subscribed', new Set(['yes'])],
  ['_emk_subscribed', new Set(['yes'])],
  // Mailchimp for WooCommerce: the checkout box (classic and block checkout) on the order, the account's choice on the customer.
  ['mailchimp_woocommerce_is_subscribed', TICKED],
  // Omnisend: "checkout" when its checkout box was ticked.
  ['marketing_opt_in_consent', new Set(['checkout'])],
  // Kit's box as a block checkout field (`ckwc/opt-in`), which WooCommerce stores under its group's prefix.
  ['_wc_other/ckwc/opt-in', TICKED],
  ['_wc_billing/ckwc/opt-in', TICKED],
]);

/** A meta value as the text its plugin compares: trimmed, lower case; `true` and numbers as stored ("1"). */
const metaText = (value: unknown) =>
  value === true ? '1' : typeof value === 'number' ? String(value) : typeof value === 'string' ? value.trim().toLowerCase() : null;

/**
 * WooCommerce core keeps no marketing consent; checkbox plugins keep it in `meta_data` (OPT_IN_META). An opt-in
 * is recorded at the time given (`emk_subscribed_at` on a customer, the checkout on an order; a customer without
 * one only sets a new contact's status). No opt-in is no opt-out: an unticked or absent box leaves a stored
 * contact as it is and creates a new one as non_subscribed.
 */
function consentOf(meta: Map<string, unknown>, modifiedAt: number | null): PlatformConsent {
  const subscribed = [...OPT_IN_META].some(([key, ticked]) => ticked.has(metaText(meta.get(key)) ?? ''));
  return subscribed ? { status: 'subscribed', at: modifiedAt } : { status: 'non_subscribed', at: null };
}

/** `meta_data` (`[{id, key, value}]`) by key; the first entry of a key wins, as WooCommerce's `get_meta` does. */
function metaOf(value: unknown): Map<string, unknown> {
  const meta = new Map<string, unknown>();
  for (const entry of asArray(value)) {
    const item = asObject(entry);
    if (item && typeof item.key === 'string' && !meta.has(item.key)) meta.set(item.key, item.value);
  }
  return meta;
}

function currencyOf(value: unknown, read: FieldReader): string | null {
  const code = read.text(value, ['currency'], 255);
  if (code === null) return null;
  if (/^[A-Za-z]{3}$/.test(code)) return code.toUpperCase();
  read.skip(['currency'], 'must be a three-letter ISO 4217 code');
  return null;
}

/**
 * The order's money in the store's currency. WooCommerce core has one store currency, and orders are in it. With
 * WooPayments' multi-currency an order keeps what the buyer paid in (`currency`, `total`) and records the store's
 * currency and the rate (units of the order's currency per unit of the store's) in its meta
 * (`_wcpay_multi_currency_order_default_currency`, `_wcpay_multi_currency_order_exchange_rate`): the total is
 * converted at that rate and what was paid is kept as the presentment.
 */
function storeMoney(meta: Map<string, unknown>, currency: string, total: number, read: FieldReader): Pick<PlatformOrder, 'totalAmount' | 'currency' | 'shopCurrency' | 'presentment'> {
  const plain = { totalAmount: total, currency, shopCurrency: currency, presentment: null };
  const storeCurrency = meta.get(WCPAY_STORE_CURRENCY);
  if (typeof storeCurrency !== 'string' || !/^[A-Za-z]{3}$/.test(storeCurrency.trim())) return plain;
  const shopCurrency = storeCurrency.trim().toUpperCase();
  if (shopCurrency === currency) return plain;
  const rate = Number(meta.get(WCPAY_EXCHANGE_RATE));
  const converted = Number.isFinite(rate) && rate > 0 ? read.money(total / rate, ['meta_data', WCPAY_EXCHANGE_RATE]) : null;
  if (converted === null) {
    read.warn(`meta_data ${WCPAY_EXCHANGE_RATE} must be a positive rate: the order is kept in ${currency}, as paid`);
    return { ...plain, shopCurrency };
  }
  return { totalAmount: converted, currency: shopCurrency, shopCurrency, presentment: { currency, totalAmount: total } };
}

const WCPAY_STORE_CURRENCY = '_wcpay_multi_currency_order_default_currency';
const WCPAY_EXCHANGE_RATE = '_wcpay_multi_currency_order_exchange_rate';

/**
 * `refunds[]` are `{id, reason, total: "-5.00"}` in `currency` (null: the order's): the amount is the total's
 * absolute value. They carry no time:
 * each is dated `listedAt`, the time of the snapshot that lists it (the first one seen is kept).
 */
function refundsOf(value: unknown, listedAt: number | null, currency: string | null, read: FieldReader): PlatformRefund[] {
  return read.objects(value, ['refunds']).flatMap(([refund, at]): PlatformRefund[] => {
    const id = read.id(refund.id, [...at, 'id']);
    const amount = read.money(withoutMinus(refund.total), [...at, 'total']);
    if (id !== null && amount !== null) return [{ id, amount, currency, at: listedAt }];
    read.warn(`${fieldName(at)} was not applied: it needs id and total`);
    return [];
  });
}

const withoutMinus = (value: unknown) =>
  typeof value === 'number' ? Math.abs(value) : typeof value === 'string' ? value.trim().replace(/^-/, '') : value;

/**
 * WooCommerce serves names HTML-encoded, as WordPress stores and texturizes them (`Tea &amp; Cake`,
 * `Hoodie &ndash; Blue`, `Hoodie &#8211; Blue`): products', line items' (a variation's too) and categories'. emk
 * keeps the text a shopper sees.
 */
const decodedName = (value: unknown) => (typeof value === 'string' ? decodeHtmlEntities(value) : value);

/** Line items name their PRODUCT (`product_id`; a variation's parent), which joins the catalog; 0 = a deleted product. */
function itemsOf(value: unknown, read: FieldReader): OrderItem[] {
  return read.objects(value, ['line_items']).flatMap(([item, at]): OrderItem[] => {
    const quantity = read.check(quantitySchema, item.quantity ?? 1, [...at, 'quantity'], 'item ignored');
    if (quantity === null) return [];
    const productId = item.product_id === 0 || item.product_id === '0' ? null : read.id(item.product_id, [...at, 'product_id']);
    return [{ external_id: productId, title: read.text(decodedName(item.name), [...at, 'name'], 2000), quantity, price: read.money(item.price, [...at, 'price']) }];
  });
}

type ProductField = keyof typeof productSchema.shape;

/** Stock statuses: a product on backorder can be bought but is not in stock. */
const IN_STOCK = new Map([
  ['instock', true],
  ['outofstock', false],
  ['onbackorder', false],
]);

/**
 * A product in the catalog's field names, each field checked with the catalog's own schema: a field that
 * cannot be used is left out (with a warning naming WooCommerce's field) rather than refusing the product.
 */
function mapProduct(body: Payload, read: FieldReader): StoreChange[] {
  const needs = { id: read.id(body.id, ['id']) };
  if (!usable(read, 'the product', needs)) return [];
  // A variation's own delivery (`/products/{variation id}`): its parent's delivery carries the product.
  if (body.type === 'variation') {
    read.warn('a variation is not a catalog product: its parent product is (ignored)');
    return [];
  }
  // Drafts, pending review, private and scheduled products are not for sale: not shown in mail.
  const status = read.text(body.status, ['status'], 255);
  if (status !== null && status !== 'publish') return [{ kind: 'product_delete', externalId: needs.id }];

  const onSale = body.on_sale === true;
  const manageStock = body.manage_stock === true;
  const sku = read.text(body.sku, ['sku'], 255);
  const fields: Array<[ProductField, unknown, FieldPath]> = [
    ['external_id', needs.id, ['id']],
    ['title', decodedName(body.name), ['name']],
    ['url', body.permalink, ['permalink']],
    ['image_url', asObject(asArray(body.images)[0])?.src, ['images', 0, 'src']],
    ['description', body.description, ['description']],
    // A variable product's own price is its variations' lowest.
    ['price', body.price, ['price']],
    ['compare_at_price', onSale ? body.regular_price : null, ['regular_price']],
    ['in_stock', typeof body.stock_status === 'string' ? IN_STOCK.get(body.stock_status) : null, ['stock_status']],
    // Without stock management WooCommerce counts nothing: the quantity is unknown.
    ['stock_qty', manageStock ? body.stock_quantity : null, ['stock_quantity']],
    ['categories', categoryNames(body.categories), ['categories']],
    ['product_type', body.type, ['type']],
    ['weight', body.weight, ['weight']],
    ['metadata', sku === null ? null : { sku }, ['sku']],
  ];
  const product: Record<string, unknown> = {};
  for (const [field, value, at] of fields) {
    const checked = isAbsent(value) ? null : read.check(productSchema.shape[field], value, at);
    if (checked !== null && checked !== undefined) product[field] = checked;
  }
  return usable(read, 'the product', { name: product.title ?? null }) ? [{ kind: 'product_upsert', product }] : [];
}

/** `categories[]` are `{id, name, slug}`; an entry without a name becomes blank, which the catalog drops. */
function categoryNames(value: unknown): unknown[] {
  return asArray(value).map((category) => decodedName(asObject(category)?.name) ?? '');
}
