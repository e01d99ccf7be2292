import type { Knex } from 'knex';
import type { ContactIdentityService } from '../contact-identities/contact-identity-service.js';
import type { ContactLookup } from '../contacts/contact-lookup.js';
import { contactKey } from '../contacts/contact-lookup.js';
import type { Contact } from '../contacts/contact.schema.js';
import type { Database, Reader } from '../db/database.js';
import { NotFoundError } from '../errors.js';
import type { EventService } from '../events/event-service.js';
import type { MessageService } from '../messages/message-service.js';
import type { OrderService } from '../orders/order-service.js';
import type { ProductActivity } from '../recommendations/product-activity.js';
import { chunk } from '../db/bulk.js';
import type { Dialect } from '../db/dialect/dialect.js';
import { uuidv7 } from '../shared/ids.js';
import { toPage, type Page, type Paging } from '../shared/paging.js';
import type { TriggerOutbox } from '../triggers/trigger-outbox.js';
import { createDataRightsStore, type ShopSource } from './data-rights-store.js';
import type { ContactExport, DataRequest } from './data-rights.schema.js';

export type { ShopSource } from './data-rights-store.js';

/** Contacts an erasure takes at a time: each of its statements binds their ids. */
const ERASE_CHUNK = 500;

/** Rows an export reads at a time from each list: what it holds of a list at once, at most. */
const EXPORT_PAGE = 1_000;

/** How an export reads: its page size (tests lower it), and an observer of each page read. */
export interface ExportOptions {
  pageSize?: number;
  onPage?: (list: ExportList, page: number, rows: number) => void;
}

/** The lists an export writes page by page, in the reply's key order. */
const EXPORT_LISTS = ['events', 'orders', 'carts', 'messages'] as const;
type ExportList = (typeof EXPORT_LISTS)[number];

/**
 * One list's records as the elements of a JSON array (no brackets), one page of text at a time: each page is read
 * when the consumer asks for more, written, and let go before the next is read.
 */
async function* pagesOf<T>(list: (paging: Paging) => Promise<Page<T>>, perPage: number, onPage: (page: number, rows: number) => void) {
  let seen = 0;
  for (let page = 1; ; page++) {
    const { data, meta } = await list({ page, perPage });
    onPage(page, data.length);
    if (data.length > 0) yield `${seen > 0 ? ',' : ''}${data.map((record) => JSON.stringify(record)).join(',')}`;
    seen += data.length;
    if (data.length < perPage || seen >= meta.total) return;
  }
}

/**
 * A person's rights over their data (docs/api/data-rights.md): erasure and export. Erasure keeps the
 * contact's row as a tombstone with no personal data, because its orders keep pointing at it.
 */
