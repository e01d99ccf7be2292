import type { Db } from '../db/database.js';
import type { Dialect } from '../db/dialect/dialect.js';
import { NEWEST_FIRST, selectPage } from '../db/page.js';
import type { Paging } from '../shared/paging.js';
import { toIso } from '../shared/time.js';
import type { AbTest, Campaign, Variant } from './campaign.schema.js';

/**
 * A campaign as stored: the record's fields, but its times in epoch milliseconds, and the columns the API does
 * not show (its workspace, when sending started, the recipients skipped).
 */
export type CampaignRow = Omit<Campaign, 'send_at' | 'sent_at' | 'created_at' | 'updated_at' | 'ab_test'> & {
  workspace_id: string;
  ab_test: AbTest | null;
  /** The A/B test's winner (a variant's index) once chosen, and when the test ends once its group is sent. */
  ab_winner: number | null;
  ab_test_ends_at: number | null;
  send_at: number | null;
  started_at: number | null;
  sent_at: number | null;
  skipped: number;
  created_at: number;
  updated_at: number;
};

export function createCampaignStore(dialect: Dialect) {
  /** JSON columns written as the dialect stores them. */
  const toColumns = (patch: Partial<CampaignRow>): Record<string, unknown> => ({
    ...patch,
    ...(patch.variants !== undefined ? { variants: patch.variants === null ? null : dialect.writeJson(patch.variants) } : {}),
    ...(patch.ab_test !== undefined ? { ab_test: patch.ab_test === null ? null : dialect.writeJson(patch.ab_test) } : {}),
  });

  const fromRow = (raw: Record<string, unknown>): CampaignRow => ({
    ...(raw as unknown as CampaignRow),
    send_at: dialect.readNullableNumber(raw.send_at),
    started_at: dialect.readNullableNumber(raw.started_at),
    sent_at: dialect.readNullableNumber(raw.sent_at),
    recipients: dialect.readNullableNumber(raw.recipients),
    variants: raw.variants === null || raw.variants === undefined ? null : dialect.readJson<Variant[]>(raw.variants),
    ab_test: raw.ab_test === null || raw.ab_test === undefined ? null : dialect.readJson<AbTest>(raw.ab_test),
    ab_winner: dialect.readNullableNumber(raw.ab_winner),
    ab_test_ends_at: dialect.readNullableNumber(raw.ab_test_ends_at),
    skipped: dialect.readNumber(raw.skipped),
    created_at: dialect.readNumber(raw.created_at),
    updated_at: dialect.readNumber(raw.updated_at),
  });

  return {
    toRecord: (row: CampaignRow): Campaign => ({
      id: row.id,
      name: row.name,
      subject: row.subject,
      html: row.html,
      format: row.format,
      text: row.text ?? null,
      segment_id: row.segment_id ?? null,
      from_email: row.from_email ?? null,
      from_name: row.from_name ?? null,
      status: row.status,
      send_at: toIso(row.send_at),
      sent_at: toIso(row.sent_at),
      recipients: row.recipients,
      variants: row.variants,
      ab_test: row.ab_test && { ...row.ab_test, winner: row.ab_winner, test_ends_at: toIso(row.ab_test_ends_at) },
      created_at: toIso(row.created_at)!,
      updated_at: toIso(row.updated_at)!,
    }),

    async insert(db: Db, row: CampaignRow): Promise<void> {
      await db('campaigns').insert(toColumns(row));
    },

    async find(db: Db, workspaceId: string, id: string, lock = false): Promise<CampaignRow | null> {
      const query = db('campaigns').where({ workspace_id: workspaceId, id }).first();
      const row = await (lock ? dialect.forUpdate(query) : query);
      return row ? fromRow(row) : null;
    },

    /** By id alone: for the worker's jobs, which carry the id only. */
    async findById(db: Db, id: string): Promise<CampaignRow | null> {
      const row = await db('campaigns').where({ id }).first();
      return row ? fromRow(row) : null;
    },

    async update(db: Db, id: string, patch: Partial<CampaignRow>): Promise<void> {
      await db('campaigns').where({ id }).update(toColumns(patch));
    },

    async delete(db: Db, id: string): Promise<void> {
      await db('campaigns').where({ id }).delete();
    },

    async addSkipped(db: Db, id: string, count: number): Promise<void> {
      if (count > 0) await db('campaigns').where({ id }).increment('skipped', count);
    },

    /** Marks a sending campaign sent; false when it was not sending (another worker got there first). */
    async markSent(db: Db, id: string, at: number): Promise<boolean> {
      return (await db('campaigns').where({ id, status: 'sending' }).update({ status: 'sent', sent_at: at, updated_at: at })) > 0;
    },

    list: (db: Db, workspaceId: string, paging: Paging) =>
      selectPage(db('campaigns').where({ workspace_id: workspaceId }), NEWEST_FIRST, paging, fromRow),

    /** Names of campaigns by id (the revenue report). */
    async names(db: Db, workspaceId: string, ids: string[]): Promise<Map<string, string>> {
      if (ids.length === 0) return new Map();
      const rows = await db('campaigns').where({ workspace_id: workspaceId }).whereIn('id', ids).select('id', 'name');
      return new Map(rows.map((row: { id: string; name: string }) => [row.id, row.name]));
    },
  };
}

export type CampaignStore = ReturnType<typeof createCampaignStore>;
