import type { Dialect } from '../db/dialect/dialect.js';
import { selectPage } from '../db/page.js';
import type { Paging } from '../shared/paging.js';
import { toIso } from '../shared/time.js';
import type { Integration } from './integration.schema.js';
import type { Db } from '../db/database.js';

export interface IntegrationRow {
  id: string;
  workspace_id: string;
  platform: string;
  domain: string;
  api_key_hash: string;
  active: boolean;
  created_at: number;
}

export function createIntegrationStore(dialect: Dialect) {
  const fromRow = (raw: Record<string, unknown>): IntegrationRow => ({
    ...(raw as unknown as IntegrationRow),
    active: dialect.readBoolean(raw.active),
    created_at: dialect.readNumber(raw.created_at),
  });

  return {
    toIntegration: (row: IntegrationRow): Integration => ({
      id: row.id,
      platform: row.platform,
      domain: row.domain,
      active: row.active,
      created_at: toIso(row.created_at)!,
    }),

    async insert(db: Db, row: IntegrationRow): Promise<void> {
      await db('integrations').insert(row);
    },

    /** Any workspace's integration: the webhook path names it without a workspace. */
    async findById(db: Db, id: string): Promise<IntegrationRow | null> {
      const row = await db('integrations').where({ id }).first();
      return row ? fromRow(row) : null;
    },

    async findInWorkspace(db: Db, workspaceId: string, id: string, lock = false): Promise<IntegrationRow | null> {
      const query = db('integrations').where({ workspace_id: workspaceId, id }).first();
      const row = await (lock ? dialect.forUpdate(query) : query);
      return row ? fromRow(row) : null;
    },

    /** The domains of the workspace's active website integrations. */
    async activeWebsiteDomains(db: Db, workspaceId: string): Promise<string[]> {
      const rows = await db('integrations').where({ workspace_id: workspaceId, platform: 'website', active: true }).select('domain');
      return rows.map((row: { domain: string }) => row.domain);
    },

    list: (db: Db, workspaceId: string, paging: Paging) =>
      selectPage(
        db('integrations').where({ workspace_id: workspaceId }),
        [
          { column: 'created_at', order: 'asc' },
          { column: 'id', order: 'asc' },
        ],
        paging,
        fromRow,
      ),

    async update(
      db: Db,
      id: string,
      changes: Partial<Pick<IntegrationRow, 'active' | 'domain' | 'api_key_hash'>>,
    ): Promise<void> {
      await db('integrations').where({ id }).update(changes);
    },
  };
}

export type IntegrationStore = ReturnType<typeof createIntegrationStore>;
