import { identityTokenOf } from '../identity-tokens/identity-token.schema.js';
import type { OrderItem } from '../orders/order.schema.js';
import { asArray, asObject, fieldReader, isAbsent, type FieldReader, type Payload } from '../platform-webhooks/payload-fields.js';
import type {
  MappedDelivery,
  MappingContext,
  PlatformConsent,
  PlatformCustomer,
  PlatformOrder,
  PlatformRefund,
  StoreChange,
} from '../platform-webhooks/store-change.js';
import { productSchema } from '../products/product.schema.js';
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

  const meaning = statusMeaning(needs.status, read.time(body.date_paid_gmt, ['date_paid_gmt']) !== null);
  const updatedAt = read.time(body.date_modified_gmt, ['date_modified_gmt']);
  const refunds = refundsOf(body.refunds, read);
  if (meaning === 'refunded' && refunds.length === 0) refunds.push({ id: STATUS_REFUND_ID, amount: needs.total });
  const meta = metaOf(body.meta_data);
  const order: PlatformOrder = {
    externalId: needs.id,
    orderNumber: read.id(body.number, ['number']),
    totalAmount: needs.total,
    currency: needs.currency,
    status: needs.status,
    orderedAt: needs.date_created_gmt,
    items: itemsOf(body.line_items, read),
    cancelled: meaning === 'cancelled',
    refunds,
    updatedAt,
  };
  return [
    {
      kind: 'order',
      // The consent box is ticked at checkout: a later change of the order (a refund) is no new consent.
      customer: orderCustomer(body, meta, needs.date_created_gmt, read),
      identityToken: identityTokenOf({ _ir_id: meta.get('_ir_id'), _emk: meta.get('_emk') }),
      order,
      placed: meaning !== 'not_placed',
    },
  ];
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
  const consent = consentOf(metaOf(body.meta_data), read.time(body.date_modified_gmt, ['date_modified_gmt']));
  return [{ kind: 'customer', customer: { email: needs.email, properties, consent } }];
}

/** The order's buyer: the billing email (a guest's too); null without one (the order then needs its identity token). */
function orderCustomer(body: Payload, meta: Map<string, unknown>, consentAt: number, read: FieldReader): PlatformCustomer | null {
  const billing = asObject(body.billing) ?? {};
  const email = read.email(billing.email, ['billing', 'email']);
  if (email === null) {
    read.warn('the order has no usable billing.email: it is tied to a contact by its identity token or its stored order only');
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

/**
 * WooCommerce core keeps no marketing consent. A shop that collects it (a checkout checkbox plugin) sets the
 * meta `emk_subscribed` (or `_emk_subscribed`) to "yes", recorded at the record's last change; anything else
 * leaves a stored contact as it is and creates a new one as non_subscribed.
 */
function consentOf(meta: Map<string, unknown>, modifiedAt: number | null): PlatformConsent {
  const subscribed = ['emk_subscribed', '_emk_subscribed'].some((key) => {
    const value = meta.get(key);
    return typeof value === 'string' && value.trim().toLowerCase() === 'yes';
  });
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

/** `refunds[]` are `{id, reason, total: "-5.00"}`: the amount is the total's absolute value. */
function refundsOf(value: unknown, read: FieldReader): PlatformRefund[] {
  return read.objects(value, ['refunds']).flatMap(([refund, at]): PlatformRefund[] => {
    const id = read.id(refund.id, [...at, 'id']);
    const amount = read.money(withoutMinus(refund.total), [...at, 'total']);
    if (id !== null && amount !== null) return [{ id, amount }];
    read.warn(`${fieldName(at)} was not applied: it needs id and total`);
    return [];
  });
}

const withoutMinus = (value: unknown) =>
  typeof value === 'number' ? Math.abs(value) : typeof value === 'string' ? value.trim().replace(/^-/, '') : value;

/** Line items name their PRODUCT (`product_id`; a variation's parent), which joins the catalog; 0 = a deleted product. */
function itemsOf(value: unknown, read: FieldReader): OrderItem[] {
  return read.objects(value, ['line_items']).flatMap(([item, at]): OrderItem[] => {
    const quantity = read.check(quantitySchema, item.quantity ?? 1, [...at, 'quantity'], 'item ignored');
    if (quantity === null) return [];
    const productId = item.product_id === 0 || item.product_id === '0' ? null : read.id(item.product_id, [...at, 'product_id']);
    return [{ external_id: productId, title: read.text(item.name, [...at, 'name'], 2000), quantity, price: read.money(item.price, [...at, 'price']) }];
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
    ['title', body.name, ['name']],
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
  return asArray(value).map((category) => asObject(category)?.name ?? '');
}
