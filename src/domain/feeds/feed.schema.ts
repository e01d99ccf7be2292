import { z } from 'zod';
import { MAX_INT, MAX_MONEY } from '../shared/numbers.js';
import { looseText, storableString, text } from '../shared/validate.js';

/**
 * Saved product feeds (the spec's "Product feeds (management)"). Input is strict about types: a value the
 * feed cannot use is refused with 400 naming the field. `null` (and for text fields an empty string) clears an
 * optional setting; a list sent as null becomes empty.
 */

export const RECOMMENDATION_TYPES = [
  'best_selling',
  'most_viewed',
  'best_selling_and_most_viewed',
  'newest',
  'random',
  'recently_viewed',
  'added_to_cart',
  'may_also_like',
] as const;
export type RecommendationType = (typeof RECOMMENDATION_TYPES)[number];

/** Types ranked for one recipient: they need a contact, and previews fall back to the plain ordering. */
export const PERSONALISED_TYPES: ReadonlySet<string> = new Set(['recently_viewed', 'added_to_cart', 'may_also_like']);

export const SORTS = ['newest', 'price_asc', 'price_desc', 'title_asc'] as const;
export type SortBy = (typeof SORTS)[number];

export const SET_OPS = ['any', 'all'] as const;
export type SetOp = (typeof SET_OPS)[number];

export const STOCK_STATUSES = ['in_stock', 'out_of_stock'] as const;
export type StockStatus = (typeof STOCK_STATUSES)[number];

export const METADATA_OPERATORS = ['equals', 'not_equals', 'contains', 'not_contains', 'exists', 'not_exists'] as const;
export type MetadataOperator = (typeof METADATA_OPERATORS)[number];

export const DEFAULT_MAX_ITEMS = 10;
export const MAX_MAX_ITEMS = 100;

const oneOf = <T extends readonly [string, ...string[]]>(values: T) =>
  z.enum(values, { error: `must be one of ${values.join(', ')}` });

const blankAsNull = (value: unknown) => (typeof value === 'string' && value.trim() === '' ? null : value);

const price = z.number().min(0, 'must not be negative').max(MAX_MONEY, `must be at most ${MAX_MONEY}`).nullable();
const stock = z.number().min(-MAX_INT, `must be at least ${-MAX_INT}`).max(MAX_INT, `must be at most ${MAX_INT}`).int().nullable();

const categoryList = z.preprocess(
  (value) => (value === null ? [] : value),
  z.array(text(255)).max(500, 'must have at most 500 entries'),
);

/** Product metadata values are text; a number or boolean condition value is compared as its text. */
const conditionValue = z.preprocess(
  (value) => (typeof value === 'number' || typeof value === 'boolean' ? String(value) : value),
  storableString().max(10_000, 'must be at most 10000 characters'),
);

export const metadataConditionSchema = z
  .object({
    key: text(255),
    operator: oneOf(METADATA_OPERATORS),
    value: conditionValue.nullish(),
  })
  .superRefine((condition, ctx) => {
    const needsValue = condition.operator !== 'exists' && condition.operator !== 'not_exists';
    if (needsValue && (condition.value === undefined || condition.value === null)) {
      ctx.addIssue({ code: 'custom', path: ['value'], message: `must be given for operator ${condition.operator}` });
    }
  })
  .transform(
    (c): MetadataCondition => ({
      key: c.key,
      operator: c.operator,
      value: c.operator === 'exists' || c.operator === 'not_exists' ? null : (c.value ?? null),
    }),
  );
export type MetadataCondition = { key: string; operator: MetadataOperator; value: string | null };

const variantOptions = z.preprocess(
  (value) => (value === null ? {} : value),
  z.record(
    text(255),
    z
      .array(z.preprocess((v) => (typeof v === 'number' ? String(v) : v), text(1000)))
      .min(1, 'must list at least one accepted value')
      .max(500, 'must have at most 500 entries'),
  ),
);

/** Every field a feed write may carry; all optional (PUT sends only what changes). */
const feedFields = {
  name: text(255),
  recommendation_type: z.preprocess((value) => (value === null ? '' : value), z.union([z.literal(''), oneOf(RECOMMENDATION_TYPES)], { error: `must be one of ${RECOMMENDATION_TYPES.join(', ')} or an empty string` })),
  sort_by: oneOf(SORTS),
  max_items: z.number().min(1, `must be at least 1`).max(MAX_MAX_ITEMS, `must be at most ${MAX_MAX_ITEMS}`).int(),
  categories: categoryList,
  exclude_categories: categoryList,
  categories_op: oneOf(SET_OPS),
  exclude_categories_op: oneOf(SET_OPS),
  price_min: price,
  price_max: price,
  stock_min: stock,
  stock_max: stock,
  stock_status: z.preprocess(blankAsNull, oneOf(STOCK_STATUSES).nullable()),
  source: z.preprocess(blankAsNull, looseText(400).nullable()),
  metadata: z.preprocess((value) => (value === null ? [] : value), z.array(metadataConditionSchema).max(100, 'must have at most 100 entries')),
  variant_options: variantOptions,
  variant_in_stock: z.boolean(),
};

