import type { Db } from '../db/database.js';
import type { TriggerOutbox } from '../triggers/trigger-outbox.js';

/**
 * What a person did and was sent, by table: every row names its contact and workspace (indexed). Orders are
 * not here: they are kept, on the tombstone, so revenue does not change. Nor are trigger facts: not all of them
 * are indexed by contact, and the outbox finds the others through the contact's events.
 */
const TRACES = ['events', 'messages', 'carts', 'engagements', 'flow_enrollments', 'segment_members', 'contact_user_ids'] as const;

export function createDataRightsStore(outbox: Pick<TriggerOutbox, 'deleteContactFacts'>) {
  return {
    /**
     * Deletes the contact's events, messages, carts, engagements, trigger facts, flow enrolments (in progress
     * or not: their jobs find nothing left to run), segment memberships and Segment user ids; one statement a
     * table, and three for trigger facts, first, while the contact's events are there to find them by.
     */
    async deleteTraces(db: Db, workspaceId: string, contactId: string): Promise<void> {
      await outbox.deleteContactFacts(db, workspaceId, contactId);
      for (const table of TRACES) await db(table).where({ workspace_id: workspaceId, contact_id: contactId }).delete();
    },
  };
}

export type DataRightsStore = ReturnType<typeof createDataRightsStore>;
