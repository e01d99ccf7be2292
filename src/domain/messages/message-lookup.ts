import type { Db } from '../db/database.js';
import type { Dialect } from '../db/dialect/dialect.js';
import { createMessageStore, type RelayReport } from './message-store.js';

export type { RelayedMessage, RelayReport, TrackedMessage } from './message-store.js';

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
    /** Relay webhooks: the workspace's message a relay's event names, and what the relay reported of it. */
    findForRelay: (db: Db, workspaceId: string, id: string) => store.findForRelay(db, workspaceId, id),
    markRelayed: (db: Db, id: string, report: RelayReport, now: number) => store.markRelayed(db, id, report, now),
  };
}

export type MessageLookup = ReturnType<typeof createMessageLookup>;
