/** The spec's standard events: canonical name → accepted aliases. */
const STANDARD_EVENTS: Record<string, string[]> = {
  viewed_product: ['product_viewed'],
  collection_viewed: ['category_viewed'],
  search_submitted: ['searched', 'search'],
  added_to_cart: ['product_added_to_cart'],
  removed_from_cart: ['product_removed_from_cart'],
  cart_viewed: [],
  started_checkout: ['checkout_started'],
  checkout_completed: [],
  active_on_site: [],
  product_clicked: [],
  form_submitted: [],
};

const CANONICAL = new Map<string, string>();
for (const [canonical, aliases] of Object.entries(STANDARD_EVENTS)) {
  CANONICAL.set(canonical, canonical);
  for (const alias of aliases) CANONICAL.set(alias, canonical);
}

export const STANDARD_EVENT_NAMES = Object.keys(STANDARD_EVENTS);

/** Aliases become their canonical name; every other name is a custom event, kept as sent. */
export function canonicalEventName(name: string): string {
  return CANONICAL.get(name) ?? name;
}

export function isStandardEvent(name: string): boolean {
  return CANONICAL.has(name);
}

/** The events that are cart activity for abandoned-cart flows, besides the webhook's cart facts. */
export const CART_EVENT_NAMES = ['added_to_cart', 'started_checkout'];
