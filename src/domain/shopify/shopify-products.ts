import type { z } from 'zod';
import { productSchema, variantSchema } from '../products/product.schema.js';
import { asArray, asObject, isAbsent, type FieldReader, type Payload } from '../platform-webhooks/payload-fields.js';
import type { MappingContext, StoreChange } from '../platform-webhooks/store-change.js';
import type { FieldPath } from '../shared/storable.js';

/** A catalog field, the value read for it, and the Shopify field it came from (named in a warning). */
type Field = [key: string, value: unknown, from: FieldPath];

/**
 * Each field through the catalog's own schema for it, so an unusable value drops only itself (a whole
 * product refused over one field would clear the fields it failed on, since a write replaces the product).
 */
function checkedFields(shape: Record<string, z.ZodType>, fields: Field[], read: FieldReader): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const [key, value, from] of fields) {
    if (isAbsent(value)) continue;
    const checked = read.check(shape[key]!, value, from);
    if (checked !== null && checked !== undefined) out[key] = checked;
  }
  return out;
}

/** A single-variant product's placeholder option (`Title: Default Title`) names nothing. */
const isPlaceholder = (name: string, value: unknown) => name === 'Title' && value === 'Default Title';

/** Option names by position (`option1` is the option at position 1). */
function optionNames(body: Payload): Map<number, string> {
  const names = new Map<number, string>();
  asArray(body.options).forEach((raw, i) => {
    const option = asObject(raw);
    if (option && typeof option.name === 'string') names.set(typeof option.position === 'number' ? option.position : i + 1, option.name);
  });
  return names;
}

/**
 * A variant's stock. `inventory_management` null: Shopify does not track it, so it is always for sale and has
 * no quantity; tracked, it is for sale while in stock or when it may be oversold (`inventory_policy: continue`).
 */
function stockOf(variant: Payload): { in_stock: boolean | null; stock_qty: unknown } {
  if (variant.inventory_management === null) return { in_stock: true, stock_qty: undefined };
  const quantity = typeof variant.inventory_quantity === 'number' ? variant.inventory_quantity : null;
  const oversold = variant.inventory_policy === 'continue';
  return { in_stock: oversold ? true : quantity === null ? null : quantity > 0, stock_qty: variant.inventory_quantity };
}

function variantsOf(body: Payload, productUrl: string | null, read: FieldReader): Array<Record<string, unknown>> {
  const names = optionNames(body);
  const imageSrc = new Map<unknown, unknown>();
  for (const raw of asArray(body.images)) {
    const image = asObject(raw);
    if (image) imageSrc.set(image.id, image.src);
  }
  return read.objects(body.variants, ['variants']).map(([variant, at]) => {
    const options: Record<string, unknown> = {};
    for (const [position, name] of names) {
      const value = variant[`option${position}`];
      if (!isAbsent(value) && !isPlaceholder(name, value)) options[name] = value;
    }
    const id = read.id(variant.id, [...at, 'id']);
    const stock = stockOf(variant);
    return checkedFields(
      variantSchema.shape,
      [
        ['external_id', id, [...at, 'id']],
        ['sku', variant.sku, [...at, 'sku']],
        ['title', variant.title === 'Default Title' ? null : variant.title, [...at, 'title']],
        ['options', Object.keys(options).length > 0 ? options : null, at],
        ['price', variant.price, [...at, 'price']],
        ['compare_at_price', variant.compare_at_price, [...at, 'compare_at_price']],
        ['in_stock', stock.in_stock, [...at, 'inventory_policy']],
        ['stock_qty', stock.stock_qty, [...at, 'inventory_quantity']],
        ['image_url', imageSrc.get(variant.image_id), [...at, 'image_id']],
        ['url', productUrl && id !== null ? `${productUrl}?variant=${encodeURIComponent(id)}` : null, [...at, 'id']],
        ['position', variant.position, [...at, 'position']],
      ],
      read,
    );
  });
}

/** The variant a product is shown at: the lowest price (above 0 when any is), and that variant's compare-at price. */
function cheapest(variants: Array<Record<string, unknown>>): Record<string, unknown> | null {
  const priced = variants.filter((v): v is Record<string, unknown> & { price: number } => typeof v.price === 'number');
  const candidates = priced.some((v) => v.price > 0) ? priced.filter((v) => v.price > 0) : priced;
  return candidates.reduce<Record<string, unknown> | null>((best, v) => (best === null || v.price < (best.price as number) ? v : best), null);
}

/** Shopify's tags are one comma-separated text (`"Emotive, Flash Memory, MP3"`). */
const tagList = (tags: unknown): unknown =>
  typeof tags === 'string' ? tags.split(',').map((tag) => tag.trim()).filter((tag) => tag !== '') : tags;

/**
 * `products/create|update`: the catalog product. A product that is not `active` (a draft, archived) is taken
 * out of the catalog, so mail never shows it; the product's id and title are required.
 */
export function shopifyProduct(body: Payload, read: FieldReader, context: MappingContext): StoreChange | null {
  const externalId = read.id(body.id, ['id']);
  if (externalId === null) {
    read.warn('id is required (product ignored)');
    return null;
  }
  if (typeof body.status === 'string' && body.status !== 'active') return { kind: 'product_delete', externalId };
  const title = read.text(body.title, ['title']);
  if (title === null) {
    read.warn('title is required (product ignored)');
    return null;
  }
  const handle = read.text(body.handle, ['handle'], 255);
  const productUrl = handle && context.shopDomain ? `https://${context.shopDomain}/products/${encodeURIComponent(handle)}` : null;
  const variants = variantsOf(body, productUrl, read);
  const shown = cheapest(variants);
  const firstImage = asObject(asObject(body.image) ?? asArray(body.images)[0]);
  const metadata = Object.fromEntries(
    Object.entries({ handle, vendor: read.text(body.vendor, ['vendor'], 10_000) }).filter(([, value]) => value !== null),
  );
  const product = checkedFields(
    productSchema.shape,
    [
      ['description', body.body_html, ['body_html']],
      ['url', productUrl, ['handle']],
      ['image_url', firstImage?.src, ['image', 'src']],
      ['product_type', body.product_type, ['product_type']],
      ['categories', tagList(body.tags), ['tags']],
      ['price', shown?.price, ['variants']],
      ['compare_at_price', shown?.compare_at_price, ['variants']],
      ['metadata', metadata, []],
    ],
    read,
  );
  // Without a variants list the stored variants stay; an empty one clears them.
  return { kind: 'product_upsert', product: { external_id: externalId, title, ...product, ...(Array.isArray(body.variants) ? { variants } : {}) } };
}

/** `products/delete`: only the id is sent. */
export function shopifyProductDelete(body: Payload, read: FieldReader): StoreChange | null {
  const externalId = read.id(body.id, ['id']);
  if (externalId === null) read.warn('id is required (product ignored)');
  return externalId === null ? null : { kind: 'product_delete', externalId };
}
