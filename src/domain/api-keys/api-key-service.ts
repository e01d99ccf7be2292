import type { Database, Db } from '../db/database.js';
import type { Knex } from 'knex';
import { NotFoundError, UnauthorizedError } from '../errors.js';
import { hashSecret, randomToken, uuidv7 } from '../shared/ids.js';
import { toIso } from '../shared/time.js';
import type { Clock } from '../shared/time.js';
import { TtlCache } from '../shared/ttl-cache.js';
import { createApiKeyStore, type ApiKeyRow } from './api-key-store.js';

export const API_KEY_PREFIX = 'emk_';
const PREFIX_SHOWN = 12;

export interface ApiKey {
  id: string;
  name: string;
  prefix: string;
  created_at: string;
  revoked_at: string | null;
}

export interface CreatedApiKey extends ApiKey {
  /** The whole key: shown once, never stored. */
  key: string;
}

const toApiKey = (row: ApiKeyRow): ApiKey => ({
  id: row.id,
  name: row.name,
  prefix: row.prefix,
  created_at: toIso(row.created_at)!,
  revoked_at: toIso(row.revoked_at),
});

/** Workspace API keys (`emk_…`): stored only as a SHA-256 hash; the key itself is shown once at creation. */
export function createApiKeyService(deps: {
  knex: Knex;
  writeTransaction: Database['writeTransaction'];
  clock?: Clock;
}) {
  const { knex, writeTransaction } = deps;
  const store = createApiKeyStore();
  // Key hash → workspace id. A revoke here clears it at once; other processes see it within the TTL.
  const cache = new TtlCache<string, string>(5_000, deps.clock);

  return {
    async create(db: Db, workspaceId: string, name = 'default'): Promise<CreatedApiKey> {
      const key = `${API_KEY_PREFIX}${randomToken(40)}`;
      const row: ApiKeyRow = {
        id: uuidv7(),
        workspace_id: workspaceId,
        name,
        prefix: key.slice(0, PREFIX_SHOWN),
        key_hash: hashSecret(key),
        created_at: Date.now(),
        revoked_at: null,
      };
      await store.insert(db, row);
      return { ...toApiKey(row), key };
    },

    /** A new key on its own (`emk api-keys create`); `create` is for a caller's transaction. */
    issue(workspaceId: string, name?: string): Promise<CreatedApiKey> {
      return writeTransaction((trx) => this.create(trx, workspaceId, name));
    },

    /** The workspace a key belongs to; 401 for a missing, unknown or revoked key. */
    async authenticate(key: string | undefined): Promise<string> {
      if (!key) throw new UnauthorizedError('missing api key');
      const hash = hashSecret(key);
      const cached = cache.get(hash);
      if (cached) return cached;
      const row = await store.findActiveByHash(knex, hash);
      if (!row) throw new UnauthorizedError('invalid api key');
      cache.set(hash, row.workspace_id);
      return row.workspace_id;
    },

    async list(workspaceId: string): Promise<ApiKey[]> {
      return (await store.listByWorkspace(knex, workspaceId)).map(toApiKey);
    },

    async revoke(workspaceId: string, id: string): Promise<void> {
      const row = await store.findInWorkspace(knex, workspaceId, id);
      if (!row) throw new NotFoundError();
      await store.revoke(knex, id, Date.now());
      cache.delete(row.key_hash);
    },
  };
}

export type ApiKeyService = ReturnType<typeof createApiKeyService>;
