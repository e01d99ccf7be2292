import { z } from 'zod';
import { intSchema, MAX_MONEY, moneySchema, numericText } from '../shared/numbers.js';
import { storableString, text } from '../shared/validate.js';

/**
 * The catalog product (the spec's Product table): the same field names on write and on read. Writes are
 * lenient about representation — numbers and booleans may arrive as text (CSV cells, storefront payloads
 * that send prices as strings), an empty string or null means "not sent" — and strict about meaning.
 */

const isBlank = (value: unknown) => value === null || value === undefined || (typeof value === 'string' && value.trim() === '');

/** An empty string or null counts as not sent. */
const blankAsMissing = (value: unknown) => (isBlank(value) ? undefined : value);

/** Optional text, as sent (not trimmed inside), null when blank. */
const optionalText = (max: number) =>
  z.preprocess(blankAsMissing, storableString().max(max, `must be at most ${max} characters`).optional());

/** Ids may arrive as numbers (storefront ids often are); stored as text. */
const idText = z.preprocess(
  (value) => (typeof value === 'number' && Number.isInteger(value) ? String(value) : value),
  text(255),
);
const optionalIdText = z.preprocess(blankAsMissing, idText.optional());

/** Money: the shared range, at most 4 decimals kept (the columns are decimal(18,4)). */
const money = z.preprocess(blankAsMissing, moneySchema().optional());

const integer = z.preprocess(blankAsMissing, intSchema.optional());

const TRUE_WORDS = new Set(['true', '1', 'yes', 'y']);
const FALSE_WORDS = new Set(['false', '0', 'no', 'n']);
const flag = z.preprocess((value) => {
  if (isBlank(value)) return undefined;
  if (value === 1 || value === 0) return value === 1;
  if (typeof value === 'string') {
    const word = value.trim().toLowerCase();
    if (TRUE_WORDS.has(word)) return true;
    if (FALSE_WORDS.has(word)) return false;
  }
  return value;
}, z.boolean().optional());

/** Scalars become text; null entries are dropped (a key with no value is no attribute). */
const scalarsAsText = (value: unknown) => {
  if (value === null || value === undefined) return undefined;
  if (typeof value !== 'object' || Array.isArray(value)) return value;
  const out: Record<string, unknown> = {};
  for (const [key, v] of Object.entries(value)) {
    if (v === null || v === undefined) continue;
    out[key] = typeof v === 'number' || typeof v === 'boolean' ? String(v) : v;
  }
  return out;
};

const stringMap = (maxValue: number) =>
  z.preprocess(
    scalarsAsText,
    z.record(text(255), storableString().max(maxValue, `must be at most ${maxValue} characters`)).optional(),
  );

const categories = z.preprocess(
  (value) =>
    Array.isArray(value)
      ? value.filter((v) => !isBlank(v)).map((v) => (typeof v === 'number' ? String(v) : v))
      : blankAsMissing(value),
  z.array(text(255)).max(500, 'must have at most 500 entries').optional(),
);

/** A variant object (the spec's `variants` row): every field optional. */
export const variantSchema = z.object({
  external_id: optionalIdText,
  sku: optionalText(255),
  title: optionalText(1000),
  options: stringMap(1000),
  price: money,
  compare_at_price: money,
  in_stock: flag,
  stock_qty: integer,
  image_url: optionalText(4096),
  url: optionalText(4096),
  position: integer,
});

const productFields = {
  external_id: idText,
  title: text(1000),
  price: money,
  currency: z.preprocess(
    blankAsMissing,
    z
      .string()
      .trim()
      .regex(/^[A-Za-z]{3}$/, 'must be a three-letter ISO 4217 code')
      .transform((c) => c.toUpperCase())
      .optional(),
  ),
  url: optionalText(4096),
  image_url: optionalText(4096),
  in_stock: flag,
  stock_qty: integer,
  categories,
  compare_at_price: money,
  description: optionalText(100_000),
  product_type: optionalText(255),
  weight: z.preprocess((value) => numericText(blankAsMissing(value)), z.number().min(-MAX_MONEY, `must be at least ${-MAX_MONEY}`).max(MAX_MONEY, `must be at most ${MAX_MONEY}`).optional()),
  // null is an explicit "no variants" (like []); only a missing key leaves stored variants alone.
  variants: z.preprocess(
    (value) => (value === null ? [] : value),
    z.array(variantSchema).max(2000, 'must have at most 2000 entries').optional(),
  ),
  metadata: stringMap(10_000),
};

/** A product from an integration (webhook): `external_id` and `title` are required. */
export const productSchema = z.object(productFields);

/** A manual product (API or CSV import): `external_id` is generated when absent. */
export const manualProductSchema = z.object({ ...productFields, external_id: optionalIdText });

