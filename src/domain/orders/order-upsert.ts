import type { Knex } from 'knex';
import type { Dialect } from '../db/dialect/dialect.js';
import { uuidv7 } from '../shared/ids.js';
import { compositeKey } from '../shared/keys.js';
import { contactChangedFact, type TriggerFact, type TriggerOutbox } from '../triggers/trigger-outbox.js';
import { ActivityDelta, type OrderActivity } from '../recommendations/activity-delta.js';
import type { ProductActivity } from '../recommendations/product-activity.js';
import { orderNumberKey, type OrderItem } from './order.schema.js';
import { createOrderStore, type OrderRow, type RefundSum } from './order-store.js';
import { refundedInShopMoney } from './shop-money.js';
import type { TableGrowth } from '../db/table-growth.js';

/**
 * The set-based upsert engine behind the webhook's order events and historical sync: orders keyed by their
 * external id, attributed once when they first arrive, updated in place afterwards, with lifetime revenue,
 * triggers and the recommendation aggregates kept in the same transaction.
 */

/** What the last-touch engine credits an order to (docs/api/orders.md, Attribution). */
export interface OrderAttribution {
  campaign_id: string | null;
  flow_id: string | null;
  message_id: string | null;
  variant: number | null;
  kind: 'click' | 'open';
}

export type AttributeOrders = (
  trx: Knex.Transaction,
  workspaceId: string,
  orders: Array<{ id: string; contactId: string; orderedAt: number }>,
) => Promise<Map<string, OrderAttribution | null>>;

/** Which webhook order event (or a historical sync row, or a shop platform's snapshot) a change comes from. */
export type OrderChangeKind = 'placed' | 'fulfilled' | 'cancelled' | 'refunded' | 'sync' | 'snapshot';

/**
 * What a shop platform (Shopify, WooCommerce) says of an order beside its fields: orders there are snapshots,
 * which may arrive twice or out of order (docs/platforms/README.md, Orders).
 */
export interface OrderSnapshot {
  /**
   * Refunds by the platform's id, added to those seen before: refunded is their sum in the shop's currency, capped
   * at the total. `currency`: what the refund was made in when not the order's (Shopify refunds in the currency paid).
   * `at`: when the platform made it (null: it does not say, then the change's time); the first time seen is kept.
   */
  refunds: Array<{ id: string; amount: number; currency?: string | null; at: number | null }>;
  /**
   * When the order was cancelled (the platform's time, else when emk received the cancellation); null: it is not.
   * Sticky: a cancelled order never comes back, and keeps the first time it was cancelled at.
   */
  cancelledAt: number | null;
  /** The platform's last-modified time: a snapshot older than the stored one changes no field. Null: unknown. */
  updatedAt: number | null;
  /** False: no new order is stored (an unpaid WooCommerce order, refunds or a cancellation of an unseen order). */
  storesNew: boolean;
}

/** A webhook or sync write to the order with this external id (its upsert key). */
export interface OrderChange {
  workspaceId: string;
  /**
   * The owner if the order is new; null: a shop platform's order of nobody emk knows, kept without a contact
   * (docs/platforms/README.md, Orders without an email). An existing order keeps its contact (docs/api/webhook.md,
   * rule 6); one without a contact joins the owner when the owner holds its `customerRef` (`ownerHoldsRef`).
   */
  contactId: string | null;
  /** A shop platform's customer of the order (`shopify:<id>`), when it names one: kept on an order without a contact. */
  customerRef?: string | null;
  /** The owner is the contact of `customerRef` (found by it, or written with it by this delivery). */
  ownerHoldsRef?: boolean;
  upsertKey: string;
  origin: 'webhook' | 'sync';
  platform: string;
  integrationId: string | null;
  /**
   * The owner was created by this transaction: no message has reached it, so it has no engagement and a new
   * order of it has nothing to attribute (no query).
   */
  ownerCreated?: boolean;
  kind: OrderChangeKind;
  /** Kind `snapshot` only. */
  snapshot?: OrderSnapshot;
  fields: {
    order_number?: string | null;
    total_amount?: number;
    currency?: string;
    status?: string;
    ordered_at?: number;
    items?: OrderItem[];
    /** Refunded so far (cumulative). */
    refunded_amount?: number;
    /** When the order was cancelled (a sync row's `cancelled_at`). */
    cancelled_at?: number;
    /** This refund alone, added to what was refunded before. */
    refund_amount?: number;
    /** What the buyer paid in, when not the shop's currency (`total_amount` is in the shop's). */
    presentment_currency?: string | null;
    presentment_total_amount?: number | null;
  };
  at: number;
}

