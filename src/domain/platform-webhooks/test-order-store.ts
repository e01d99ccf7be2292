import type { Db } from '../db/database.js';
import { compositeKey } from '../shared/keys.js';

/** A test order of a workspace, by its upsert key (the platform's order id, as `orders.upsert_key`). */
export interface TestOrderKey {
  workspaceId: string;
  orderKey: string;
}

/**
 * The ids of the test orders shops sent (docs/platforms/README.md, Test orders and test notifications): nothing
 * else of a test order is stored, and a later delivery that names one (a refund, a fulfillment) is dropped.
 */
export function createTestOrderStore() {
  return {
    /** Records test orders; one recorded before keeps its row. Rows in key order (no deadlocks). */
    async record(db: Db, keys: Array<TestOrderKey & { at: number }>): Promise<void> {
      const rows = new Map(keys.map((k) => [compositeKey(k.workspaceId, k.orderKey), { workspace_id: k.workspaceId, order_key: k.orderKey, received_at: k.at }]));
      if (rows.size === 0) return;
      const sorted = [...rows].sort(([a], [b]) => (a < b ? -1 : 1)).map(([, row]) => row);
      await db('platform_test_orders').insert(sorted).onConflict(['workspace_id', 'order_key']).ignore();
    },

    /** Which of these keys are test orders, as `compositeKey(workspaceId, orderKey)`. */
    async known(db: Db, keys: TestOrderKey[]): Promise<Set<string>> {
      const byWorkspace = new Map<string, Set<string>>();
      for (const { workspaceId, orderKey } of keys) byWorkspace.set(workspaceId, (byWorkspace.get(workspaceId) ?? new Set()).add(orderKey));
      const found = new Set<string>();
      for (const [workspaceId, orderKeys] of byWorkspace) {
        const rows: Array<{ order_key: string }> = await db('platform_test_orders').where({ workspace_id: workspaceId }).whereIn('order_key', [...orderKeys]).select('order_key');
        for (const row of rows) found.add(compositeKey(workspaceId, row.order_key));
      }
      return found;
    },
  };
}
