import type { Db } from '../db/database.js';
import type { StoredKey } from './signing-keys.js';

export interface SenderRow {
  id: string;
  workspace_id: string;
  domain: string;
  dkim_selector: string;
  /** Base64 SPKI (DER), as the DNS record publishes it. */
  dkim_public_key: string;
  /** PKCS#8 PEM, kept for DKIM signing. */
  dkim_private_key: string;
  created_at: number;
}

/** The senders table; no rules. */
export function createSenderStore() {
  return {
    async insert(db: Db, row: SenderRow): Promise<void> {
      await db('senders').insert(row);
    },

    async list(db: Db, workspaceId: string): Promise<SenderRow[]> {
      return db<SenderRow>('senders').where({ workspace_id: workspaceId }).orderBy('domain');
    },

    async findByDomain(db: Db, workspaceId: string, domain: string): Promise<SenderRow | null> {
      return (await db<SenderRow>('senders').where({ workspace_id: workspaceId, domain }).first()) ?? null;
    },

    /** Deletes the workspace's sender: false when it has none of that id. */
    async delete(db: Db, workspaceId: string, id: string): Promise<boolean> {
      return (await db('senders').where({ workspace_id: workspaceId, id }).delete()) === 1;
    },

    /** The workspace's DKIM keys, as signing-keys.ts remembers them. */
    async signingKeys(db: Db, workspaceId: string): Promise<StoredKey[]> {
      return db('senders').where({ workspace_id: workspaceId }).select('domain', 'dkim_selector', 'dkim_private_key');
    },

    async domains(db: Db, workspaceId: string): Promise<string[]> {
      const rows: Array<{ domain: string }> = await db('senders').where({ workspace_id: workspaceId }).select('domain');
      return rows.map((r) => r.domain);
    },
  };
}
