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
  /** Website integrations: the hash of their bearer key. Null for Shopify and WooCommerce, which sign instead. */
  api_key_hash: string | null;
  /** Shopify and WooCommerce: the webhook secret their signatures are made with. */
  secret: string | null;
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

    /** Sets the domain of integrations that have none yet (a concurrent first delivery may have set it). */
    async fillDomains(db: Db, domains: Array<{ id: string; domain: string }>): Promise<void> {
      for (const { id, domain } of domains) await db('integrations').where({ id, domain: '' }).update({ domain });
    },

    /** Adds to the counts of ignored deliveries by (integration, topic), in key order (no deadlocks between groups). */
    async countIgnoredTopics(db: Db, counts: Array<{ integration_id: string; topic: string; count: number }>): Promise<void> {
      if (counts.length === 0) return;
      const sorted = [...counts].sort((a, b) => (a.integration_id + a.topic < b.integration_id + b.topic ? -1 : 1));
      await db('integration_ignored_topics')
        .insert(sorted)
        .onConflict(['integration_id', 'topic'])
        .merge({ count: db.raw('integration_ignored_topics.count + excluded.count') });
    },

    async ignoredTopics(db: Db, integrationId: string): Promise<Record<string, number>> {
      const rows = await db('integration_ignored_topics').where({ integration_id: integrationId }).orderBy('topic');
      return Object.fromEntries(rows.map((row: { topic: string; count: unknown }) => [row.topic, Number(row.count)]));
    },
  };
}

export type IntegrationStore = ReturnType<typeof createIntegrationStore>;