export const productListQuerySchema = z.object({
  platform: z.string().trim().max(64).optional(),
  external_id: z.string().trim().max(255).optional(),
  source: z.string().trim().max(400).optional(),
});
export type ProductListFilter = z.infer<typeof productListQuerySchema>;

/** `product_deleted` needs only the id. */
export const productRefSchema = z.object({ external_id: idText });

export interface Variant {
  external_id: string | null;
  sku: string | null;
  title: string | null;
  options: Record<string, string> | null;
  price: number | null;
  compare_at_price: number | null;
  in_stock: boolean | null;
  stock_qty: number | null;
  image_url: string | null;
  url: string | null;
  position: number | null;
}

/** The product's own fields: what a write sets and a read shows, besides ids, variants and service fields. */
export interface ProductFields {
  external_id: string;
  title: string;
  price: number | null;
  currency: string;
  url: string | null;
  image_url: string | null;
  in_stock: boolean | null;
  stock_qty: number | null;
  categories: string[];
  compare_at_price: number | null;
  description: string | null;
  product_type: string | null;
  weight: number | null;
  metadata: Record<string, string>;
}

/**
 * A product write after validation, every field explicit: an omitted field is null (the whole product
 * replaces the stored one), except `variants`, where undefined means "leave the stored variants alone".
 */
export interface ProductInput extends Omit<ProductFields, 'currency'> {
  /** Null when the write named none: the product is in the shop's currency (settings `currency`). */
  currency: string | null;
  variants: Variant[] | undefined;
}

const sortedKeys = (map: Record<string, string>) =>
  Object.fromEntries(Object.keys(map).sort().map((key) => [key, map[key]!]));

/** Fills in what was not sent, in one fixed key order, so equal products serialise (and hash) equally. */
export function normalizeProduct(parsed: z.output<typeof productSchema>): ProductInput {
  return {
    external_id: parsed.external_id,
    title: parsed.title,
    price: parsed.price ?? null,
    currency: parsed.currency ?? null,
    url: parsed.url ?? null,
    image_url: parsed.image_url ?? null,
    in_stock: parsed.in_stock ?? null,
    stock_qty: parsed.stock_qty ?? null,
    categories: parsed.categories ?? [],
    compare_at_price: parsed.compare_at_price ?? null,
    description: parsed.description ?? null,
    product_type: parsed.product_type ?? null,
    weight: parsed.weight ?? null,
    variants: parsed.variants?.map(
      (v, i): Variant => ({
        external_id: v.external_id ?? null,
        sku: v.sku ?? null,
        title: v.title ?? null,
        options: v.options ? sortedKeys(v.options) : null,
        price: v.price ?? null,
        compare_at_price: v.compare_at_price ?? null,
        in_stock: v.in_stock ?? null,
        stock_qty: v.stock_qty ?? null,
        image_url: v.image_url ?? null,
        url: v.url ?? null,
        // Variants keep the order they were sent in: 1-based place in the array unless told otherwise.
        position: v.position ?? i + 1,
      }),
    ),
    metadata: sortedKeys(parsed.metadata ?? {}),
  };
}

/** The product record of the management API, with the write field names. */
export interface Product extends ProductFields {
  id: string;
  variants: Variant[];
  platform: string;
  source: string | null;
  synced_at: string;
  created_at: string;
}

const nullableNumber = z.number().nullable();

/** A variant in a product record. */
export const variantRecordSchema = z.object({
  external_id: z.string().nullable(),
  sku: z.string().nullable(),
  title: z.string().nullable(),
  options: z.record(z.string(), z.string()).nullable(),
  price: nullableNumber,
  compare_at_price: nullableNumber,
  in_stock: z.boolean().nullable(),
  stock_qty: nullableNumber,
  image_url: z.string().nullable(),
  url: z.string().nullable(),
  position: nullableNumber,
}) satisfies z.ZodType<Variant>;

/** The product record, as a schema: what the API documents for replies (the write field names). */
export const productRecordSchema = z.object({
  id: z.string(),
  external_id: z.string(),
  title: z.string(),
  price: nullableNumber,
  currency: z.string(),
  url: z.string().nullable(),
  image_url: z.string().nullable(),
  in_stock: z.boolean().nullable(),
  stock_qty: nullableNumber,
  categories: z.array(z.string()),
  compare_at_price: nullableNumber,
  description: z.string().nullable(),
  product_type: z.string().nullable(),
  weight: nullableNumber,
  metadata: z.record(z.string(), z.string()),
  variants: z.array(variantRecordSchema),
  platform: z.string(),
  source: z.string().nullable(),
  synced_at: z.string(),
  created_at: z.string(),
}) satisfies z.ZodType<Product>;
