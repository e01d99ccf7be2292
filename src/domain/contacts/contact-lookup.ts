import type { Knex } from 'knex';
import type { Db } from '../db/database.js';
import type { Dialect } from '../db/dialect/dialect.js';
import { createContactStore } from './contact-store.js';

export { contactKey, type ContactRow } from './contact-store.js';

/**
 * What other nouns may read of contacts, by name (their door to contact rows; the store stays private): reads
 * that leave erased contacts out, the consent history, and the erasure's own write to the row.
 */
export function createContactLookup(dialect: Dialect) {
  const store = createContactStore(dialect);
  return {
    findById: (db: Db, workspaceId: string, id: string, lock = false) => store.findById(db, workspaceId, id, lock),
    findByIds: (db: Db, workspaceId: string, ids: string[]) => store.findByIds(db, workspaceId, ids),
    /** By (workspace, email) pairs, keyed by `contactKey`. */
    findByEmails: (db: Db, pairs: Array<readonly [string, string]>) => store.findByEmails(db, pairs),
    idsByEmails: (db: Db, pairs: Array<readonly [string, string]>) => store.idsByEmails(db, pairs),
    ownersOfAnonymousIds: (db: Db, pairs: [string, string][]) => store.ownersOfAnonymousIds(db, pairs),
    toContacts: (db: Db, rows: Parameters<typeof store.toContacts>[1]) => store.toContacts(db, rows),
    /** The workspace's contacts and subscribed contacts (the console's overview). */
    audience: (db: Db, workspaceId: string) => store.audience(db, workspaceId),
    statusChanges: (db: Db, contactId: string) => store.statusChanges(db, contactId),
    /** Send reports: contacts unsubscribed through the messages a query selects (`id`, and `grp` to group by). */
    unsubscribeCounts: (db: Db, messages: Knex.QueryBuilder) => store.unsubscribeCounts(db, messages),
    /** The erasure's tombstones (data rights owns when; the row's shape is this noun's). */
    erase: (db: Db, ids: string[], now: number) => store.erase(db, ids, now),
  };
}

export type ContactLookup = ReturnType<typeof createContactLookup>;
