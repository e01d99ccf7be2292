import type { Db } from '../db/database.js';
import { chunk, chunkSizeFor } from '../db/bulk.js';
import { deferWrite } from '../db/deferred-writes.js';
import type { Dialect, SqlFragment } from '../db/dialect/dialect.js';
import { NEWEST_FIRST, selectPage } from '../db/page.js';
import type { Paging } from '../shared/paging.js';
import { toIso } from '../shared/time.js';
import type { Segment, SegmentConditions, SegmentMember } from './segment.schema.js';
import { conditionsSql } from './segment-sql.js';

export interface SegmentRow {
  id: string;
  workspace_id: string;
  name: string;
  conditions: SegmentConditions;
  has_time_window: boolean;
  created_at: number;
  updated_at: number;
}

/** Contacts per `IN (…)` list: far below either database's bind limit. */
const IDS_PER_QUERY = 1_000;

/** Restricts a query over contacts `c` to some ids (null: every contact of the workspace). */
type ContactScope = string[] | null;

/** Runs `step` once for the whole workspace, or once per slice of the contact ids. */
async function perScope<T>(scope: ContactScope, step: (ids: string[] | null) => Promise<T[]>): Promise<T[]> {
  if (scope === null) return step(null);
  const out: T[] = [];
  for (const part of chunk([...new Set(scope)], IDS_PER_QUERY)) out.push(...(await step(part)));
  return out;
}

