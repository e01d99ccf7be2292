/**
 * Where events and line items name a catalog product (its `external_id`), current spelling first. The legacy
 * spellings are still read for data recorded before the spec settled on `product_id`.
 */
export const EVENT_PRODUCT_ID_FIELDS = ['product_id', 'ProductID', 'productId', 'item_id'] as const;
const LINE_ITEM_PRODUCT_ID_FIELDS = ['external_id', ...EVENT_PRODUCT_ID_FIELDS] as const;

const MAX_ID_LENGTH = 255;

function firstId(record: unknown, fields: readonly string[]): string | null {
  if (record === null || typeof record !== 'object' || Array.isArray(record)) return null;
  for (const field of fields) {
    const value = (record as Record<string, unknown>)[field];
    if (typeof value !== 'string' && !(typeof value === 'number' && Number.isFinite(value))) continue;
    const id = String(value).trim();
    if (id.length > 0 && id.length <= MAX_ID_LENGTH) return id;
  }
  return null;
}

/** The product an event's properties name (`product_id`, or a legacy spelling); null when none. */
export const productIdOfProperties = (properties: unknown): string | null => firstId(properties, EVENT_PRODUCT_ID_FIELDS);

/** The product a line item names (`external_id`, or a legacy spelling); null when none. */
export const productIdOfItem = (item: unknown): string | null => firstId(item, LINE_ITEM_PRODUCT_ID_FIELDS);

/** Every product an event names: its own product id, then those of its `items`, each once, in order. */
export function productIdsOfEvent(properties: unknown): string[] {
  const ids = new Set<string>();
  const own = productIdOfProperties(properties);
  if (own) ids.add(own);
  const items = (properties as { items?: unknown } | null)?.items;
  if (Array.isArray(items)) {
    for (const item of items) {
      const id = productIdOfItem(item);
      if (id) ids.add(id);
    }
  }
  return [...ids];
}
