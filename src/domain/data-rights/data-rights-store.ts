import type { Db } from '../db/database.js';

/**
 * What a person did and was sent, by table: every row names its contact and workspace (indexed). Orders are
 * not here: they are kept, on the tombstone, so revenue does not change.
 */
const TRACES = ['events', 'messages', 'carts', 'engagements', 'trigger_outbox', 'flow_enrollments', 'segment_members', 'contact_user_ids'] as const;

export function createDataRightsStore() {
  return {
    /**
     * Deletes the contact's events, messages, carts, engagements, trigger facts, flow enrolments (in progress
     * or not: their jobs find nothing left to run), segment memberships and Segment user ids; one statement a table.
     */
    async deleteTraces(db: Db, workspaceId: string, contactId: string): Promise<void> {
      for (const table of TRACES) await db(table).where({ workspace_id: workspaceId, contact_id: contactId }).delete();
    },
  };
}

export type DataRightsStore = ReturnType<typeof createDataRightsStore>;
