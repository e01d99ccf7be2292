import type { Knex } from 'knex';
import type { Reader } from '../db/database.js';
import type { Dialect } from '../db/dialect/dialect.js';
import type { EnsureContacts } from '../contacts/contact-service.js';
import { contactKey, type ContactLookup } from '../contacts/contact-lookup.js';
import type { WriteBatcher } from '../db/write-batcher.js';
import { NotFoundError, ValidationError } from '../errors.js';
import { ActivityDelta } from '../recommendations/activity-delta.js';
import type { ProductActivity } from '../recommendations/product-activity.js';
import { uuidv7 } from '../shared/ids.js';
import { toPage, type Page, type Paging } from '../shared/paging.js';
import { rehearse, writeRowBatch } from '../shared/row-batch.js';
import { parseInput, rowField } from '../shared/validate.js';
import type { TriggerOutbox } from '../triggers/trigger-outbox.js';
import {
  createOrderSchema,
  exportOrderSchema,
  MAX_SYNC_ORDERS,
  orderListQuerySchema,
  syncOrderSchema,
  toOrderItem,
  type ExportOrderInput,
  type Order,
} from './order.schema.js';
import { createOrderStore } from './order-store.js';
import { orderPlacedFact, orderRow, salesOf, type OrderChange, type OrderUpsert } from './order-upsert.js';
import type { TableGrowth } from '../db/table-growth.js';
import type { ContactIdentityService } from '../contact-identities/contact-identity-service.js';

export interface SyncOptions {
  /** Write nothing; count what would be written. */
  dryRun?: boolean;
  /** Rows of a shop platform's export: a row may have no email (exportOrderSchema). */
  platformExport?: boolean;
}

export interface SyncResult {
  inserted: number;
  updated: number;
  skipped: number;
  errors: Array<{ index: number; external_id: string | null; error: string }>;
}

