import type { SubscriptionStatus } from '../contacts/contact.schema.js';
import { identityTokenOf } from '../identity-tokens/identity-token.schema.js';
import { asArray, asObject, type FieldReader, type Payload } from '../platform-webhooks/payload-fields.js';
import type { PlatformConsent, PlatformCustomer } from '../platform-webhooks/store-change.js';
import type { FieldPath } from '../shared/storable.js';

/**
 * Shopify's `email_marketing_consent.state` → emk's status. A `pending` double opt-in is not consent yet;
 * `redacted` and `invalid` addresses receive no marketing.
 */
const CONSENT_STATES = new Map<string, SubscriptionStatus>([
  ['subscribed', 'subscribed'],
  ['unsubscribed', 'unsubscribed'],
  ['not_subscribed', 'non_subscribed'],
  ['pending', 'non_subscribed'],
  ['redacted', 'non_subscribed'],
  ['invalid', 'non_subscribed'],
]);

/**
 * A Shopify customer's email-marketing consent: `email_marketing_consent` (in customer payloads from API 2022-04 to
 * 2024-10, and in the consent topic's body), else the older `accepts_marketing` (false reads as never subscribed:
 * the field cannot tell an opt-out from no opt-in).
 * The time is the platform's own (`consent_updated_at`, `accepts_marketing_updated_at`), null when not sent.
 */
export function customerConsent(customer: Payload, at: FieldPath, read: FieldReader): PlatformConsent | null {
  const consent = asObject(customer.email_marketing_consent);
  if (consent) {
    const status = typeof consent.state === 'string' ? CONSENT_STATES.get(consent.state.toLowerCase()) : undefined;
    if (status) return { status, at: read.time(consent.consent_updated_at, [...at, 'email_marketing_consent', 'consent_updated_at']) };
    read.skip([...at, 'email_marketing_consent', 'state'], `must be one of ${[...CONSENT_STATES.keys()].join(', ')}`);
  }
  if (typeof customer.accepts_marketing !== 'boolean') return null;
  return {
    status: customer.accepts_marketing ? 'subscribed' : 'non_subscribed',
    at: read.time(customer.accepts_marketing_updated_at, [...at, 'accepts_marketing_updated_at']),
  };
}

/** The contact properties a Shopify customer (or an order's buyer) gives: names, phone and Shopify's id. */
function customerProperties(customer: Payload, at: FieldPath, read: FieldReader, fallback: Payload = {}): Record<string, unknown> {
  const properties: Record<string, unknown> = {};
  const set = (key: string, value: string | null) => {
    if (value !== null) properties[key] = value;
  };
  set('first_name', read.text(customer.first_name, [...at, 'first_name'], 255) ?? read.text(fallback.first_name, ['billing_address', 'first_name'], 255));
  set('last_name', read.text(customer.last_name, [...at, 'last_name'], 255) ?? read.text(fallback.last_name, ['billing_address', 'last_name'], 255));
  set('phone', read.text(customer.phone, [...at, 'phone'], 64) ?? read.text(fallback.phone, ['phone'], 64));
  set('shopify_customer_id', read.id(customer.id, [...at, 'id']));
  return properties;
}

/** A `customers/create|update` body: null when it has no usable email (emk's contacts are email addresses). */
export function shopifyCustomer(customer: Payload, read: FieldReader): PlatformCustomer | null {
  const email = read.email(customer.email, ['email']);
  if (email === null) return null;
  return { email, properties: customerProperties(customer, [], read), consent: customerConsent(customer, [], read) };
}

/**
 * The checkout's "Email me with news and offers" box (`buyer_accepts_marketing`). Ticked, the buyer subscribed
 * when the order was placed: `processed_at`, else `created_at` (a checkout has only the latter), a time that never
 * moves, so a later snapshot of the same order never outweighs a later decision. Unticked or absent it says
 * nothing: leaving the box empty at one checkout is no unsubscribe.
 */
function checkboxConsent(body: Payload, read: FieldReader): PlatformConsent | null {
  if (body.buyer_accepts_marketing !== true) return null;
  const at = read.time(body.processed_at, ['processed_at']) ?? read.time(body.created_at, ['created_at']);
  return { status: 'subscribed', at };
}

/**
 * The buyer of an order or a checkout: its `email`, else its customer's. Consent is the customer record's when it
 * has a time (API versions before 2025-01 send it in the order), else the checkout box's, else the record's
 * without a time.
 */
export function shopifyBuyer(body: Payload, read: FieldReader): PlatformCustomer | null {
  const customer = asObject(body.customer) ?? {};
  const email = read.email(body.email, ['email']) ?? read.email(customer.email, ['customer', 'email']);
  if (email === null) return null;
  const fallback = { ...(asObject(body.billing_address) ?? {}), phone: body.phone };
  const record = customerConsent(customer, ['customer'], read);
  return {
    email,
    properties: customerProperties(customer, ['customer'], read, fallback),
    consent: record?.at != null ? record : (checkboxConsent(body, read) ?? record),
  };
}

/**
 * A `customers_email_marketing_consent/update` body (from API 2025-01 on the only place Shopify sends the consent):
 * `email_address`, `customer_id` and `email_marketing_consent` as in a customer. Null, with a warning, when it names
 * no email (emk finds contacts by email, not by `shopify_customer_id`) or no consent it can read.
 */
export function shopifyEmailConsent(body: Payload, read: FieldReader): PlatformCustomer | null {
  const email = read.email(body.email_address, ['email_address']);
  const customerId = read.id(body.customer_id, ['customer_id']);
  const consent = customerConsent(body, [], read);
  if (email === null) {
    const whose = customerId === null ? 'the customer' : `customer ${customerId}`;
    read.warn(`email_address is missing: emk finds contacts by email, so the consent of ${whose} was not applied`);
    return null;
  }
  if (consent === null) {
    read.warn('the consent was not applied: it needs email_marketing_consent.state');
    return null;
  }
  return { email, properties: customerId === null ? {} : { shopify_customer_id: customerId }, consent };
}

/**
 * The emk identity token a storefront left on the cart: a note attribute (cart attribute) `_ir_id` or `_emk`.
 * Shopify sends `note_attributes` as a list of `{name, value}`; a name → value object is read too.
 */
export function shopifyIdentityToken(body: Payload): string | null {
  const attributes: Payload = { ...asObject(body.note_attributes) };
  for (const entry of asArray(body.note_attributes)) {
    const attribute = asObject(entry);
    if (attribute && typeof attribute.name === 'string') attributes[attribute.name] = attribute.value;
  }
  return identityTokenOf(attributes);
}
