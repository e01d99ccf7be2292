import { chunk, chunkSizeFor, insertRows } from '../db/bulk.js';
import { bulkInsert, bulkInsertIgnoringConflicts } from '../db/bulk-insert.js';
import { deferWrite } from '../db/deferred-writes.js';
import type { Dialect } from '../db/dialect/dialect.js';
import { NET_REVENUE_SQL } from './net-revenue.js';
import { selectPage } from '../db/page.js';
import type { Paging } from '../shared/paging.js';
import { DAY_MS, toIso } from '../shared/time.js';
import type { Order, OrderItem } from './order.schema.js';
import type { Db } from '../db/database.js';

export type OrderOrigin = 'webhook' | 'api' | 'sync';

/** Refunds of one order made in one currency (null: the order's own). */
export interface RefundSum {
  currency: string | null;
  amount: number;
}

export interface OrderRow {
  id: string;
  workspace_id: string;
  /** Null: a shop platform's order of a buyer emk could not tie to a contact (docs/platforms/README.md, Orders without an email). */
  contact_id: string | null;
  platform: string;
  integration_id: string | null;
  origin: OrderOrigin;
  upsert_key: string | null;
  external_id: string | null;
  order_number: string | null;
  order_number_key: string | null;
  total_amount: number;
  currency: string;
  status: string;
  ordered_at: number;
  attributed_campaign_id: string | null;
  attributed_flow_id: string | null;
  attributed_message_id: string | null;
  /** The A/B variant of the credited message, kept with the order (the message goes when its contact is erased). */
  attributed_variant: number | null;
  attribution_kind: string | null;
  shipping_status: string | null;
  refunded_amount: number;
  cancelled_at: number | null;
  /** What the buyer paid in, when not the shop's currency; `total_amount` is in the shop's. */
  presentment_currency: string | null;
  presentment_total_amount: number | null;
  /** A shop platform's last-modified time of the stored snapshot (null for other origins). */
  platform_updated_at: number | null;
  /** The platform's customer (`shopify:<id>`) of an order without a contact, which joins the contact that appears with it. */
  customer_ref: string | null;
  created_at: number;
  updated_at: number;
}

const KEYS_PER_QUERY = 5_000;

