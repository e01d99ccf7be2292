import { createHash } from 'node:crypto';
import type { Dialect } from '../db/dialect/dialect.js';
import type { Knex } from 'knex';
import type { Database, Db, Reader } from '../db/database.js';
import { NotFoundError, ValidationError } from '../errors.js';
import { randomToken, uuidv7 } from '../shared/ids.js';
import { toPage, type Page, type Paging } from '../shared/paging.js';
import { rehearse } from '../shared/row-batch.js';
import { checkValue, parseInput } from '../shared/validate.js';
import {
  manualProductSchema,
  normalizeProduct,
  productListQuerySchema,
  productRefSchema,
  productSchema,
  type Product,
  type ProductInput,
  type Variant,
} from './product.schema.js';
import { createProductStore, type ProductRow, type VariantRow } from './product-store.js';
import { readShopCurrency } from '../settings/shop-currency.js';

/** Where a write comes from: the platform and source every product it writes carries. */
export interface ProductScope {
  workspaceId: string;
  platform: string;
  source: string;
}

/** Products created in the application (API, CSV import): platform and source `manual`. */
export const MANUAL_PLATFORM = 'manual';

/** What an integration writes carries its platform, and its shop's domain as the source. */
const integrationScope = (integration: { workspaceId: string; platform: string; domain: string }): ProductScope => ({
  workspaceId: integration.workspaceId,
  platform: integration.platform,
  source: `${integration.platform}:${integration.domain}`,
});

export type WriteStatus = 'inserted' | 'updated' | 'unchanged';
export type ManualOutcome = { status: WriteStatus; id: string } | { error: string };
/** `dryRun`: write in a transaction that is rolled back (`emk products import --dry-run`). */
export interface ImportOptions {
  dryRun?: boolean;
}
export type WebhookProductEvent = 'product_created' | 'product_updated' | 'product_deleted';
export type WebhookProductResult = 'applied' | 'ignored' | 'deleted' | 'invalid';

/** Hash of what a write says (the normalised product and where it came from): equal writes, equal hashes. */
export function contentHash(input: ProductInput, scope: ProductScope): string {
  return createHash('sha256')
    .update(JSON.stringify([scope.platform, scope.source, input]))
    .digest('hex');
}

/** Whether a variant can be bought: as sent, else from its quantity, else unknown. */
const variantAvailable = (v: Variant) => v.in_stock ?? (v.stock_qty === null ? null : v.stock_qty > 0);

/**
 * What a product's variants say about the parent: the lowest price above 0, the summed quantity (null when
 * no variant tracks one) and whether any variant can be bought (null when none says).
 */
export function summariseVariants(variants: Variant[]) {
  const prices = variants.map((v) => v.price).filter((p): p is number => p !== null && p > 0);
  const quantities = variants.map((v) => v.stock_qty).filter((q): q is number => q !== null);
  const availability = variants.map(variantAvailable).filter((a): a is boolean => a !== null);
  return {
    price: prices.length > 0 ? Math.min(...prices) : null,
    stock_qty: quantities.length > 0 ? quantities.reduce((sum, q) => sum + q, 0) : null,
    in_stock: availability.length > 0 ? availability.some(Boolean) : null,
  };
}

/**
 * The stored row after a write (the spec's Product rules): the write replaces every field, except that a
 * price of 0 or none never overwrites a known price; variants, when sent and not empty, set the parent's
 * price and stock; `in_stock` not sent follows `stock_qty`.
 */
export function nextProductRow(
  before: ProductRow | undefined,
  input: ProductInput,
  scope: ProductScope,
  hash: string,
  now: number,
  shopCurrency: string,
): ProductRow {
  const fromVariants = input.variants && input.variants.length > 0 ? summariseVariants(input.variants) : null;
  const offered = fromVariants?.price ?? input.price;
  const price = offered !== null && offered > 0 ? offered : (before?.price ?? offered);
  const stockQty = fromVariants ? fromVariants.stock_qty : input.stock_qty;
  const ownStock = input.in_stock ?? (input.stock_qty === null ? null : input.stock_qty > 0);
  const { variants: _variants, ...fields } = input;
  return {
    id: before?.id ?? uuidv7(now),
    workspace_id: scope.workspaceId,
    platform: scope.platform,
    ...fields,
    currency: input.currency ?? shopCurrency,
    currency_defaulted: input.currency === null,
    price,
    stock_qty: stockQty,
    in_stock: fromVariants?.in_stock ?? ownStock,
    source: scope.source,
    content_hash: hash,
    synced_at: now,
    created_at: before?.created_at ?? now,
  };
}

const sameSet = (a: string[], b: string[]) => {
  const set = new Set(a);
  return set.size === new Set(b).size && b.every((x) => set.has(x));
};

/** Variant rows of one product, with ids that sort in the order the variants were sent. */
function variantRows(productId: string, variants: Variant[], now: number): VariantRow[] {
  const ids = variants.map(() => uuidv7(now)).sort();
  return variants.map((variant, i) => ({ id: ids[i]!, product_id: productId, ...variant }));
}