export function createDataRightsService(deps: {
  knex: Knex;
  reader: Reader;
  dialect: Dialect;
  writeTransaction: Database['writeTransaction'];
  /** The erasure deletes the contact's trigger facts too. */
  outbox: Pick<TriggerOutbox, 'deleteContactFacts'>;
  contactLookup: ContactLookup;
  /** The lists the export reads whole, as the management API shows their records. */
  lists: { events: Pick<EventService, 'list'>; orders: Pick<OrderService, 'list'>; messages: Pick<MessageService, 'list'> };
  activity: Pick<ProductActivity, 'forgetViewsOf'>;
  /** The platform customer ids and phone numbers that name the contacts go with them. */
  identities: Pick<ContactIdentityService, 'forget'>;
}) {
  const { knex, reader, writeTransaction, contactLookup, lists, activity } = deps;
  const store = createDataRightsStore(deps.dialect, deps.outbox);

  /**
   * Erases contacts in the caller's transaction, a few hundred at a time: their product views leave the
   * recommendation aggregates, their traces are deleted, and their rows become tombstones (orders and their
   * revenue stay).
   */
  async function eraseContacts(trx: Knex.Transaction, workspaceId: string, ids: string[]): Promise<void> {
    const now = Date.now();
    for (const part of chunk(ids, ERASE_CHUNK)) {
      await activity.forgetViewsOf(trx, workspaceId, part);
      await store.deleteTraces(trx, workspaceId, part);
      await deps.identities.forget(trx, workspaceId, part);
      await contactLookup.erase(trx, part, now);
    }
  }

  /**
   * Everything kept about the contact as JSON text, written as it is read: `{"contact","events","orders",
   * "carts","messages","consent"}`, the four long lists page by page (docs/api/data-rights.md#export). The
   * contact is looked up first, so an unknown id is a NotFoundError before any text; a failure after the first
   * piece ends the text short (an HTTP reply is then cut, never completed as valid JSON). Read through the
   * reader (the replica when healthy), as the lists are.
   */
  async function exportJson(workspaceId: string, id: string, options: ExportOptions = {}): Promise<AsyncIterable<string>> {
    const db = reader();
    const row = await contactLookup.findById(db, workspaceId, id);
    if (!row) throw new NotFoundError();
    const contact = (await contactLookup.toContacts(db, [row]))[0]!;
    const perPage = options.pageSize ?? EXPORT_PAGE;
    const filter = { contact_id: id };
    const listOf: Record<ExportList, (paging: Paging) => Promise<Page<unknown>>> = {
      events: (paging) => lists.events.list(workspaceId, filter, paging),
      orders: (paging) => lists.orders.list(workspaceId, filter, paging),
      // Carts have no management list: the export's own query reads them.
      carts: (paging) => store.listCarts(db, workspaceId, id, paging),
      messages: (paging) => lists.messages.list(workspaceId, filter, paging),
    };
    return (async function* () {
      yield `{"contact":${JSON.stringify(contact)}`;
      for (const name of EXPORT_LISTS) {
        yield `,"${name}":[`;
        yield* pagesOf(listOf[name], perPage, (page, rows) => options.onPage?.(name, page, rows));
        yield ']';
      }
      yield `,"consent":${JSON.stringify(await contactLookup.statusChanges(db, id))}}`;
    })();
  }

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
        await eraseContacts(trx, workspaceId, [id]);
      });
    },

    eraseContacts,

    /**
     * A shop platform integration's shop is gone (`shop/redact`): erases, as `erase` does, every contact it
     * created that nothing else vouches for (ShopSource). Returns how many.
     */
    async eraseShopContacts(trx: Knex.Transaction, shop: ShopSource): Promise<number> {
      const ids = await store.contactsOnlyFrom(trx, shop);
      await eraseContacts(trx, shop.workspaceId, ids);
      return ids.length;
    },

    /** Records platforms' data requests (the contact of each email, if any), in the caller's transaction. */
    async recordDataRequests(
      trx: Knex.Transaction,
      requests: Array<{ workspaceId: string; integrationId: string; email: string; requestId: string | null; at: number }>,
    ): Promise<void> {
      if (requests.length === 0) return;
      const contacts = await contactLookup.idsByEmails(trx, requests.map((r) => [r.workspaceId, r.email] as const));
      await store.insertDataRequests(
        trx,
        requests.map((r) => ({
          id: uuidv7(r.at),
          workspace_id: r.workspaceId,
          integration_id: r.integrationId,
          email: r.email,
          contact_id: contacts.get(contactKey(r.workspaceId, r.email)) ?? null,
          request_id: r.requestId,
          received_at: r.at,
        })),
      );
    },

    /** GET /api/v1/data-requests: the platforms' data requests, newest first. */
    async listDataRequests(workspaceId: string, paging: Paging): Promise<Page<DataRequest>> {
      const { rows, total } = await store.listDataRequests(knex, workspaceId, paging);
      return toPage(rows.map(store.toDataRequest), total, paging);
    },

    exportJson,

    /** The export as one value, for callers that want it whole (the text of exportJson, parsed). */
    async export(workspaceId: string, id: string, options: ExportOptions = {}): Promise<ContactExport> {
      let text = '';
      for await (const piece of await exportJson(workspaceId, id, options)) text += piece;
      return JSON.parse(text) as ContactExport;
    },
  };
}

export type DataRightsService = ReturnType<typeof createDataRightsService>;