export type OrderChangeResult =
  | { orderId: string; outcome: 'inserted' | 'updated' | 'unchanged' }
  | { outcome: 'invalid'; error: string }
  /** A snapshot that stores no new order (`storesNew` false) of an order not stored. */
  | { outcome: 'not_stored' };

/**
 * The one way an order row is built: what every new order starts with, whatever its origin. Every field is
 * written out: built by rest and spread, the rows took a visible share of the main thread in a CPU profile of
 * `emk sync-orders`, which builds one per order
 * (docs/performance.md#eighth-pass-statistics-from-the-first-thousand-rows-the-outboxs-contact-index).
 */
export function orderRow(
  fields: Pick<OrderRow, 'id' | 'workspace_id' | 'contact_id' | 'platform' | 'integration_id' | 'origin' | 'upsert_key' | 'external_id' | 'order_number' | 'total_amount' | 'currency' | 'status' | 'ordered_at' | 'refunded_amount' | 'cancelled_at'> &
    Partial<Pick<OrderRow, 'platform_updated_at' | 'presentment_currency' | 'presentment_total_amount' | 'customer_ref'>> & { at: number },
): OrderRow {
  return {
    id: fields.id,
    workspace_id: fields.workspace_id,
    contact_id: fields.contact_id,
    platform: fields.platform,
    integration_id: fields.integration_id,
    origin: fields.origin,
    upsert_key: fields.upsert_key,
    external_id: fields.external_id,
    order_number: fields.order_number,
    order_number_key: orderNumberKey(fields.order_number),
    total_amount: fields.total_amount,
    currency: fields.currency,
    status: fields.status,
    ordered_at: fields.ordered_at,
    attributed_campaign_id: null,
    attributed_flow_id: null,
    attributed_message_id: null,
    attributed_variant: null,
    attribution_kind: null,
    shipping_status: null,
    refunded_amount: fields.refunded_amount,
    cancelled_at: fields.cancelled_at,
    presentment_currency: fields.presentment_currency ?? null,
    presentment_total_amount: fields.presentment_total_amount ?? null,
    platform_updated_at: fields.platform_updated_at ?? null,
    customer_ref: fields.customer_ref ?? null,
    created_at: fields.at,
    updated_at: fields.at,
  };
}

/** The `order_placed` trigger of a stored order. */
export const orderPlacedFact = (row: OrderRow): TriggerFact => ({
  workspaceId: row.workspace_id,
  triggerType: 'order_placed',
  contactId: row.contact_id,
  subjectType: 'order',
  subjectId: row.id,
  source: row.platform,
  at: row.created_at,
});

/** What an order counts in the recommendation aggregates. */
export const salesOf = (row: Pick<OrderRow, 'workspace_id' | 'ordered_at' | 'cancelled_at'>, items: OrderItem[]): OrderActivity => ({
  workspaceId: row.workspace_id,
  orderedAt: row.ordered_at,
  items,
  cancelled: row.cancelled_at !== null,
});

const sameItems = (a: OrderItem[], b: OrderItem[]) => JSON.stringify(a) === JSON.stringify(b);

/**
 * When a change says the order was cancelled; undefined when it does not. A sync row's and a snapshot's own time
 * (the platform's), else when the change arrived (the website webhook's `cancelled_order`).
 */
const cancellationOf = (change: OrderChange): number | undefined =>
  change.kind === 'cancelled' ? change.at
  : change.kind === 'sync' ? change.fields.cancelled_at
  : (change.snapshot?.cancelledAt ?? undefined);

/** Splits changes into rounds so each round holds one change per order, applied in arrival order. */
function rounds(changes: OrderChange[]): number[][] {
  const seen = new Map<string, number>();
  const out: number[][] = [];
  changes.forEach((change, i) => {
    const key = compositeKey(change.workspaceId, change.upsertKey);
    const round = seen.get(key) ?? 0;
    seen.set(key, round + 1);
    (out[round] ??= []).push(i);
  });
  return out;
}

