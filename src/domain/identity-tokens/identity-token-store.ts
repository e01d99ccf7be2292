import type { Db } from '../db/database.js';

/** The workspace's signing secret (contacts are read through the contact store). */
export function createIdentityTokenStore() {
  return {
    async secretOf(db: Db, workspaceId: string): Promise<string | null> {
      const row = await db('workspaces').where({ id: workspaceId }).first('secret');
      return row?.secret ? String(row.secret) : null;
    },
  };
}

export type IdentityTokenStore = ReturnType<typeof createIdentityTokenStore>;