const isObject = (value: unknown) => typeof value === 'object' && value !== null && !Array.isArray(value);
const objectBody = (value: unknown) => (isObject(value) ? value : Symbol('not an object'));

/** POST body: only `name` is required. */
export const feedCreateSchema = z.preprocess(objectBody, z.object(feedFields).partial().required({ name: true }));

/** PUT body: any subset of the fields, plus `clear_stock_min` / `clear_stock_max` to remove a bound. */
export const feedUpdateSchema = z.preprocess(
  objectBody,
  z.object({ ...feedFields, clear_stock_min: z.boolean(), clear_stock_max: z.boolean() }).partial(),
);

export type FeedCreateInput = z.output<typeof feedCreateSchema>;
export type FeedUpdateInput = z.output<typeof feedUpdateSchema>;

const count = (max: number) => z.coerce.number({ error: 'must be an integer' }).int('must be an integer').min(1, 'must be at least 1').max(max, `must be at most ${max}`);

/** GET /product-feeds/{id}?preview=N */
export const feedGetQuerySchema = z.object({ preview: count(MAX_MAX_ITEMS).optional() });

/** GET /product-feeds/{id}/products?contact_id=&limit= */
export const feedProductsQuerySchema = z.object({
  contact_id: looseText(64).optional(),
  limit: count(MAX_MAX_ITEMS).optional(),
});

/** The settings of a feed: what decides which products it holds and in what order. */
export interface FeedSettings {
  recommendation_type: '' | RecommendationType;
  sort_by: SortBy;
  max_items: number;
  categories: string[];
  exclude_categories: string[];
  categories_op: SetOp;
  exclude_categories_op: SetOp;
  price_min: number | null;
  price_max: number | null;
  stock_min: number | null;
  stock_max: number | null;
  stock_status: StockStatus | null;
  source: string | null;
  metadata: MetadataCondition[];
  variant_options: Record<string, string[]>;
  variant_in_stock: boolean;
}

/** The feed record of the management API. */
export interface Feed extends FeedSettings {
  id: string;
  name: string;
  created_at: string;
  updated_at: string;
}

export const DEFAULT_SETTINGS: FeedSettings = {
  recommendation_type: '',
  sort_by: 'newest',
  max_items: DEFAULT_MAX_ITEMS,
  categories: [],
  exclude_categories: [],
  categories_op: 'any',
  exclude_categories_op: 'any',
  price_min: null,
  price_max: null,
  stock_min: null,
  stock_max: null,
  stock_status: null,
  source: null,
  metadata: [],
  variant_options: {},
  variant_in_stock: false,
};

/** A feed whose bounds cross can match nothing: refused, naming the lower bound. */
export function boundsProblem(settings: FeedSettings): string | null {
  if (settings.price_min !== null && settings.price_max !== null && settings.price_min > settings.price_max) {
    return 'price_min must not be above price_max';
  }
  if (settings.stock_min !== null && settings.stock_max !== null && settings.stock_min > settings.stock_max) {
    return 'stock_min must not be above stock_max';
  }
  return null;
}

/** The feed record, as a schema: what the API documents for replies. */
export const feedRecordSchema = z.object({
  id: z.string(),
  name: z.string(),
  recommendation_type: z.union([z.literal(''), z.enum(RECOMMENDATION_TYPES)]),
  sort_by: z.enum(SORTS),
  max_items: z.number().int(),
  categories: z.array(z.string()),
  exclude_categories: z.array(z.string()),
  categories_op: z.enum(SET_OPS),
  exclude_categories_op: z.enum(SET_OPS),
  price_min: z.number().nullable(),
  price_max: z.number().nullable(),
  stock_min: z.number().nullable(),
  stock_max: z.number().nullable(),
  stock_status: z.enum(STOCK_STATUSES).nullable(),
  source: z.string().nullable(),
  metadata: z.array(z.object({ key: z.string(), operator: z.enum(METADATA_OPERATORS), value: z.string().nullable() })),
  variant_options: z.record(z.string(), z.array(z.string())),
  variant_in_stock: z.boolean(),
  created_at: z.string(),
  updated_at: z.string(),
}) satisfies z.ZodType<Feed>;
