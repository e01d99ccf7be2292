import { compositeKey } from '../shared/keys.js';

/**
 * What names a contact besides its email (docs/platforms/README.md, Orders without an email): a shop platform's
 * customer id, kept in the properties the platform mappers set (`shopify_customer_id`, `woocommerce_customer_id`),
 * and a phone number (`phone`). An order whose buyer gave no email finds its contact by them.
 */

/** The platforms whose customer ids name contacts, and the contact property each keeps its id in. */
export const CUSTOMER_ID_PROPERTIES = {
  shopify: 'shopify_customer_id',
  woocommerce: 'woocommerce_customer_id',
} as const;

export type CustomerPlatform = keyof typeof CUSTOMER_ID_PROPERTIES;
export type IdentityKind = CustomerPlatform | 'phone';

export interface Identity {
  kind: IdentityKind;
  value: string;
}

const MAX_VALUE = 255;

/** `CustomerPlatform` of a platform's name, or null (only Shopify and WooCommerce customers name contacts). */
export const customerPlatformOf = (platform: string): CustomerPlatform | null => (Object.hasOwn(CUSTOMER_ID_PROPERTIES, platform) ? (platform as CustomerPlatform) : null);

/**
 * A phone number as it is compared: its digits, with `+` when written internationally (`+` or `00`), 7 to 15
 * digits (E.164's most). `+49 30 1234567` and `0049-30-1234567` are one number; a national form (`030 1234567`)
 * is another, so a match is never a guess. Null for anything else.
 */
export function phoneKey(value: unknown): string | null {
  if (typeof value !== 'string' && typeof value !== 'number') return null;
  const text = String(value).trim();
  const international = /^(\+|00)/.test(text);
  let digits = text.replace(/\D/g, '');
  if (text.startsWith('00')) digits = digits.slice(2);
  if (digits.length < 7 || digits.length > 15) return null;
  return international ? `+${digits}` : digits;
}

/** A platform's customer id as text (ids arrive as numbers or text); null when absent or unusable. */
function customerId(value: unknown): string | null {
  const text = typeof value === 'number' && Number.isInteger(value) ? String(value) : typeof value === 'string' ? value.trim() : '';
  return text !== '' && text.length <= MAX_VALUE ? text : null;
}

/** The identities a contact's properties give it, customer ids first. */
export function identitiesOf(properties: Record<string, unknown>): Identity[] {
  const found: Identity[] = [];
  for (const [kind, property] of Object.entries(CUSTOMER_ID_PROPERTIES) as Array<[CustomerPlatform, string]>) {
    const value = customerId(properties[property]);
    if (value !== null) found.push({ kind, value });
  }
  const phone = phoneKey(properties.phone);
  if (phone !== null) found.push({ kind: 'phone', value: phone });
  return found;
}

/** An order's customer reference: its platform and the platform's customer id (`shopify:7012345678901`). */
export const customerRef = (identity: Identity) => `${identity.kind}:${identity.value}`;

/** The customer reference of a platform's customer id, or null (no id, or not a platform whose ids name contacts). */
export function customerRefOf(platform: string, id: unknown): string | null {
  const kind = customerPlatformOf(platform);
  const value = customerId(id);
  return kind === null || value === null ? null : customerRef({ kind, value });
}

/** The identity a customer reference names (the inverse of `customerRef`); null for anything else. */
export function identityOfRef(ref: string): Identity | null {
  const at = ref.indexOf(':');
  const kind = customerPlatformOf(ref.slice(0, at));
  const value = customerId(ref.slice(at + 1));
  return at < 0 || kind === null || value === null ? null : { kind, value };
}

export const identityKey = (workspaceId: string, identity: Identity) => compositeKey(workspaceId, identity.kind, identity.value);

/** A buyer who gave no email, as a shop platform names them: its customer reference and phone, either may be null. */
export interface BuyerIdentity {
  customerRef: string | null;
  phone: string | null;
}