export function createOrderStore(dialect: Dialect) {
  const fromRow = (raw: Record<string, unknown>): OrderRow => ({
    ...(raw as unknown as OrderRow),
    total_amount: dialect.readNumber(raw.total_amount),
    refunded_amount: dialect.readNumber(raw.refunded_amount),
    presentment_currency: (raw.presentment_currency as string | null | undefined) ?? null,
    presentment_total_amount: dialect.readNullableNumber(raw.presentment_total_amount ?? null),
  });

  async function itemsOf(db: Db, orderIds: string[]): Promise<Map<string, OrderItem[]>> {
    const byOrder = new Map<string, OrderItem[]>();
    for (const part of chunk(orderIds, KEYS_PER_QUERY)) {
      const rows = await db('order_items').whereIn('order_id', part).orderBy(['order_id', 'position']);
      for (const row of rows) {
        const list = byOrder.get(row.order_id) ?? [];
        list.push({
          external_id: row.external_id,
          title: row.title,
          quantity: dialect.readNumber(row.quantity),
          price: dialect.readNullableNumber(row.price),
        });
        byOrder.set(row.order_id, list);
      }
    }
    return byOrder;
  }

  return {
    /** Orders credited to one campaign or flow: how many, and their net revenue (reports). */
    async attributedTotals(db: Db, workspaceId: string, to: { campaignId: string } | { flowId: string }): Promise<{ orders: number; revenue: number }> {
      const column = 'campaignId' in to ? 'attributed_campaign_id' : 'attributed_flow_id';
      const row = await db('orders')
        .where({ workspace_id: workspaceId, [column]: 'campaignId' in to ? to.campaignId : to.flowId })
        .select(db.raw('COUNT(*) AS orders'), db.raw(`COALESCE(ROUND(SUM(${NET_REVENUE_SQL}), 4), 0) AS revenue`))
        .first();
      return { orders: Number(row?.orders ?? 0), revenue: dialect.readNumber(row?.revenue) };
    },

    /** The workspace's orders placed at or after `since`: a range of its (workspace_id, ordered_at) index. */
    async countSince(db: Db, workspaceId: string, since: number): Promise<number> {
      const [{ n }] = (await db('orders').where({ workspace_id: workspaceId }).where('ordered_at', '>=', since).count({ n: '*' })) as [{ n: unknown }];
      return dialect.readNumber(n);
    },

    /**
     * Orders credited to one campaign or flow per day (UTC, as days since the epoch) placed at or after `since`:
     * how many and their net revenue, summed as `attributedTotals` sums them.
     */
    async attributedByDay(db: Db, workspaceId: string, to: { campaignId: string } | { flowId: string }, since: number) {
      const column = 'campaignId' in to ? 'attributed_campaign_id' : 'attributed_flow_id';
      const rows = await db('orders')
        .where({ workspace_id: workspaceId, [column]: 'campaignId' in to ? to.campaignId : to.flowId })
        .where('ordered_at', '>=', since)
        .groupBy('day')
        .select(db.raw(`ordered_at / ${DAY_MS} AS day`), db.raw('COUNT(*) AS orders'), db.raw(`COALESCE(ROUND(SUM(${NET_REVENUE_SQL}), 4), 0) AS revenue`));
      return (rows as Array<Record<string, unknown>>).map((row) => ({ day: dialect.readNumber(row.day), orders: dialect.readNumber(row.orders), revenue: dialect.readNumber(row.revenue) }));
    },

    /** Net revenue of the orders credited to an A/B campaign's messages, by the variant each message got. */
    async revenueByVariant(db: Db, workspaceId: string, campaignId: string): Promise<Map<number, number>> {
      const rows: Array<Record<string, unknown>> = await db('orders')
        .where({ workspace_id: workspaceId, attributed_campaign_id: campaignId })
        .whereNotNull('attributed_variant')
        .groupBy('attributed_variant')
        .select('attributed_variant as variant', db.raw(`COALESCE(ROUND(SUM(${NET_REVENUE_SQL}), 4), 0) AS revenue`));
      return new Map(rows.map((row) => [dialect.readNumber(row.variant), dialect.readNumber(row.revenue)]));
    },

    /** Net revenue per campaign and flow of the orders placed in [from, to), per currency (GET /reports/revenue). */
    async revenueByAttribution(db: Db, workspaceId: string, from: number, to: number) {
      const rows = await db('orders')
        .where({ workspace_id: workspaceId })
        .where('ordered_at', '>=', from)
        .where('ordered_at', '<', to)
        .where((q) => q.whereNotNull('attributed_campaign_id').orWhereNotNull('attributed_flow_id'))
        .groupBy('attributed_campaign_id', 'attributed_flow_id', 'currency')
        .select(
          'attributed_campaign_id as campaign_id',
          'attributed_flow_id as flow_id',
          'currency',
          db.raw('COUNT(*) AS orders'),
          db.raw(`ROUND(SUM(${NET_REVENUE_SQL}), 4) AS revenue`),
        );
      return rows.map((row: Record<string, unknown>) => ({
        campaign_id: (row.campaign_id as string | null) ?? null,
        flow_id: (row.flow_id as string | null) ?? null,
        currency: row.currency as string,
        orders: Number(row.orders),
        revenue: dialect.readNumber(row.revenue),
      }));
    },

    /** Net revenue of every order placed in [from, to), per currency: the store's own, contact or not (GET /reports/revenue `total`). */
    async revenueByCurrency(db: Db, workspaceId: string, from: number, to: number) {
      const rows: Array<Record<string, unknown>> = await db('orders')
        .where({ workspace_id: workspaceId })
        .where('ordered_at', '>=', from)
        .where('ordered_at', '<', to)
        .groupBy('currency')
        .select('currency', db.raw('COUNT(*) AS orders'), db.raw(`ROUND(SUM(${NET_REVENUE_SQL}), 4) AS revenue`));
      return rows.map((row) => ({ currency: row.currency as string, orders: Number(row.orders), revenue: dialect.readNumber(row.revenue) }));
    },

    /** The orders without a contact that name these platform customers, locked for the caller's update. */
    async contactlessByCustomerRefs(db: Db, workspaceId: string, refs: string[]): Promise<Array<{ id: string; customer_ref: string }>> {
      const rows: Array<{ id: string; customer_ref: string }> = [];
      for (const part of chunk([...new Set(refs)].sort(), KEYS_PER_QUERY)) {
        const query = db('orders').where({ workspace_id: workspaceId }).whereIn('customer_ref', part).whereNull('contact_id').orderBy('id').select('id', 'customer_ref');
        rows.push(...(await dialect.forUpdate(query)));
      }
      return rows;
    },

    /** Orders without a contact become the contact's (their customer reference is no longer needed). */
    async joinContact(db: Db, ids: string[], contactId: string, now: number): Promise<void> {
      for (const part of chunk(ids, KEYS_PER_QUERY)) {
        await db('orders').whereIn('id', part).whereNull('contact_id').update({ contact_id: contactId, customer_ref: null, updated_at: now });
      }
    },

    fromRow,
    itemsByOrder: itemsOf,

    /**
     * Inserts orders whose upsert key is still free; a key taken meanwhile by another writer is skipped.
     * Returns the ids actually inserted (their items are inserted too).
     */
    async insertIgnoringConflicts(db: Db, rows: OrderRow[], items: Map<string, OrderItem[]>): Promise<Set<string>> {
      const inserted = await bulkInsertIgnoringConflicts(db, dialect, 'orders', rows, ['workspace_id', 'upsert_key']);
      await this.insertItems(
        db,
        rows.filter((r) => inserted.has(r.id)),
        items,
      );
      return inserted;
    },

    /** Stored orders with these upsert keys; locked until the transaction ends (PostgreSQL). */
    async findByUpsertKeys(db: Db, workspaceId: string, keys: string[]): Promise<OrderRow[]> {
      const rows: OrderRow[] = [];
      for (const part of chunk([...keys].sort(), KEYS_PER_QUERY)) {
        const query = db('orders').where({ workspace_id: workspaceId }).whereIn('upsert_key', part).orderBy('upsert_key');
        rows.push(...(await dialect.forUpdate(query)).map(fromRow));
      }
      return rows;
    },

    async insert(db: Db, rows: OrderRow[], items: Map<string, OrderItem[]>): Promise<void> {
      await insertRows(db, dialect, 'orders', rows as unknown as Record<string, unknown>[]);
      await this.insertItems(db, rows, items);
    },

    /** Held until the transaction's next statement: item rows are new rows of orders written just before. */
    async insertItems(db: Db, orders: Array<Pick<OrderRow, 'id' | 'workspace_id' | 'ordered_at'>>, items: Map<string, OrderItem[]>) {
      const itemRows = orders.flatMap((order) =>
        (items.get(order.id) ?? []).map((item, position) => ({
          order_id: order.id,
          workspace_id: order.workspace_id,
          external_id: item.external_id,
          title: item.title,
          quantity: item.quantity,
          price: item.price,
          position,
          ordered_at: order.ordered_at,
        })),
      );
      await bulkInsert(db, dialect, 'order_items', itemRows, [], { hold: true });
    },

    async replaceItems(db: Db, order: Pick<OrderRow, 'id' | 'workspace_id' | 'ordered_at'>, items: OrderItem[]) {
      await db('order_items').where({ order_id: order.id }).delete();
      await this.insertItems(db, [order], new Map([[order.id, items]]));
    },

    /**
     * Refunds by the platform's id; one already stored keeps its amount and time. Rows in key order (no deadlocks).
     * `refunded_at`: the platform's time of the refund (else when emk first saw it); `created_at`: when emk stored it.
     */
    async recordRefunds(
      db: Db,
      refunds: Array<{ workspace_id: string; order_key: string; refund_id: string; amount: number; currency: string | null; refunded_at: number; created_at: number }>,
    ): Promise<void> {
      const sorted = [...refunds].sort((a, b) => (a.order_key + '\u0000' + a.refund_id < b.order_key + '\u0000' + b.refund_id ? -1 : 1));
      for (const part of chunk(sorted, chunkSizeFor(dialect, 5))) {
        await db('order_refunds').insert(part).onConflict(['workspace_id', 'order_key', 'refund_id']).ignore();
      }
    },

    /**
     * The sum of the stored refunds of each order per currency they were made in (null: the order's own), by upsert
     * key (keys without refunds are absent).
     */
    async refundTotals(db: Db, workspaceId: string, orderKeys: string[]): Promise<Map<string, RefundSum[]>> {
      const totals = new Map<string, RefundSum[]>();
      for (const part of chunk([...new Set(orderKeys)], KEYS_PER_QUERY)) {
        const rows = await db('order_refunds')
          .where({ workspace_id: workspaceId })
          .whereIn('order_key', part)
          .groupBy('order_key', 'currency')
          .select('order_key', 'currency', db.raw('ROUND(SUM(amount), 4) AS refunded'));
        for (const row of rows as Array<{ order_key: string; currency: string | null; refunded: unknown }>) {
          const list = totals.get(row.order_key) ?? [];
          list.push({ currency: row.currency, amount: dialect.readNumber(row.refunded) });
          totals.set(row.order_key, list);
        }
      }
      return totals;
    },

    async update(db: Db, id: string, patch: Partial<OrderRow>): Promise<void> {
      await db('orders').where({ id }).update(patch);
    },

    /**
     * Sets each touched contact's lifetime revenue and order count from its stored orders, in one statement:
     * the totals equal the sum over the orders by construction, whatever mix of writes came before, concurrent
     * ones included. The UPDATE is held until the transaction's next statement (its COMMIT, usually), so it runs
     * after every write before it. `createdHere`: contacts this transaction created, which no other can have
     * written orders for (their rows are not yet visible to it).
     */
    async refreshContactTotals(db: Db, workspaceId: string, contactIds: string[], createdHere: ReadonlySet<string> = new Set()): Promise<void> {
      for (const part of chunk([...new Set(contactIds)].sort(), KEYS_PER_QUERY)) {
        if (part.length === 0) continue;
        // The contacts are locked first, so the totals below are read after every concurrent order write to them
        // has committed: under READ COMMITTED an UPDATE that waited for another writer's row lock would keep the
        // totals of its own, older snapshot and drop that writer's order. A contact created here is locked by
        // its insert already.
        const toLock = part.filter((id) => !createdHere.has(id));
        if (toLock.length > 0) await dialect.lockRows(dialect.forUpdate(db('contacts').whereIn('id', toLock).orderBy('id').select('id')));
        // UPDATE … FROM (PostgreSQL, SQLite 3.33+): one aggregate over the contacts' orders, not a subquery per row.
        await deferWrite(dialect, db, db.raw(
          `UPDATE contacts SET lifetime_revenue = totals.revenue, orders_count = totals.orders
           FROM (SELECT contact_id, ROUND(SUM(${NET_REVENUE_SQL}), 4) AS revenue, COUNT(*) AS orders
                 FROM orders WHERE workspace_id = ? AND contact_id IN (${part.map(() => '?').join(', ')})
                 GROUP BY contact_id) AS totals
           WHERE contacts.id = totals.contact_id`,
          [workspaceId, ...part],
        ));
      }
    },

    /** Orders by id (a flow's trigger orders). */
    async findByIds(db: Db, ids: string[]): Promise<OrderRow[]> {
      const out: OrderRow[] = [];
      for (const part of chunk(ids, 500)) out.push(...(await db('orders').whereIn('id', part)).map(fromRow));
      return out;
    },

    async findById(db: Db, workspaceId: string, id: string): Promise<OrderRow | null> {
      const row = await db('orders').where({ workspace_id: workspaceId, id }).first();
      return row ? fromRow(row) : null;
    },

    async list(db: Db, workspaceId: string, filter: { contact_id?: string; external_id?: string }, paging: Paging) {
      const base = db('orders').where({ workspace_id: workspaceId });
      if (filter.contact_id) base.where({ contact_id: filter.contact_id });
      if (filter.external_id) base.where({ external_id: filter.external_id });
      return selectPage(
        base,
        [
          { column: 'ordered_at', order: 'desc' },
          { column: 'id', order: 'desc' },
        ],
        paging,
        fromRow,
      );
    },

    /** Management records, with their items in one query. */
    async toOrders(db: Db, rows: OrderRow[]): Promise<Order[]> {
      const items = await itemsOf(
        db,
        rows.map((r) => r.id),
      );
      return rows.map((row) => ({
        id: row.id,
        contact_id: row.contact_id,
        platform: row.platform,
        order_number: row.order_number,
        external_id: row.external_id,
        total_amount: row.total_amount,
        currency: row.currency,
        status: row.status,
        ordered_at: toIso(row.ordered_at)!,
        attributed_campaign_id: row.attributed_campaign_id,
        attributed_flow_id: row.attributed_flow_id,
        shipping_status: row.shipping_status,
        refunded_amount: row.refunded_amount,
        cancelled_at: toIso(row.cancelled_at),
        presentment_currency: row.presentment_currency,
        presentment_total_amount: row.presentment_total_amount,
        items: items.get(row.id) ?? [],
        created_at: toIso(row.created_at)!,
      }));
    },
  };
}

export type OrderStore = ReturnType<typeof createOrderStore>;
