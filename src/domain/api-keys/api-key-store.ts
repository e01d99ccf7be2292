import type { Db } from '../db/database.js';

export interface ApiKeyRow {
  id: string;
  workspace_id: string;
  name: string;
  prefix: string;
  key_hash: string;
  created_at: number;
  revoked_at: number | null;
}

/** The api_keys table: keys are stored only as their hash. */
export function createApiKeyStore() {
  return {
    async insert(db: Db, row: ApiKeyRow): Promise<void> {
      await db('api_keys').insert(row);
    },

    /** The key of this hash unless revoked. */
    async findActiveByHash(db: Db, keyHash: string): Promise<ApiKeyRow | null> {
      return (await db<ApiKeyRow>('api_keys').where({ key_hash: keyHash }).whereNull('revoked_at').first()) ?? null;
    },

    async findInWorkspace(db: Db, workspaceId: string, id: string): Promise<ApiKeyRow | null> {
      return (await db<ApiKeyRow>('api_keys').where({ id, workspace_id: workspaceId }).first()) ?? null;
    },

    async listByWorkspace(db: Db, workspaceId: string): Promise<ApiKeyRow[]> {
      return db<ApiKeyRow>('api_keys').where({ workspace_id: workspaceId }).orderBy('created_at');
    },

    /** Revokes the key unless it already is; the first revocation time stays. */
    async revoke(db: Db, id: string, at: number): Promise<void> {
      await db('api_keys').where({ id }).whereNull('revoked_at').update({ revoked_at: at });
    },
  };
}

export type ApiKeyStore = ReturnType<typeof createApiKeyStore>;
