import type { Db } from '../db/database.js';
import type { Dialect } from '../db/dialect/dialect.js';
import { createEventStore, type EventRow } from './event-store.js';

export type { EventRow } from './event-store.js';

/**
 * What other nouns may read and write of event rows, by name (the store stays private): a flow's trigger
 * events by id, an identified visitor's anonymous history, and the events other nouns record themselves
 * (a shipment's `shipping_information`) inside their own transaction.
 */
export function createEventRecords(dialect: Dialect) {
  const store = createEventStore(dialect);
  return {
    findByIds: (db: Db, ids: string[]) => store.findByIds(db, ids),
    ofContact: (db: Db, workspaceId: string, contactId: string, eventName: string, range: { after: number; upTo?: number }, limit: number) =>
      store.ofContact(db, workspaceId, contactId, eventName, range, limit),
    attachAnonymous: (trx: Db, workspaceId: string, anonymousIds: string[], contactId: string) =>
      store.attachAnonymous(trx, workspaceId, anonymousIds, contactId),
    insert: (trx: Db, rows: EventRow[]) => store.insert(trx, rows),
  };
}

export type EventRecords = ReturnType<typeof createEventRecords>;
