import type { Knex } from 'knex';
import { NotFoundError, UnauthorizedError } from '../errors.js';
import { hashSecret, randomToken, uuidv7 } from '../shared/ids.js';
import { toIso } from '../shared/time.js';
import { TtlCache } from '../shared/ttl-cache.js';

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

interface ApiKeyRow {
  id: string;
  workspace_id: string;
  name: string;
  prefix: string;
  key_hash: string;
  created_at: number;
  revoked_at: number | null;
}

const toApiKey = (row: ApiKeyRow): ApiKey => ({
  id: row.id,
  name: row.name,
  prefix: row.prefix,
  created_at: toIso(row.created_at)!,
  revoked_at: toIso(row.revoked_at),
});

/** Workspace API keys (`emk_…`): stored only as a SHA-256 hash; the key itself is shown once at creation. */
export function createApiKeyService(deps: { knex: Knex }) {
  const { knex } = deps;
  // Key hash → workspace id. A revoke here clears it at once; other processes see it within the TTL.
  const cache = new TtlCache<string, string>(5_000);

  return {
    async create(db: Knex | Knex.Transaction, workspaceId: string, name = 'default'): Promise<CreatedApiKey> {
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
      await db('api_keys').insert(row);
      return { ...toApiKey(row), key };
    },

    /** The workspace a key belongs to; 401 for a missing, unknown or revoked key. */
    async authenticate(key: string | undefined): Promise<string> {
      if (!key) throw new UnauthorizedError('missing api key');
      const hash = hashSecret(key);
      const cached = cache.get(hash);
      if (cached) return cached;
      const row = await knex<ApiKeyRow>('api_keys').where({ key_hash: hash }).whereNull('revoked_at').first();
      if (!row) throw new UnauthorizedError('invalid api key');
      cache.set(hash, row.workspace_id);
      return row.workspace_id;
    },

    async list(workspaceId: string): Promise<ApiKey[]> {
      const rows = await knex<ApiKeyRow>('api_keys').where({ workspace_id: workspaceId }).orderBy('created_at');
      return rows.map(toApiKey);
    },

    async revoke(workspaceId: string, id: string): Promise<void> {
      const row = await knex<ApiKeyRow>('api_keys').where({ id, workspace_id: workspaceId }).first();
      if (!row) throw new NotFoundError();
      await knex('api_keys').where({ id }).whereNull('revoked_at').update({ revoked_at: Date.now() });
      cache.delete(row.key_hash);
    },
  };
}

export type ApiKeyService = ReturnType<typeof createApiKeyService>;
