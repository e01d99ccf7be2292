import { chunk } from '../db/bulk.js';
import { orderNumberKey } from '../orders/order.schema.js';
import type { Db } from '../db/database.js';

/** The order a shipment or order update refers to. */
export interface OrderMatch {
  id: string;
  /** Null: a shop platform's order kept without a contact. */
  contact_id: string | null;
  shipping_status: string | null;
}

interface Candidate extends OrderMatch {
  external_id: string | null;
  order_number_key: string | null;
  ordered_at: number | string;
}

const REFS_PER_QUERY = 5_000;

/** Newest order first: the one a reference means when several orders carry it. */
const newestFirst = (a: Candidate, b: Candidate) =>
  Number(b.ordered_at) - Number(a.ordered_at) || (a.id < b.id ? 1 : a.id > b.id ? -1 : 0);

/**
 * Shipping facts live on the orders table (its `shipping_status` column); this store reads and writes only
 * what shipments need of it, through the (workspace_id, external_id) and (workspace_id, order_number_key)
 * indexes.
 */
export function createShipmentStore() {
  return {
    /**
     * The order each reference (a merchant order id or number) names in the workspace: an order whose
     * `external_id` equals it, else one whose order number equals it ignoring zero padding (6775 and
     * 000006775 are one). Several candidates: the newest order. References that match nothing are absent.
     */
    async matchOrders(db: Db, workspaceId: string, refs: string[]): Promise<Map<string, OrderMatch>> {
      const byExternalId = new Map<string, Candidate>();
      const byNumberKey = new Map<string, Candidate>();
      const keep = (map: Map<string, Candidate>, key: string | null, row: Candidate) => {
        if (key === null) return;
        const held = map.get(key);
        if (!held || newestFirst(row, held) < 0) map.set(key, row);
      };
      const columns = ['id', 'contact_id', 'shipping_status', 'external_id', 'order_number_key', 'ordered_at'];
      for (const part of chunk([...new Set(refs)], REFS_PER_QUERY)) {
        const keys = [...new Set(part.map((ref) => orderNumberKey(ref)!))];
        // Two index-served lookups rather than one OR, which neither database serves as well, sent as one
        // statement; a row both found comes twice and counts for each.
        const rows: Candidate[] = await db('orders')
          .where({ workspace_id: workspaceId })
          .whereIn('external_id', part)
          .select(columns)
          .unionAll((byNumber) => byNumber.from('orders').where({ workspace_id: workspaceId }).whereIn('order_number_key', keys).select(columns));
        const ids = new Set(part);
        const numberKeys = new Set(keys);
        for (const row of rows) {
          if (row.external_id !== null && ids.has(row.external_id)) keep(byExternalId, row.external_id, row);
          if (row.order_number_key !== null && numberKeys.has(row.order_number_key)) keep(byNumberKey, row.order_number_key, row);
        }
      }
      const matches = new Map<string, OrderMatch>();
      for (const ref of refs) {
        const found = byExternalId.get(ref) ?? byNumberKey.get(orderNumberKey(ref)!);
        if (found) matches.set(ref, { id: found.id, contact_id: found.contact_id, shipping_status: found.shipping_status });
      }
      return matches;
    },

    /** Sets the Shipping Status of orders: one statement per distinct status. */
    async setShippingStatus(db: Db, statusByOrder: Map<string, string>, now: number): Promise<void> {
      const idsByStatus = new Map<string, string[]>();
      for (const [orderId, status] of statusByOrder) {
        const ids = idsByStatus.get(status) ?? [];
        ids.push(orderId);
        idsByStatus.set(status, ids);
      }
      for (const [status, ids] of idsByStatus) {
        for (const part of chunk(ids.sort(), REFS_PER_QUERY)) {
          await db('orders').whereIn('id', part).update({ shipping_status: status, updated_at: now });
        }
      }
    },
  };
}

export type ShipmentStore = ReturnType<typeof createShipmentStore>;
