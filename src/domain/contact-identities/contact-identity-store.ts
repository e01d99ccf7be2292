import { chunk, chunkSizeFor } from '../db/bulk.js';
import type { Db } from '../db/database.js';
import type { Dialect } from '../db/dialect/dialect.js';
import { identityKey, type Identity } from './contact-identity.js';

export interface IdentityRow {
  workspace_id: string;
  kind: string;
  value: string;
  contact_id: string;
}

const KEYS_PER_QUERY = 500;

export function createContactIdentityStore(dialect: Dialect) {
  return {
    /**
     * Each identity becomes its contact's (taken over from another contact that held it). Rows in key order, so
     * concurrent writers cannot deadlock; a row that already names its contact is not written again.
     */
    async claim(db: Db, rows: IdentityRow[]): Promise<void> {
      const sorted = [...rows].sort((a, b) => (identityKey(a.workspace_id, a as Identity) < identityKey(b.workspace_id, b as Identity) ? -1 : 1));
      for (const part of chunk(sorted, chunkSizeFor(dialect, 4))) {
        await db('contact_identities')
          .insert(part)
          .onConflict(['workspace_id', 'kind', 'value'])
          .merge(['contact_id'])
          .whereRaw('contact_identities.contact_id <> excluded.contact_id');
      }
    },

    /** Deletes these identities where their contact still holds them (another may have taken one over since). */
    async release(db: Db, rows: IdentityRow[]): Promise<void> {
      for (const part of chunk(rows, chunkSizeFor(dialect, 4))) {
        await db('contact_identities')
          .whereIn(['workspace_id', 'kind', 'value', 'contact_id'], part.map((row) => [row.workspace_id, row.kind, row.value, row.contact_id]))
          .delete();
      }
    },

    /** The contact holding each identity of the workspace, keyed by `identityKey`. */
    async holders(db: Db, workspaceId: string, identities: Identity[]): Promise<Map<string, string>> {
      const found = new Map<string, string>();
      for (const part of chunk(identities, KEYS_PER_QUERY)) {
        const rows: IdentityRow[] = await db('contact_identities')
          .where({ workspace_id: workspaceId })
          .whereIn(['kind', 'value'], part.map((identity) => [identity.kind, identity.value]));
        for (const row of rows) found.set(identityKey(workspaceId, row as Identity), row.contact_id);
      }
      return found;
    },

    async deleteOfContacts(db: Db, workspaceId: string, contactIds: string[]): Promise<void> {
      for (const part of chunk(contactIds, KEYS_PER_QUERY)) await db('contact_identities').where({ workspace_id: workspaceId }).whereIn('contact_id', part).delete();
    },
  };
}

export type ContactIdentityStore = ReturnType<typeof createContactIdentityStore>;
