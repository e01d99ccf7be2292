import { chunk, chunkSizeFor } from '../db/bulk.js';
import type { Db } from '../db/database.js';
import type { Dialect } from '../db/dialect/dialect.js';

/** The contact a Segment `userId` names, with its email (the key contact writes go by). */
export interface UserIdOwner {
  contactId: string;
  email: string;
}

const IDS_PER_QUERY = 1000;

/** `segment_messages` (message ids already stored) and `contact_user_ids` (Segment user id → contact). */
export function createSegmentIngestStore(dialect: Dialect) {
  return {
    /**
     * Records message ids of a workspace, yielding to those stored before (the primary key); returns the ids
     * this call recorded. Sorted, so concurrent requests take the keys in one order.
     */
    async recordNewMessageIds(db: Db, workspaceId: string, messageIds: string[], at: number): Promise<Set<string>> {
      const fresh = new Set<string>();
      const sorted = [...new Set(messageIds)].sort();
      for (const part of chunk(sorted, chunkSizeFor(dialect, 3))) {
        const returned = await db('segment_messages')
          .insert(part.map((message_id) => ({ workspace_id: workspaceId, message_id, received_at: at })))
          .onConflict(['workspace_id', 'message_id'])
          .ignore()
          .returning('message_id');
        for (const row of returned as Array<{ message_id: string }>) fresh.add(row.message_id);
      }
      return fresh;
    },

    /** The contacts these user ids name (one seek per id on the primary key). */
    async ownersOfUserIds(db: Db, workspaceId: string, userIds: string[]): Promise<Map<string, UserIdOwner>> {
      const owners = new Map<string, UserIdOwner>();
      for (const part of chunk([...new Set(userIds)], IDS_PER_QUERY)) {
        const rows = await db('contact_user_ids as u')
          .join('contacts as c', 'c.id', 'u.contact_id')
          .where('u.workspace_id', workspaceId)
          .whereIn('u.user_id', part)
          .select('u.user_id', 'u.contact_id', 'c.email');
        for (const row of rows) owners.set(row.user_id, { contactId: row.contact_id, email: row.email });
      }
      return owners;
    },

    /** Points user ids at contacts; a user id named before moves to the contact named now (its latest email). */
    async claimUserIds(db: Db, workspaceId: string, claims: Map<string, string>, at: number): Promise<void> {
      const rows = [...claims].sort(([a], [b]) => (a < b ? -1 : 1));
      for (const part of chunk(rows, chunkSizeFor(dialect, 4))) {
        await db('contact_user_ids')
          .insert(part.map(([user_id, contact_id]) => ({ workspace_id: workspaceId, user_id, contact_id, created_at: at })))
          .onConflict(['workspace_id', 'user_id'])
          .merge(['contact_id']);
      }
    },
  };
}

export type SegmentIngestStore = ReturnType<typeof createSegmentIngestStore>;
