import type { Knex } from 'knex';
import { insertRows } from '../db/bulk.js';
import type { Dialect } from '../db/dialect/dialect.js';

/**
 * Flow triggers of the spec's "Flow triggers and effects" table. `event` carries the event name (standard or
 * custom); the others are named by their type.
 */
export type TriggerType = 'event' | 'shipping_information' | 'order_placed' | 'order_updated' | 'cart';

export interface TriggerFact {
  workspaceId: string;
  triggerType: TriggerType;
  eventName?: string | null;
  contactId: string | null;
  subjectType: 'event' | 'order' | 'cart' | 'shipment';
  subjectId: string;
  source?: string | null;
  payload?: Record<string, unknown>;
  at: number;
}

/** The trigger an event fires: `shipping_information` has its own, every other name the event trigger. */
export function triggerTypeForEvent(eventName: string): TriggerType {
  return eventName === 'shipping_information' ? 'shipping_information' : 'event';
}

/**
 * Records fired triggers in the durable outbox. Callers pass their own transaction, so the trigger is stored
 * exactly when the fact that fires it is: nothing is lost if the process dies after replying, and nothing
 * fires for a write that rolled back. The flow engine consumes the rows.
 */
export function createTriggerOutbox(dialect: Dialect) {
  return {
    async record(trx: Knex.Transaction, facts: TriggerFact[]): Promise<void> {
      await insertRows(
        trx,
        dialect,
        'trigger_outbox',
        facts.map((fact) => ({
          workspace_id: fact.workspaceId,
          trigger_type: fact.triggerType,
          event_name: fact.eventName ?? null,
          contact_id: fact.contactId,
          subject_type: fact.subjectType,
          subject_id: fact.subjectId,
          source: fact.source ?? null,
          payload: dialect.writeJson(fact.payload ?? {}),
          created_at: fact.at,
          processed_at: null,
        })),
      );
    },

    /** Pending triggers, oldest first (what the flow engine will consume). */
    async pending(db: Knex | Knex.Transaction, workspaceId: string, limit = 100) {
      const rows = await db('trigger_outbox')
        .where({ workspace_id: workspaceId })
        .whereNull('processed_at')
        .orderBy('id')
        .limit(limit);
      return rows.map((row) => ({ ...row, payload: dialect.readJson<Record<string, unknown>>(row.payload) }));
    },
  };
}

export type TriggerOutbox = ReturnType<typeof createTriggerOutbox>;
