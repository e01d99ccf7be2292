import type { Knex } from 'knex';
import { compositeKey } from '../shared/keys.js';
import { createWebhookDeliveryStore, type DeliveryKey } from './webhook-delivery-store.js';

/** A delivery's retry key: the sender's id for it, per workspace and event type (a platform's `<platform>:<topic>`). */
export interface RetryKey {
  workspaceId: string;
  eventType: string;
  externalId: string;
  at: number;
}

const storedKey = (key: DeliveryKey) => compositeKey(key.workspace_id, key.event_type, key.external_id);

/**
 * Duplicate protection of the webhooks (the website's and the shop platforms'): one row per retry key ever
 * applied, written in the transaction that applies the delivery, so two concurrent deliveries of one key
 * apply it once.
 */
export function createDeliveryKeys() {
  const store = createWebhookDeliveryStore();
  return {
    /**
     * Records the retry keys of a group of deliveries; returns those seen before (or earlier in this same
     * group). A delivery without a key is never a duplicate.
     */
    async duplicates<T>(trx: Knex.Transaction, deliveries: T[], keyOf: (delivery: T) => RetryKey | null): Promise<Set<T>> {
      const seen = new Set<T>();
      const first = new Map<string, { delivery: T; key: RetryKey }>();
      for (const delivery of deliveries) {
        const key = keyOf(delivery);
        if (key === null) continue;
        const id = compositeKey(key.workspaceId, key.eventType, key.externalId);
        if (first.has(id)) seen.add(delivery);
        else first.set(id, { delivery, key });
      }
      if (first.size === 0) return seen;
      const rows = [...first.values()].map(({ key }) => ({
        workspace_id: key.workspaceId,
        event_type: key.eventType,
        external_id: key.externalId,
        received_at: key.at,
      }));
      rows.sort((a, b) => (storedKey(a) < storedKey(b) ? -1 : 1));
      const fresh = new Set((await store.recordNew(trx, rows)).map(storedKey));
      for (const [id, { delivery }] of first) if (!fresh.has(id)) seen.add(delivery);
      return seen;
    },
  };
}

export type DeliveryKeys = ReturnType<typeof createDeliveryKeys>;