/** The order verbs of the management API and historical sync; the upsert engine lives in order-upsert.ts. */
export function createOrderService(deps: {
  knex: Knex;
  reader: Reader;
  writer: WriteBatcher;
  writeTransaction: <T>(work: (trx: Knex.Transaction) => Promise<T>) => Promise<T>;
  dialect: Dialect;
  contactLookup: ContactLookup;
  ensureContacts: EnsureContacts;
  upsert: OrderUpsert;
  outbox: TriggerOutbox;
  activity: ProductActivity;
  /** A plain insert reports its order (planner statistics on PostgreSQL; the upsert reports its own). */
  tableGrowth: TableGrowth;
  /** The contact of a platform export's row without an email, by its phone. */
  identities: Pick<ContactIdentityService, 'contactsOf'>;
}) {
  const { knex, reader, writer, writeTransaction, contactLookup, ensureContacts, upsert, outbox, activity, tableGrowth, identities } = deps;
  const orderStore = createOrderStore(deps.dialect);

  /** Writes valid sync rows in the caller's transaction; counts and row errors go into `result`. */
  async function syncRows(trx: Knex.Transaction, workspaceId: string, valid: Array<{ index: number; input: ExportOrderInput }>, result: SyncResult) {
    const owners = await ensureContacts(
      trx,
      valid.flatMap(({ input }) =>
        input.email === undefined ? [] : [{ workspaceId, email: input.email, properties: {}, subscriptionStatus: 'non_subscribed' as const, source: 'sync' }],
      ),
      { lock: false },
    );
    // A platform export's row without an email (a point-of-sale sale): the contact of its phone, else none.
    const withoutEmail = valid.filter(({ input }) => input.email === undefined);
    const found = await identities.contactsOf(trx, workspaceId, withoutEmail.map(({ input }) => ({ customerRef: null, phone: input.phone ?? null })));
    const byPhone = new Map(withoutEmail.map(({ index }, k) => [index, found[k]?.contactId ?? null]));
    const now = Date.now();
    const changes: OrderChange[] = [];
    const positions: number[] = [];
    for (const { index, input } of valid) {
      const owner = input.email === undefined ? null : owners.get(contactKey(workspaceId, input.email));
      if (owner === undefined) {
        result.errors.push({ index, external_id: input.external_id, error: 'contact limit reached' });
        continue;
      }
      positions.push(index);
      changes.push({
        workspaceId,
        contactId: owner?.row.id ?? byPhone.get(index) ?? null,
        upsertKey: input.external_id,
        origin: 'sync',
        platform: input.platform ?? 'sync',
        integrationId: null,
        ownerCreated: owner?.created ?? false,
        kind: 'sync',
        fields: {
          order_number: input.order_number,
          total_amount: input.total_amount,
          currency: input.currency,
          status: input.status,
          ordered_at: input.ordered_at,
          ...(input.items ? { items: input.items.map(toOrderItem) } : {}),
          ...(input.refunded_amount !== undefined ? { refunded_amount: input.refunded_amount } : {}),
          ...(input.cancelled_at !== undefined ? { cancelled_at: input.cancelled_at } : {}),
        },
        at: now,
      });
    }
    const outcomes = await upsert.applyOrderChanges(trx, changes);
    outcomes.forEach((outcome, k) => {
      if (outcome.outcome === 'inserted') result.inserted++;
      else if (outcome.outcome === 'updated') result.updated++;
      else if (outcome.outcome === 'unchanged') result.skipped++;
      else if (outcome.outcome === 'invalid') result.errors.push({ index: positions[k]!, external_id: changes[k]!.upsertKey, error: outcome.error });
    });
  }

  function syncChunk(workspaceId: string, rows: unknown[], options: SyncOptions): Promise<SyncResult> {
    const dryRun = options.dryRun === true;
    return writeRowBatch({
      schema: options.platformExport ? exportOrderSchema : syncOrderSchema,
      listName: 'orders',
      rows,
      errorFor: (index, raw, error) => ({ index, external_id: rowField(raw, 'external_id'), error }),
      empty: (): SyncResult => ({ inserted: 0, updated: 0, skipped: 0, errors: [] }),
      run: (unit, rows) => (dryRun ? rehearse(writeTransaction, unit) : writer.run(unit, rows)),
      write: (trx, valid, counts) => syncRows(trx, workspaceId, valid, counts),
    });
  }

  return {
    /** POST /api/v1/ecommerce/orders: a plain insert for a known contact, no duplicate protection, no attribution. */
    async create(workspaceId: string, body: unknown) {
      const input = parseInput(createOrderSchema, body);
      const row = await writer.run(async (trx) => {
        const owner = await contactLookup.findById(trx, workspaceId, input.contact_id);
        if (!owner) throw new NotFoundError('contact not found');
        const now = Date.now();
        const order = orderRow({
          id: uuidv7(now),
          workspace_id: workspaceId,
          contact_id: owner.id,
          platform: input.platform,
          integration_id: null,
          origin: 'api',
          upsert_key: null,
          external_id: input.external_id ?? null,
          order_number: input.order_number,
          total_amount: input.total_amount,
          currency: input.currency,
          status: input.status,
          ordered_at: input.ordered_at,
          refunded_amount: 0,
          cancelled_at: null,
          at: now,
        });
        const items = (input.items ?? []).map(toOrderItem);
        await orderStore.insert(trx, [order], new Map([[order.id, items]]));
        await activity.record(trx, new ActivityDelta().order(salesOf(order, items), 1));
        await orderStore.refreshContactTotals(trx, workspaceId, [owner.id]);
        await outbox.record(trx, [orderPlacedFact(order)]);
        return order;
      });
      tableGrowth.added('orders', 1);
      const [record] = await orderStore.toOrders(knex, [row]);
      return {
        id: record!.id,
        contact_id: record!.contact_id,
        order_number: record!.order_number,
        total_amount: record!.total_amount,
        currency: record!.currency,
        status: record!.status,
        attributed_campaign_id: record!.attributed_campaign_id,
        attributed_flow_id: record!.attributed_flow_id,
        ordered_at: record!.ordered_at,
      };
    },

    /**
     * Historical order sync (the API's and `emk sync-orders`'): up to 1000 orders, upserted by external_id so
     * re-running never double counts, attributed from each order's real ordered_at. Unseen emails create
     * contacts (`non_subscribed`, source `sync`). Unchanged orders count as skipped. With `dryRun` nothing is
     * written and the counts say what would be. With `platformExport`, a row without an email goes to the contact
     * of its phone, else is kept without a contact.
     */
    async sync(workspaceId: string, body: unknown, options: SyncOptions = {}): Promise<SyncResult> {
      const list = (body as { orders?: unknown } | null)?.orders;
      if (!Array.isArray(list)) throw new ValidationError('invalid request: orders must be an array');
      if (list.length > MAX_SYNC_ORDERS) {
        throw new ValidationError(`invalid request: orders must hold at most ${MAX_SYNC_ORDERS} orders`);
      }
      return syncChunk(workspaceId, list, options);
    },

    async get(workspaceId: string, id: string): Promise<Order> {
      const row = await orderStore.findById(knex, workspaceId, id);
      if (!row) throw new NotFoundError();
      return (await orderStore.toOrders(knex, [row]))[0]!;
    },

    async list(workspaceId: string, query: unknown, paging: Paging): Promise<Page<Order>> {
      const filter = parseInput(orderListQuerySchema, query);
      const db = reader();
      const { rows, total } = await orderStore.list(db, workspaceId, filter, paging);
      return toPage(await orderStore.toOrders(db, rows), total, paging);
    },
  };
}

export type OrderService = ReturnType<typeof createOrderService>;
