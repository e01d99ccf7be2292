import type { Knex } from 'knex';
import type { Dialect } from '../db/dialect/dialect.js';
import { hashSecret, randomToken, uuidv7 } from '../shared/ids.js';
import { toIso } from '../shared/time.js';

/** Integration keys carry their own prefix so a workspace key is never mistaken for one. */
export const INTEGRATION_KEY_PREFIX = 'whk_';

export interface Integration {
  id: string;
  platform: string;
  domain: string;
  active: boolean;
  created_at: string;
}

export interface CreatedIntegration extends Integration {
  /** The webhook bearer key: shown once, stored only as a hash. */
  api_key: string;
}

interface IntegrationRow {
  id: string;
  workspace_id: string;
  platform: string;
  domain: string;
  api_key_hash: string;
  active: unknown;
  created_at: number;
}

/** Store integrations (a Website integration per shop); each has its own webhook key. */
export function createIntegrationService(deps: { knex: Knex; dialect: Dialect }) {
  const { knex, dialect } = deps;
  const toIntegration = (row: IntegrationRow): Integration => ({
    id: row.id,
    platform: row.platform,
    domain: row.domain,
    active: dialect.readBoolean(row.active),
    created_at: toIso(row.created_at)!,
  });

  return {
    async create(
      db: Knex | Knex.Transaction,
      workspaceId: string,
      input: { platform: string; domain: string },
    ): Promise<CreatedIntegration> {
      const apiKey = `${INTEGRATION_KEY_PREFIX}${randomToken(40)}`;
      const row: IntegrationRow = {
        id: uuidv7(),
        workspace_id: workspaceId,
        platform: input.platform,
        domain: input.domain,
        api_key_hash: hashSecret(apiKey),
        active: true,
        created_at: Date.now(),
      };
      await db('integrations').insert(row);
      return { ...toIntegration(row), api_key: apiKey };
    },

    async list(workspaceId: string): Promise<Integration[]> {
      const rows = await knex<IntegrationRow>('integrations').where({ workspace_id: workspaceId }).orderBy('created_at');
      return rows.map(toIntegration);
    },
  };
}

export type IntegrationService = ReturnType<typeof createIntegrationService>;
