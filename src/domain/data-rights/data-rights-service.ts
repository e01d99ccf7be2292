import type { Knex } from 'knex';
import type { ContactLookup } from '../contacts/contact-lookup.js';
import { contactKey } from '../contacts/contact-lookup.js';
import type { Contact } from '../contacts/contact.schema.js';
import type { Database } from '../db/database.js';
import { NotFoundError } from '../errors.js';
import type { EventService } from '../events/event-service.js';
import type { MessageService } from '../messages/message-service.js';
import type { OrderService } from '../orders/order-service.js';
import type { ProductActivity } from '../recommendations/product-activity.js';
import type { Page, Paging } from '../shared/paging.js';
import type { TriggerOutbox } from '../triggers/trigger-outbox.js';
import { createDataRightsStore } from './data-rights-store.js';
import type { ContactExport } from './data-rights.schema.js';

/** Rows an export reads at a time from each list. */
const EXPORT_PAGE = 1_000;

/** Every record of a management list, page after page. */
async function everything<T>(list: (paging: Paging) => Promise<Page<T>>): Promise<T[]> {
  const all: T[] = [];
  for (let page = 1; ; page++) {
    const { data, meta } = await list({ page, perPage: EXPORT_PAGE });
    all.push(...data);
    if (data.length < EXPORT_PAGE || all.length >= meta.total) return all;
  }
}

/**
 * A person's rights over their data (docs/api/data-rights.md): erasure and export. Erasure keeps the
 * contact's row as a tombstone with no personal data, because its orders keep pointing at it.
 */
export function createDataRightsService(deps: {
  knex: Knex;
  writeTransaction: Database['writeTransaction'];
  /** The erasure deletes the contact's trigger facts too. */
  outbox: Pick<TriggerOutbox, 'deleteContactFacts'>;
  contactLookup: ContactLookup;
  /** The lists the export reads whole, as the management API shows their records. */
  lists: { events: Pick<EventService, 'list'>; orders: Pick<OrderService, 'list'>; messages: Pick<MessageService, 'list'> };
  activity: Pick<ProductActivity, 'forgetViewsOf'>;
}) {
  const { knex, writeTransaction, contactLookup, lists, activity } = deps;
  const store = createDataRightsStore(deps.outbox);

  return {
    /** The contact of an email (case-insensitive), for the command line; `contact not found` when none. */
    async find(workspaceId: string, email: string): Promise<Contact> {
      const row = (await contactLookup.findByEmails(knex, [[workspaceId, email]])).get(contactKey(workspaceId, email));
      if (!row) throw new NotFoundError('contact not found');
      return (await contactLookup.toContacts(knex, [row]))[0]!;
    },

    /**
     * Erases the contact in one transaction: its product views leave the recommendation aggregates, its
     * traces are deleted, and its row becomes a tombstone (orders and their revenue stay). 404 afterwards.
     */
    async erase(workspaceId: string, id: string): Promise<void> {
      await writeTransaction(async (trx) => {
        if (!(await contactLookup.findById(trx, workspaceId, id, true))) throw new NotFoundError();
        await activity.forgetViewsOf(trx, workspaceId, id);
        await store.deleteTraces(trx, workspaceId, id);
        await contactLookup.erase(trx, id, Date.now());
      });
    },

    /** Everything kept about the contact, each kind whole (no paging). */
    async export(workspaceId: string, id: string): Promise<ContactExport> {
      const row = await contactLookup.findById(knex, workspaceId, id);
      if (!row) throw new NotFoundError();
      const filter = { contact_id: id };
      return {
        contact: (await contactLookup.toContacts(knex, [row]))[0]!,
        events: await everything((paging) => lists.events.list(workspaceId, filter, paging)),
        orders: await everything((paging) => lists.orders.list(workspaceId, filter, paging)),
        messages: await everything((paging) => lists.messages.list(workspaceId, filter, paging)),
        consent: await contactLookup.statusChanges(knex, id),
      };
    },
  };
}

export type DataRightsService = ReturnType<typeof createDataRightsService>;
