import type { Db } from '../db/database.js';

/** A delivery's retry key: (workspace, event_type, external id), unique in webhook_deliveries. */
export interface DeliveryKey {
  workspace_id: string;
  event_type: string;
  external_id: string;
}

/** The webhook's duplicate protection: one row per retry key ever applied. */
export function createWebhookDeliveryStore() {
  return {
    /**
     * Records retry keys, yielding to the unique index; returns the keys this call recorded (the others were
     * recorded before, possibly by a concurrent delivery). Keys go in sorted order so concurrent groups
     * cannot deadlock.
     */
    async recordNew(db: Db, keys: Array<DeliveryKey & { received_at: number }>): Promise<DeliveryKey[]> {
      if (keys.length === 0) return [];
      return (await db('webhook_deliveries')
        .insert(keys)
        .onConflict(['workspace_id', 'event_type', 'external_id'])
        .ignore()
        .returning(['workspace_id', 'event_type', 'external_id'])) as DeliveryKey[];
    },
  };
}

export type WebhookDeliveryStore = ReturnType<typeof createWebhookDeliveryStore>;
