import type { Knex } from 'knex';
import type { Dialect } from '../db/dialect/dialect.js';
import { toIso } from '../shared/time.js';
import type { Workspace } from './workspace.schema.js';

/** The columns a workspace's record is read from: the record's fields, but its creation time in epoch milliseconds. */
type WorkspaceRow = Omit<Workspace, 'created_at'> & { created_at: number };

export function createWorkspaceStore(dialect: Dialect) {
  const toWorkspace = (row: WorkspaceRow): Workspace => ({
    id: row.id,
    name: row.name,
    site_id: row.site_id,
    click_window_days: dialect.readNumber(row.click_window_days),
    open_window_days: dialect.readNumber(row.open_window_days),
    contact_limit: dialect.readNullableNumber(row.contact_limit),
    created_at: toIso(row.created_at)!,
  });

  return {
    async insert(db: Knex | Knex.Transaction, row: Pick<WorkspaceRow, 'id' | 'name' | 'site_id' | 'created_at'> & { secret: string }) {
      await db('workspaces').insert(row);
    },
    async findById(db: Knex | Knex.Transaction, id: string): Promise<Workspace | null> {
      const row = await db<WorkspaceRow>('workspaces').where({ id }).first();
      return row ? toWorkspace(row) : null;
    },
    async findBySiteId(db: Knex | Knex.Transaction, siteId: string): Promise<Workspace | null> {
      const row = await db<WorkspaceRow>('workspaces').where({ site_id: siteId }).first();
      return row ? toWorkspace(row) : null;
    },
    async any(db: Knex | Knex.Transaction): Promise<boolean> {
      return (await db('workspaces').first('id')) !== undefined;
    },
    async list(db: Knex | Knex.Transaction): Promise<Workspace[]> {
      const rows = await db<WorkspaceRow>('workspaces').orderBy('created_at');
      return rows.map(toWorkspace);
    },
  };
}

export type WorkspaceStore = ReturnType<typeof createWorkspaceStore>;
