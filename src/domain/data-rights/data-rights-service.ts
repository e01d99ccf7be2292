import type { Knex } from 'knex';
import type { ContactStore } from '../contacts/contact-store.js';
import { contactKey } from '../contacts/contact-store.js';
import type { Contact } from '../contacts/contact.schema.js';
import type { Database } from '../db/database.js';
import { NotFoundError } from '../errors.js';
import type { EventStore } from '../events/event-store.js';
import type { MessageStore } from '../messages/message-store.js';
import type { OrderStore } from '../orders/order-store.js';
import { ActivityDelta, VIEW_EVENT } from '../recommendations/activity-delta.js';
import type { ProductActivity } from '../recommendations/product-activity.js';
import type { ProductActivityStore } from '../recommendations/product-activity-store.js';
import type { Paging } from '../shared/paging.js';
import type { DataRightsStore } from './data-rights-store.js';
import type { ContactExport } from './data-rights.schema.js';

/** Rows an export reads at a time from each list. */
const EXPORT_PAGE = 1_000;

/** Every row of a paged list, page after page. */
async function everything<T>(list: (paging: Paging) => Promise<{ rows: T[]; total: number }>): Promise<T[]> {
  const all: T[] = [];
  for (let page = 1; ; page++) {
    const { rows, total } = await list({ page, perPage: EXPORT_PAGE });
    all.push(...rows);
    if (rows.length < EXPORT_PAGE || all.length >= total) return all;
  }
}

/**
 * A person's rights over their data (docs/api/data-rights.md): erasure and export. Erasure keeps the
 * contact's row as a tombstone with no personal data, because its orders keep pointing at it.
 */
export function createDataRightsService(deps: {
  knex: Knex;
  writeTransaction: Database['writeTransaction'];
  store: DataRightsStore;
  contactStore: ContactStore;
  eventStore: EventStore;
  orderStore: OrderStore;
  messageStore: MessageStore;
  activity: ProductActivity;
  activityStore: ProductActivityStore;
}) {
  const { knex, writeTransaction, store, contactStore, eventStore, orderStore, messageStore, activity, activityStore } = deps;

  return {
    /** The contact of an email (case-insensitive), for the command line; `contact not found` when none. */
    async find(workspaceId: string, email: string): Promise<Contact> {
      const row = (await contactStore.findByEmails(knex, [[workspaceId, email]])).get(contactKey(workspaceId, email));
      if (!row) throw new NotFoundError('contact not found');
      return (await contactStore.toContacts(knex, [row]))[0]!;
    },

    /**
     * Erases the contact in one transaction: its product views leave the recommendation aggregates, its
     * traces are deleted, and its row becomes a tombstone (orders and their revenue stay). 404 afterwards.
     */
    async erase(workspaceId: string, id: string): Promise<void> {
      await writeTransaction(async (trx) => {
        if (!(await contactStore.findById(trx, workspaceId, id, true))) throw new NotFoundError();
        const views = await activityStore.viewsOf(trx, workspaceId, id, VIEW_EVENT);
        await activity.record(trx, new ActivityDelta().views(workspaceId, views, -1));
        await store.deleteTraces(trx, workspaceId, id);
        await contactStore.erase(trx, id, Date.now());
      });
    },

    /** Everything kept about the contact, each kind whole (no paging). */
    async export(workspaceId: string, id: string): Promise<ContactExport> {
      const row = await contactStore.findById(knex, workspaceId, id);
      if (!row) throw new NotFoundError();
      const filter = { contact_id: id };
      return {
        contact: (await contactStore.toContacts(knex, [row]))[0]!,
        events: await everything((paging) => eventStore.list(knex, workspaceId, filter, paging)),
        orders: await orderStore.toOrders(knex, await everything((paging) => orderStore.list(knex, workspaceId, filter, paging))),
        messages: await everything((paging) => messageStore.list(knex, workspaceId, filter, paging)),
        consent: await contactStore.statusChanges(knex, id),
      };
    },
  };
}

export type DataRightsService = ReturnType<typeof createDataRightsService>;