export function createOrderUpsert(deps: {
  dialect: Dialect;
  outbox: TriggerOutbox;
  attributeOrders: AttributeOrders;
  /** Units sold and co-occurrence feed the recommendation aggregates, in the same transaction. */
  activity: ProductActivity;
  /** New orders are reported as they are written (planner statistics on PostgreSQL). */
  tableGrowth: TableGrowth;
}) {
  const { outbox, attributeOrders, activity, tableGrowth } = deps;
  const orderStore = createOrderStore(deps.dialect);

  /**
   * Whether a change's fields apply: always, but for a platform snapshot older than the one stored (its refunds
   * and cancellation still count).
   */
  const fieldsApply = (row: OrderRow, change: OrderChange) =>
    change.snapshot?.updatedAt == null || row.platform_updated_at === null || change.snapshot.updatedAt >= row.platform_updated_at;

  /**
   * The stored row after applying a change to an existing order; null when nothing differs. `refundSums`: the
   * order's refunds by id (snapshots), summed per currency.
   */
  function patchFor(row: OrderRow, storedItems: OrderItem[], change: OrderChange, refundSums: RefundSum[]): Partial<OrderRow> | null {
    const applies = fieldsApply(row, change);
    const f = applies ? change.fields : {};
    const patch: Partial<OrderRow> = {};
    const total = f.total_amount ?? row.total_amount;
    if (f.total_amount !== undefined && f.total_amount !== row.total_amount) patch.total_amount = f.total_amount;
    if (f.currency !== undefined && f.currency !== row.currency) patch.currency = f.currency;
    if (f.presentment_currency !== undefined && f.presentment_currency !== row.presentment_currency) patch.presentment_currency = f.presentment_currency;
    if (f.presentment_total_amount !== undefined && f.presentment_total_amount !== row.presentment_total_amount) {
      patch.presentment_total_amount = f.presentment_total_amount;
    }
    const refunds = refundedInShopMoney(refundSums, { ...row, ...patch, total_amount: total });
    if (f.order_number !== undefined && f.order_number !== row.order_number) {
      patch.order_number = f.order_number;
      patch.order_number_key = orderNumberKey(f.order_number);
    }
    // Cancellation is sticky: a later change (a sync row without `cancelled_at`, a snapshot) never takes it back.
    const cancelledAt = cancellationOf(change);
    if (cancelledAt !== undefined && row.cancelled_at === null) patch.cancelled_at = cancelledAt;
    // What was refunded never exceeds the total, also when a correction lowers the total below it. Refunds are never
    // undone: a sync row's cumulative amount and a snapshot's refunds by id only raise what is stored (an older file
    // must not undo a newer refund; what another origin recorded as refunded stays).
    const refunded =
      change.kind === 'refunded' ? (f.refunded_amount ?? (f.refund_amount !== undefined ? row.refunded_amount + f.refund_amount : total))
      : change.kind === 'sync' && f.refunded_amount !== undefined ? Math.max(row.refunded_amount, f.refunded_amount)
      : change.kind === 'snapshot' ? Math.max(refunds, row.refunded_amount)
      : row.refunded_amount;
    const capped = Math.min(Math.max(refunded, 0), total);
    if (capped !== row.refunded_amount) patch.refunded_amount = capped;
    // The merchant's status is stored as sent; cancellation and refunds live in their own fields.
    if (f.status !== undefined && f.status !== row.status) patch.status = f.status;
    const updatedAt = change.snapshot?.updatedAt ?? null;
    if (applies && updatedAt !== null && updatedAt !== row.platform_updated_at) patch.platform_updated_at = updatedAt;
    // An order without a contact joins the contact holding the platform customer it names, else keeps the customer
    // for the contact that appears with it later. An order with a contact never moves.
    if (row.contact_id === null && change.customerRef) {
      if (change.ownerHoldsRef && change.contactId !== null) Object.assign(patch, { contact_id: change.contactId, customer_ref: null });
      else if (change.customerRef !== row.customer_ref) patch.customer_ref = change.customerRef;
    }
    const itemsChanged = f.items !== undefined && !sameItems(f.items, storedItems);
    return Object.keys(patch).length > 0 || itemsChanged ? patch : null;
  }

  function newRow(change: OrderChange, refundSums: RefundSum[]): OrderRow | null {
    const f = change.fields;
    if (f.total_amount === undefined) return null;
    const total = f.total_amount;
    const { snapshot } = change;
    const presentment = { presentment_currency: f.presentment_currency ?? null, presentment_total_amount: f.presentment_total_amount ?? null };
    const refunds = refundedInShopMoney(refundSums, { currency: f.currency ?? '', total_amount: total, ...presentment });
    const refunded =
      snapshot ? refunds
      : change.kind === 'refunded' ? (f.refunded_amount ?? f.refund_amount ?? total)
      : change.kind === 'sync' ? (f.refunded_amount ?? 0)
      : 0;
    return orderRow({
      id: uuidv7(change.at),
      workspace_id: change.workspaceId,
      contact_id: change.contactId,
      platform: change.platform,
      integration_id: change.integrationId,
      origin: change.origin,
      upsert_key: change.upsertKey,
      external_id: change.upsertKey,
      order_number: f.order_number ?? null,
      total_amount: total,
      currency: f.currency ?? '',
      status: f.status ?? '',
      ordered_at: f.ordered_at ?? change.at,
      refunded_amount: Math.min(Math.max(refunded, 0), total),
      cancelled_at: cancellationOf(change) ?? null,
      platform_updated_at: snapshot?.updatedAt ?? null,
      ...presentment,
      customer_ref: change.contactId === null ? (change.customerRef ?? null) : null,
      at: change.at,
    });
  }

  /**
   * Records the refunds snapshots of one round carry (a refund id already stored keeps its amount) and returns
   * the sum of every refund stored for each of their orders, by upsert key.
   */
  async function refundSums(trx: Knex.Transaction, workspaceId: string, changes: OrderChange[]): Promise<Map<string, RefundSum[]>> {
    const snapshots = changes.filter((c) => c.snapshot);
    if (snapshots.length === 0) return new Map();
    await orderStore.recordRefunds(
      trx,
      snapshots.flatMap((c) => c.snapshot!.refunds.map((r) => ({ workspace_id: workspaceId, order_key: c.upsertKey, refund_id: r.id, amount: r.amount, currency: r.currency ?? null, refunded_at: r.at ?? c.at, created_at: c.at }))),
    );
    return orderStore.refundTotals(trx, workspaceId, snapshots.map((c) => c.upsertKey));
  }

  /** One round: each order key at most once. Returns the keys that lost an insert race (to retry as updates). */
  async function applyRound(trx: Knex.Transaction, changes: OrderChange[], positions: number[], results: OrderChangeResult[]) {
    const byWorkspace = new Map<string, number[]>();
    for (const i of positions) {
      const list = byWorkspace.get(changes[i]!.workspaceId) ?? [];
      list.push(i);
      byWorkspace.set(changes[i]!.workspaceId, list);
    }
    const lost: number[] = [];
    const facts: TriggerFact[] = [];
    // Order changes that fire no order_placed (updates, refunds, cancellations, synced history) still change
    // what segments count: one contact_changed per contact.
    const ordersChanged = new Map<string, TriggerFact>();
    const ordersChangedFor = (row: Pick<OrderRow, 'workspace_id' | 'contact_id'>, at: number) => {
      if (row.contact_id !== null && !ordersChanged.has(row.contact_id)) ordersChanged.set(row.contact_id, contactChangedFact(row.workspace_id, row.contact_id, 'orders', at));
    };
    const sales = new ActivityDelta();
    for (const [workspaceId, indexes] of byWorkspace) {
      const touchedContacts: string[] = [];
      const createdHere = new Set(indexes.flatMap((i) => (changes[i]!.ownerCreated ? [changes[i]!.contactId!] : [])));
      const existing = new Map(
        (await orderStore.findByUpsertKeys(trx, workspaceId, indexes.map((i) => changes[i]!.upsertKey))).map((r) => [r.upsert_key!, r]),
      );
      const storedItems = await orderStore.itemsByOrder(
        trx,
        [...existing.values()].map((r) => r.id),
      );
      const refunds = await refundSums(trx, workspaceId, indexes.map((i) => changes[i]!));

      const fresh: Array<{ index: number; row: OrderRow }> = [];
      for (const i of indexes) {
        const change = changes[i]!;
        const row = existing.get(change.upsertKey);
        const refunded = refunds.get(change.upsertKey) ?? [];
        if (!row) {
          const created = change.snapshot?.storesNew === false ? null : newRow(change, refunded);
          if (created) fresh.push({ index: i, row: created });
          else if (change.snapshot) results[i] = { outcome: 'not_stored' };
          else results[i] = { outcome: 'invalid', error: 'total_amount is required for a new order' };
          continue;
        }
        const patch = patchFor(row, storedItems.get(row.id) ?? [], change, refunded);
        if (!patch) {
          results[i] = { orderId: row.id, outcome: 'unchanged' };
          continue;
        }
        await orderStore.update(trx, row.id, { ...patch, updated_at: change.at });
        const items = fieldsApply(row, change) ? change.fields.items : undefined;
        if (items !== undefined) await orderStore.replaceItems(trx, row, items);
        // What the order counted before comes out of the aggregates; what it counts now goes in.
        const before = storedItems.get(row.id) ?? [];
        const after = { ...row, ...patch };
        sales.order(salesOf(row, before), -1).order(salesOf(after, items ?? before), 1);
        // An order without a contact counts in nobody's totals; one that joined a contact counts in its from now on.
        if (after.contact_id !== null) touchedContacts.push(after.contact_id);
        ordersChangedFor(after, change.at);
        results[i] = { orderId: row.id, outcome: 'updated' };
      }
      if (fresh.length === 0) {
        await orderStore.refreshContactTotals(trx, workspaceId, touchedContacts, createdHere);
        continue;
      }

      // Attribution runs once, when the order first arrives, from its ordered_at.
      const credited = await attributeOrders(
        trx,
        workspaceId,
        fresh.flatMap(({ index, row }) =>
          changes[index]!.ownerCreated || row.contact_id === null ? [] : [{ id: row.id, contactId: row.contact_id, orderedAt: row.ordered_at }],
        ),
      );
      for (const { row } of fresh) {
        const credit = credited.get(row.id);
        if (!credit) continue;
        row.attributed_campaign_id = credit.campaign_id;
        row.attributed_flow_id = credit.flow_id;
        row.attributed_message_id = credit.message_id;
        row.attributed_variant = credit.variant;
        row.attribution_kind = credit.kind;
      }
      const insertedIds = await orderStore.insertIgnoringConflicts(
        trx,
        fresh.map((f) => f.row),
        new Map(fresh.map(({ index, row }) => [row.id, changes[index]!.fields.items ?? []])),
      );
      for (const { index, row } of fresh) {
        if (!insertedIds.has(row.id)) {
          lost.push(index);
          continue;
        }
        results[index] = { orderId: row.id, outcome: 'inserted' };
        sales.order(salesOf(row, changes[index]!.fields.items ?? []), 1);
        // An order without a contact counts in the store's revenue only: nobody's totals, segments or flows.
        if (row.contact_id === null) continue;
        touchedContacts.push(row.contact_id);
        // order_placed flows start for live webhook orders only: not for a cancelled order, and not for a
        // historical backfill (a sync must not mail customers about last year's orders).
        if (row.origin === 'webhook' && row.cancelled_at === null) facts.push(orderPlacedFact(row));
        else ordersChangedFor(row, row.created_at);
      }
      await orderStore.refreshContactTotals(trx, workspaceId, touchedContacts, createdHere);
    }
    await outbox.record(trx, [...facts, ...ordersChanged.values()]);
    await activity.record(trx, sales);
    return lost;
  }

  /**
   * Webhook and historical-sync writes, set-based: orders are upserted by external id, a new order is
   * attributed once and fires `order_placed`, an existing one is updated in place and keeps its contact, and
   * every touched contact's lifetime revenue is recomputed from its orders.
   */
  async function applyOrderChanges(trx: Knex.Transaction, changes: OrderChange[]): Promise<OrderChangeResult[]> {
    const results: OrderChangeResult[] = new Array(changes.length);
    for (const positions of rounds(changes)) {
      let pending = positions;
      // An insert lost to a concurrent writer is applied again, now as an update of the winner's row.
      for (let attempt = 0; pending.length > 0 && attempt < 3; attempt++) {
        pending = await applyRound(trx, changes, pending, results);
      }
      if (pending.length > 0) throw new Error('order upsert did not settle');
    }
    // Every later write looks orders up by key and by contact. Counted before the commit: a rolled-back write
    // (a dry run) only brings an analysis forward.
    tableGrowth.added('orders', results.filter((r) => r.outcome === 'inserted').length);
    return results;
  }

  return { applyOrderChanges };
}

export type OrderUpsert = ReturnType<typeof createOrderUpsert>;