export function createSegmentStore(dialect: Dialect) {
  const fromRow = (raw: Record<string, unknown>): SegmentRow => ({
    id: raw.id as string,
    workspace_id: raw.workspace_id as string,
    name: raw.name as string,
    conditions: dialect.readJson<SegmentConditions>(raw.conditions),
    has_time_window: dialect.readBoolean(raw.has_time_window),
    created_at: dialect.readNumber(raw.created_at),
    updated_at: dialect.readNumber(raw.updated_at),
  });
  const toColumns = (row: Partial<SegmentRow>) => ({ ...row, ...(row.conditions ? { conditions: dialect.writeJson(row.conditions) } : {}) });

  return {
    /**
     * The conditions as one SQL condition over `contacts c` at `now`, in this database's JSON functions: what
     * `matching`, `reevaluate` and `fill` take.
     */
    conditionsSql: (conditions: SegmentConditions, now: number): SqlFragment => conditionsSql(dialect, conditions, now),

    toRecord: (row: SegmentRow, memberCount: number): Segment => ({
      id: row.id,
      name: row.name,
      conditions: row.conditions,
      member_count: memberCount,
      created_at: toIso(row.created_at)!,
      updated_at: toIso(row.updated_at)!,
    }),

    async insert(db: Db, row: SegmentRow): Promise<void> {
      await db('segments').insert(toColumns(row));
    },

    async update(db: Db, id: string, patch: Partial<SegmentRow>): Promise<void> {
      await db('segments').where({ id }).update(toColumns(patch));
    },

    /** Its memberships go with it (foreign key ON DELETE CASCADE). */
    async delete(db: Db, id: string): Promise<void> {
      await db('segments').where({ id }).delete();
    },

    async find(db: Db, workspaceId: string, id: string, lock = false): Promise<SegmentRow | null> {
      const query = db('segments').where({ workspace_id: workspaceId, id }).first();
      const row = await (lock ? dialect.forUpdate(query) : query);
      return row ? fromRow(row) : null;
    },

    list: (db: Db, workspaceId: string, paging: Paging) =>
      selectPage(db('segments').where({ workspace_id: workspaceId }), NEWEST_FIRST, paging, fromRow),

    /** Every segment of these workspaces (the outbox consumer picks the ones a change can affect). */
    async inWorkspaces(db: Db, workspaceIds: string[]): Promise<SegmentRow[]> {
      if (workspaceIds.length === 0) return [];
      return (await db('segments').whereIn('workspace_id', workspaceIds).orderBy('id')).map(fromRow);
    },

    /** Segments with a moving time window, of every workspace (the hourly refresh). */
    async withTimeWindow(db: Db): Promise<SegmentRow[]> {
      return (await db('segments').where({ has_time_window: true }).orderBy('id')).map(fromRow);
    },

    async anyWithTimeWindow(db: Db): Promise<boolean> {
      return (await db('segments').where({ has_time_window: true }).first('id')) !== undefined;
    },

    async memberCounts(db: Db, segmentIds: string[]): Promise<Map<string, number>> {
      if (segmentIds.length === 0) return new Map();
      const rows = await db('segment_members').whereIn('segment_id', segmentIds).groupBy('segment_id').select('segment_id', db.raw('COUNT(*) AS n'));
      return new Map(rows.map((row: { segment_id: string; n: unknown }) => [row.segment_id, dialect.readNumber(row.n)]));
    },

    members: (db: Db, segmentId: string, paging: Paging) =>
      selectPage(
        db('segment_members as m').join('contacts as c', 'c.id', 'm.contact_id').where('m.segment_id', segmentId).select('m.contact_id', 'c.email', 'm.entered_at'),
        [
          { column: 'm.entered_at', order: 'desc' },
          { column: 'm.contact_id', order: 'desc' },
        ],
        paging,
        (raw): SegmentMember => ({ contact_id: raw.contact_id as string, email: raw.email as string, entered_at: toIso(dialect.readNumber(raw.entered_at))! }),
      ),

    /** Which of these contacts meet the condition (given as SQL over `c`). */
    matching: (db: Db, workspaceId: string, condition: SqlFragment, contactIds: string[]): Promise<string[]> =>
      perScope(contactIds, (ids) =>
        db('contacts as c').where('c.workspace_id', workspaceId).whereIn('c.id', ids!).whereRaw(condition.sql, condition.bindings).pluck('c.id'),
      ),

    /**
     * Brings the segment's membership up to date for the contacts in scope (null: everyone): members who no
     * longer meet the condition leave (their row goes), contacts who meet it and were not members enter at
     * `now`; members who stay keep their row and `entered_at`. Returns the ids that entered.
     */
    async reevaluate(db: Db, segment: SegmentRow, condition: SqlFragment, now: number, scope: ContactScope): Promise<string[]> {
      return perScope(scope, async (ids) => {
        const leaving = db('segment_members')
          .where('segment_id', segment.id)
          .whereNotExists(db('contacts as c').select(db.raw('1')).whereRaw('c.id = segment_members.contact_id').whereRaw(condition.sql, condition.bindings));
        if (ids) leaving.whereIn('contact_id', ids);
        // Held: it travels with the read below (one round trip on PostgreSQL), which sees its effect.
        await deferWrite(dialect, db, leaving.delete());
        const entering = db('contacts as c')
          .where('c.workspace_id', segment.workspace_id)
          .whereRaw(condition.sql, condition.bindings)
          .whereNotExists(db('segment_members as m').select(db.raw('1')).where('m.segment_id', segment.id).whereRaw('m.contact_id = c.id'));
        if (ids) entering.whereIn('c.id', ids);
        const candidates: string[] = await entering.pluck('c.id');
        // Another process may have let the same contact in meanwhile: only the rows this insert wrote entered.
        const entered: string[] = [];
        for (const part of chunk(candidates, chunkSizeFor(dialect, 4))) {
          const rows = part.map((contactId) => ({ segment_id: segment.id, contact_id: contactId, workspace_id: segment.workspace_id, entered_at: now }));
          const written = await db('segment_members').insert(rows).onConflict(['segment_id', 'contact_id']).ignore().returning('contact_id');
          entered.push(...written.map((row: { contact_id: string }) => row.contact_id));
        }
        return entered;
      });
    },

    /** A new segment's members, all at once in the database (nobody "enters" a segment no flow can follow yet). */
    async fill(db: Db, segment: SegmentRow, condition: SqlFragment, now: number): Promise<void> {
      await db.raw(
        `INSERT INTO segment_members (segment_id, contact_id, workspace_id, entered_at)
         SELECT ?, c.id, c.workspace_id, ? FROM contacts c WHERE c.workspace_id = ? AND (${condition.sql})`,
        [segment.id, now, segment.workspace_id, ...condition.bindings],
      );
    },

    /** Whether the segment exists in the workspace. */
    async exists(db: Db, workspaceId: string, id: string): Promise<boolean> {
      return (await db('segments').where({ workspace_id: workspaceId, id }).first('id')) !== undefined;
    },
  };
}

export type SegmentStore = ReturnType<typeof createSegmentStore>;
