import { asObject, fieldReader, type FieldReader, type Payload } from '../platform-webhooks/payload-fields.js';
import type { MappedDelivery, MappingContext, PlatformCustomer, StoreChange } from '../platform-webhooks/store-change.js';
import { shopifyCustomer, shopifyEmailConsent } from './shopify-customers.js';
import { shopifyCart, shopifyOrder, shopifyRefund, shopifyShipment } from './shopify-orders.js';
import { shopifyProduct, shopifyProductDelete } from './shopify-products.js';

/** How one topic's body becomes (at most) one store change; what it could not use is in the reader's warnings. */
type TopicMapper = (body: Payload, read: FieldReader, context: MappingContext) => StoreChange | null;

const asCustomerChange = (customer: PlatformCustomer | null): StoreChange | null => (customer === null ? null : { kind: 'customer', customer });

function customerChange(body: Payload, read: FieldReader): StoreChange | null {
  const customer = shopifyCustomer(body, read);
  if (customer === null) read.warn('email is missing: a customer without an email is no contact');
  return asCustomerChange(customer);
}

/** The mandatory privacy topics name the customer as `{id, email, phone}`. */
function privacyEmail(body: Payload, read: FieldReader): string | null {
  const email = read.email(asObject(body.customer)?.email, ['customer', 'email']);
  if (email === null) read.warn('customer.email is missing: emk knows contacts by email only, so none is concerned');
  return email;
}

function customerRedact(body: Payload, read: FieldReader): StoreChange | null {
  const email = privacyEmail(body, read);
  return email === null ? null : { kind: 'customer_redact', email };
}

function dataRequest(body: Payload, read: FieldReader): StoreChange | null {
  const email = privacyEmail(body, read);
  const requestId = read.id(asObject(body.data_request)?.id, ['data_request', 'id']);
  return email === null ? null : { kind: 'data_request', email, requestId };
}

/** Every `orders/*` topic carries the whole order, so they all read alike. */
const ORDER_TOPICS = ['orders/create', 'orders/updated', 'orders/paid', 'orders/cancelled', 'orders/fulfilled'];

const TOPICS = new Map<string, TopicMapper>([
  ...ORDER_TOPICS.map((topic): [string, TopicMapper] => [topic, shopifyOrder]),
  ['refunds/create', shopifyRefund],
  ['fulfillments/create', shopifyShipment],
  ['fulfillments/update', shopifyShipment],
  ['checkouts/create', shopifyCart],
  ['checkouts/update', shopifyCart],
  ['customers/create', customerChange],
  ['customers/update', customerChange],
  // Consent alone (API 2025-01 on): applied as a customer whose record carries only the consent and Shopify's id.
  ['customers_email_marketing_consent/update', (body, read) => asCustomerChange(shopifyEmailConsent(body, read))],
  ['products/create', shopifyProduct],
  ['products/update', shopifyProduct],
  ['products/delete', shopifyProductDelete],
  ['customers/redact', customerRedact],
  ['customers/data_request', dataRequest],
  ['shop/redact', () => ({ kind: 'shop_redact' })],
]);

/**
 * A Shopify webhook (`X-Shopify-Topic` and its JSON body) in emk's terms (docs/platforms/shopify.md). Pure:
 * it never throws over the body's shape; a topic emk does not use is `ignored`.
 */
export function mapShopifyDelivery(topic: string, body: unknown, context: MappingContext): MappedDelivery {
  const mapper = TOPICS.get(topic.trim().toLowerCase());
  if (mapper === undefined) return { status: 'ignored' };
  const payload = asObject(body);
  if (payload === null) return { status: 'mapped', changes: [], warnings: ['body must be a JSON object (nothing was read)'] };
  const read = fieldReader();
  const change = mapper(payload, read, context);
  return { status: 'mapped', changes: change === null ? [] : [change], warnings: read.warnings };
}