/** The catalog: one product per (workspace, platform, external_id), written whole by each sync. */
export function createProductService(deps: {
  knex: Knex;
  reader: Reader;
  writeTransaction: Database['writeTransaction'];
  dialect: Dialect;
  /**
   * Told, inside the writing transaction, which ranked products (by external id; every one of the workspace
   * when null) may have changed categories: the rankings' per-category totals follow the catalog.
   */
  categoriesChanged: (trx: Knex.Transaction, workspaceId: string, externalIds: string[] | null) => Promise<void>;
}) {
  const { knex, reader, writeTransaction, categoriesChanged } = deps;
  const products = createProductStore(deps.dialect);

  /**
   * Upserts a group of validated products from one origin, set-based: one query finds the stored rows, one
   * multi-row upsert writes the changed ones, one delete and one multi-row insert replace the variants that
   * were sent. A write equal to the last one applied (same content hash) changes nothing, not even
   * `synced_at`. Several writes of one product in a group apply in order.
   */
  async function writeProducts(
    trx: Knex.Transaction,
    scope: ProductScope,
    inputs: ProductInput[],
  ): Promise<Array<{ status: WriteStatus; id: string }>> {
    const stored = await products.findByExternalIds(
      trx,
      scope.workspaceId,
      scope.platform,
      inputs.map((p) => p.external_id),
      { lock: true },
    );
    const current = new Map(stored.map((row) => [row.external_id, row]));
    const shopCurrency = await readShopCurrency(trx, scope.workspaceId);
    const changed = new Map<string, ProductRow>();
    const sentVariants = new Map<string, Variant[]>();
    const now = Date.now();
    const recategorised = new Set<string>();
    const statuses = inputs.map((input): WriteStatus => {
      const before = current.get(input.external_id);
      const hash = contentHash(input, scope);
      if (before?.content_hash === hash) return 'unchanged';
      const next = nextProductRow(before, input, scope, hash, now, shopCurrency);
      if (!before || !sameSet(before.categories, next.categories)) recategorised.add(input.external_id);
      current.set(input.external_id, next);
      changed.set(input.external_id, next);
      if (input.variants !== undefined) sentVariants.set(input.external_id, input.variants);
      return before ? 'updated' : 'inserted';
    });

    const ids = await products.upsert(trx, [...changed.values()]);
    const productIds: string[] = [];
    const variants: VariantRow[] = [];
    for (const [externalId, list] of sentVariants) {
      const productId = ids.get(externalId)!;
      productIds.push(productId);
      variants.push(...variantRows(productId, list, now));
    }
    await products.replaceVariants(trx, productIds, variants);
    // Manual products are never ranked.
    if (scope.platform !== MANUAL_PLATFORM && recategorised.size > 0) await categoriesChanged(trx, scope.workspaceId, [...recategorised]);
    return statuses.map((status, i) => {
      const externalId = inputs[i]!.external_id;
      return { status, id: ids.get(externalId) ?? current.get(externalId)!.id };
    });
  }

  /**
   * Validates each record alone (a bad one is reported, the rest are written), all in one transaction; with
   * `dryRun` the transaction is rolled back and the outcomes say what would be written.
   */
  async function upsertRecords(
    scope: ProductScope,
    records: unknown[],
    parse: (record: unknown) => { success: true; data: ProductInput } | { success: false; problem: string },
    options: ImportOptions,
  ): Promise<ManualOutcome[]> {
    const outcomes: ManualOutcome[] = new Array(records.length);
    const valid: Array<{ index: number; input: ProductInput }> = [];
    records.forEach((record, index) => {
      const parsed = parse(record);
      if (parsed.success) valid.push({ index, input: parsed.data });
      else outcomes[index] = { error: parsed.problem };
    });
    if (valid.length === 0) return outcomes;

    const write = (trx: Knex.Transaction) =>
      writeProducts(
        trx,
        scope,
        valid.map((v) => v.input),
      );
    const written = await (options.dryRun ? rehearse(writeTransaction, write) : writeTransaction(write));
    valid.forEach((v, k) => (outcomes[v.index] = written[k]!));
    return outcomes;
  }

  /**
   * Manual products (POST /api/v1/ecommerce/products, `emk products import`): validated one by one (a bad
   * one is reported, the rest are written), `external_id` generated when absent, all in one transaction.
   */
  function upsertManual(workspaceId: string, records: unknown[], options: ImportOptions = {}): Promise<ManualOutcome[]> {
    const scope = { workspaceId, platform: MANUAL_PLATFORM, source: MANUAL_PLATFORM };
    return upsertRecords(
      scope,
      records,
      (record) => {
        const parsed = checkValue(manualProductSchema, record);
        if (!parsed.success) return parsed;
        return { success: true, data: normalizeProduct({ ...parsed.data, external_id: parsed.data.external_id ?? `man_${randomToken(20)}` }) };
      },
      options,
    );
  }

  /**
   * A shop's catalog as its integration sends it (the webhook's product shape; `emk seed`), many products in
   * one transaction: unlike manual products, these are ranked by behaviour. Also a shop's export file
   * (`emk products import --format`), for a shop named by its platform and domain.
   */
  function upsertForIntegration(integration: { workspaceId: string; platform: string; domain: string }, records: unknown[], options: ImportOptions = {}) {
    const scope = integrationScope(integration);
    return upsertRecords(
      scope,
      records,
      (record) => {
        const parsed = checkValue(productSchema, record);
        return parsed.success ? { success: true, data: normalizeProduct(parsed.data) } : parsed;
      },
      options,
    );
  }

  async function getRecord(db: Knex | Knex.Transaction, workspaceId: string, id: string): Promise<Product> {
    const row = await products.findById(db, workspaceId, id);
    if (!row) throw new NotFoundError();
    return (await products.toProducts(db, [row]))[0]!;
  }

  return {
    upsertManual,
    upsertForIntegration,

    /** Management records of these products (a feed's page), in no particular order. */
    async recordsByIds(db: Db, workspaceId: string, ids: string[]): Promise<Product[]> {
      return products.toProducts(db, await products.findByIds(db, workspaceId, ids));
    },

    /**
     * Rebuilds the workspace's feed-filter side tables and title keys from its products (`emk feeds
     * reindex-filters`): for products stored before those tables existed, or loaded with SQL past emk.
     */
    async reindexFilters(workspaceId: string): Promise<{ products: number }> {
      return {
        products: await writeTransaction(async (trx) => {
          const reindexed = await products.reindexFilters(trx, workspaceId);
          await categoriesChanged(trx, workspaceId, null);
          return reindexed;
        }),
      };
    },

    /**
     * Product events of the integration webhook, inside the webhook's transaction. Never throws over the
     * payload's shape: a product that cannot be read is `invalid` and nothing is written (applying half of
     * it would clear the fields it failed on).
     */
    async applyWebhookEvent(
      trx: Knex.Transaction,
      integration: { workspaceId: string; platform: string; domain: string },
      eventType: WebhookProductEvent,
      product: unknown,
    ): Promise<WebhookProductResult> {
      const scope = integrationScope(integration);
      if (eventType === 'product_deleted') {
        const ref = productRefSchema.safeParse(product);
        if (!ref.success) return 'invalid';
        const removed = await products.deleteByExternalId(trx, scope.workspaceId, scope.platform, ref.data.external_id);
        if (removed > 0) await categoriesChanged(trx, scope.workspaceId, [ref.data.external_id]);
        return removed > 0 ? 'deleted' : 'ignored';
      }
      const parsed = productSchema.safeParse(product);
      if (!parsed.success) return 'invalid';
      const [written] = await writeProducts(trx, scope, [normalizeProduct(parsed.data)]);
      return written!.status === 'unchanged' ? 'ignored' : 'applied';
    },

    /**
     * A product a shop platform's export stored before its webhooks ran is keyed by its handle (the export has
     * no ids): the first webhook naming that handle adopts the row, which takes the product's id as its
     * external id (docs/platforms/shopify.md, History). Nothing happens when the id is stored already or no row
     * of the integration's platform holds the handle.
     */
    /** Products whose writes named no currency follow the shop's currency (settings `currency`). */
    adoptShopCurrency: (trx: Knex.Transaction, workspaceId: string, currency: string) => products.adoptShopCurrency(trx, workspaceId, currency),

    async adoptExported(trx: Knex.Transaction, integration: { workspaceId: string; platform: string }, externalId: string, handle: string): Promise<void> {
      if (handle === externalId) return;
      const found = await products.findByExternalIds(trx, integration.workspaceId, integration.platform, [externalId, handle], { lock: true });
      if (found.some((row) => row.external_id === externalId)) return;
      const exported = found.find((row) => row.external_id === handle && row.metadata.handle === handle);
      if (exported) await products.setExternalId(trx, exported.id, externalId);
    },

    /** Removes the products an integration wrote (`shop/redact`), in the caller's transaction. */
    async deleteOfIntegration(trx: Knex.Transaction, integration: { workspaceId: string; platform: string; domain: string }): Promise<number> {
      const scope = integrationScope(integration);
      const removed = await products.deleteBySource(trx, scope.workspaceId, scope.platform, scope.source);
      if (removed.length > 0) await categoriesChanged(trx, scope.workspaceId, removed);
      return removed.length;
    },

    /** POST /api/v1/ecommerce/products: 400 naming the field; `created` false when it updated a product. */
    async create(workspaceId: string, body: unknown): Promise<{ product: Product; created: boolean }> {
      const [outcome] = await upsertManual(workspaceId, [body]);
      if ('error' in outcome!) throw new ValidationError(`invalid request: ${outcome.error}`);
      return { product: await getRecord(knex, workspaceId, outcome!.id), created: outcome!.status === 'inserted' };
    },

    get: (workspaceId: string, id: string) => getRecord(knex, workspaceId, id),

    async list(workspaceId: string, query: unknown, paging: Paging): Promise<Page<Product>> {
      const filter = parseInput(productListQuerySchema, query);
      const db = reader();
      const { rows, total } = await products.list(db, workspaceId, filter, paging);
      return toPage(await products.toProducts(db, rows), total, paging);
    },
  };
}

export type ProductService = ReturnType<typeof createProductService>;
