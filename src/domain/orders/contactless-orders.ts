import type { Knex } from 'knex';
import type { Dialect } from '../db/dialect/dialect.js';
import { contactChangedFact, type TriggerOutbox } from '../triggers/trigger-outbox.js';
import { createOrderStore } from './order-store.js';

/** A contact that now holds a shop platform's customer id, as a customer reference (`shopify:<id>`). */
export interface CustomerClaim {
  workspaceId: string;
  customerRef: string;
  contactId: string;
}

/**
 * Orders kept without a contact (docs/platforms/README.md, Orders without an email) join the contact that
 * appears with their platform customer id: the one move of an order between contacts there is (an order with a
 * contact never changes it, docs/api/webhook.md rule 6). Named apart from the service so that the contacts'
 * identities, written wherever a contact is, can call it in the same transaction.
 */
export function createContactlessOrders(deps: { dialect: Dialect; outbox: TriggerOutbox }) {
  const store = createOrderStore(deps.dialect);
  return {
    /**
     * The contact-less orders of each claimed customer become its contact's: its lifetime revenue and order
     * count are recomputed and its segments re-evaluated (`contact_changed` `orders`); no `order_placed` fires
     * for them, and they stay unattributed (`emk attribution recompute` credits them). Returns how many joined.
     */
    async join(trx: Knex.Transaction, claims: CustomerClaim[]): Promise<number> {
      let joined = 0;
      for (const workspaceId of new Set(claims.map((c) => c.workspaceId))) {
        const ofWorkspace = claims.filter((c) => c.workspaceId === workspaceId);
        const waiting = await store.contactlessByCustomerRefs(trx, workspaceId, ofWorkspace.map((c) => c.customerRef));
        if (waiting.length === 0) continue;
        const holder = new Map(ofWorkspace.map((c) => [c.customerRef, c.contactId]));
        const byContact = new Map<string, string[]>();
        for (const order of waiting) {
          const contactId = holder.get(order.customer_ref)!;
          byContact.set(contactId, [...(byContact.get(contactId) ?? []), order.id]);
        }
        const now = Date.now();
        for (const [contactId, ids] of byContact) await store.joinContact(trx, ids, contactId, now);
        await store.refreshContactTotals(trx, workspaceId, [...byContact.keys()]);
        await deps.outbox.record(trx, [...byContact.keys()].map((contactId) => contactChangedFact(workspaceId, contactId, 'orders', now)));
        joined += waiting.length;
      }
      return joined;
    },
  };
}

export type ContactlessOrders = ReturnType<typeof createContactlessOrders>;
