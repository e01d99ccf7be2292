import type { Db } from '../db/database.js';
import type { Dialect } from '../db/dialect/dialect.js';
import { createMessageStore } from './message-store.js';

export type { TrackedMessage } from './message-store.js';

/**
 * What tracking reads and marks of a sent message, by name (the store stays private). Tracking is built
 * before the message service, which signs its links with tracking's help, so this is its own small door.
 */
export function createMessageLookup(dialect: Dialect) {
  const store = createMessageStore(dialect);
  return {
    findForTracking: (db: Db, id: string) => store.findForTracking(db, id),
    /** The message's first open or click, kept where already set. */
    markEngaged: (db: Db, kind: 'open' | 'click', firsts: Array<{ id: string; at: number }>) => store.markEngaged(db, kind, firsts),
  };
}

export type MessageLookup = ReturnType<typeof createMessageLookup>;
