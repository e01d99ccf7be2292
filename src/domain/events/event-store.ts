import type { Knex } from 'knex';
import { chunk } from '../db/bulk.js';
import { bulkInsert } from '../db/bulk-insert.js';
import type { Dialect } from '../db/dialect/dialect.js';
import { NEWEST_FIRST, selectPage } from '../db/page.js';
import type { Paging } from '../shared/paging.js';
import { toIso } from '../shared/time.js';
import type { EventRecord } from './event.schema.js';
import { compositeKey } from '../shared/keys.js';
import type { Db } from '../db/database.js';

export interface EventRow {
  id: string;
  workspace_id: string;
  contact_id: string | null;
  anonymous_id: string | null;
  event_name: string;
  properties: Record<string, unknown>;
  source: string | null;
  dedupe_key: string | null;
  created_at: number;
  received_at: number;
}

/** `properties.dedupe_key`, kept in its own indexed column for batch corrections. */
export function dedupeKeyOf(properties: Record<string, unknown>): string | null {
  const value = properties.dedupe_key;
  if (typeof value !== 'string' && typeof value !== 'number') return null;
  const text = String(value);
  return text.length > 0 && text.length <= 255 ? text : null;
}

export function createEventStore(dialect: Dialect) {
  const toRecord = (row: Record<string, unknown>): EventRecord => ({
    id: row.id as string,
    contact_id: (row.contact_id as string | null) ?? null,
    event_name: row.event_name as string,
    properties: dialect.readJson<Record<string, unknown>>(row.properties) ?? {},
    source: (row.source as string | null) ?? null,
    created_at: toIso(row.created_at as number)!,
  });

  return {
    toRecord,

    /** Event records by id (a flow's trigger events). */
    async findByIds(db: Db, ids: string[]): Promise<EventRecord[]> {
      const out: EventRecord[] = [];
      for (const part of chunk(ids, 500)) out.push(...(await db('events').whereIn('id', part)).map(toRecord));
      return out;
    },

    /**
     * A contact's events of one name in a time range (`after` < created_at ≤ `upTo`), newest first, at most
     * `limit`: a range of the events' (workspace_id, contact_id, event_name, created_at) index.
     */
    async ofContact(db: Db, workspaceId: string, contactId: string, eventName: string, range: { after: number; upTo?: number }, limit: number): Promise<EventRecord[]> {
      const query = db('events').where({ workspace_id: workspaceId, contact_id: contactId, event_name: eventName }).where('created_at', '>', range.after);
      if (range.upTo !== undefined) query.where('created_at', '<=', range.upTo);
      return (await query.orderBy('created_at', 'desc').limit(limit)).map(toRecord);
    },

    /** Held until the transaction's next statement: events carry their own ids. */
    async insert(trx: Db, rows: EventRow[]): Promise<void> {
      await bulkInsert(trx, dialect, 'events', rows, ['properties'], { hold: true });
    },

    /**
     * `email_key\0event_name\0dedupe_key` of the stored events among these contacts' emails and dedupe keys:
     * one query per 1000 keys, served by the events' (workspace_id, dedupe_key) index.
     */
    async storedDedupeKeys(
      db: Db,
      workspaceId: string,
      keys: { emailKeys: string[]; eventNames: string[]; dedupeKeys: string[] },
    ): Promise<Set<string>> {
      const { emailKeys, eventNames, dedupeKeys } = keys;
      const found = new Set<string>();
      if (emailKeys.length === 0 || dedupeKeys.length === 0) return found;
      const wanted = new Set(emailKeys);
      const names = new Set(eventNames);
      // One seek per key on (workspace_id, dedupe_key); contact and name are checked on the few rows found.
      for (const part of chunk(dedupeKeys, 1000)) {
        const rows = await db('events')
          .join('contacts', 'contacts.id', 'events.contact_id')
          .where('events.workspace_id', workspaceId)
          .whereIn('events.dedupe_key', part)
          .select('contacts.email_key', 'events.event_name', 'events.dedupe_key');
        for (const row of rows) {
          if (wanted.has(row.email_key) && names.has(row.event_name)) {
            found.add(compositeKey(row.email_key, row.event_name, row.dedupe_key));
          }
        }
      }
      return found;
    },

    /** Stored events of these contacts carrying one of these dedupe keys, as rows (one query per 1000 keys). */
    async findByDedupeKeys(
      db: Db,
      workspaceId: string,
      keys: { contactIds: string[]; eventNames: string[]; dedupeKeys: string[] },
    ): Promise<EventRow[]> {
      const { contactIds, eventNames, dedupeKeys } = keys;
      const rows: EventRow[] = [];
      if (contactIds.length === 0 || dedupeKeys.length === 0) return rows;
      const wanted = new Set(contactIds);
      const names = new Set(eventNames);
      // One seek per key on (workspace_id, dedupe_key); contact and name are checked on the few rows found.
      for (const part of chunk(dedupeKeys, 1000)) {
        const found = await db('events').where({ workspace_id: workspaceId }).whereIn('dedupe_key', part).orderBy('id');
        for (const raw of found) {
          if (!wanted.has(raw.contact_id) || !names.has(raw.event_name)) continue;
          rows.push({
            ...(raw as EventRow),
            properties: dialect.readJson<Record<string, unknown>>(raw.properties) ?? {},
            created_at: dialect.readNumber(raw.created_at),
            received_at: dialect.readNumber(raw.received_at),
          });
        }
      }
      return rows;
    },

    /**
     * Writes changed columns of stored events: one UPDATE per set of changed columns (a few at most, whatever
     * the count). A column with one value for all is set plainly; differing values go through
     * `CASE id WHEN … THEN … ELSE column END`, which both databases run and PostgreSQL types from the column.
     */
    async applyPatches(db: Db, patches: Array<{ id: string; patch: Partial<Pick<EventRow, 'properties' | 'source' | 'created_at'>> }>) {
      const groups = new Map<string, Array<{ id: string; columns: Record<string, unknown> }>>();
      for (const { id, patch } of patches) {
        const columns: Record<string, unknown> = {};
        if (patch.properties !== undefined) columns.properties = dialect.writeJson(patch.properties);
        if (patch.source !== undefined) columns.source = patch.source;
        if (patch.created_at !== undefined) columns.created_at = patch.created_at;
        const names = Object.keys(columns).join(',');
        if (names === '') continue;
        groups.set(names, [...(groups.get(names) ?? []), { id, columns }]);
      }
      for (const [names, group] of groups) {
        for (const part of chunk(group, 1000)) {
          const update: Record<string, unknown> = {};
          for (const column of names.split(',')) {
            const values = part.map((p) => p.columns[column]);
            if (values.every((v) => v === values[0])) update[column] = values[0];
            else {
              update[column] = db.raw(`CASE ?? ${part.map(() => 'WHEN ? THEN ?').join(' ')} ELSE ?? END`, [
                'id',
                ...part.flatMap((p) => [p.id, p.columns[column] as Knex.Value]),
                column,
              ]);
            }
          }
          await db('events')
            .whereIn(
              'id',
              part.map((p) => p.id),
            )
            .update(update);
        }
      }
    },

    /**
     * Gives an identified visitor their anonymous history: events recorded under these anonymous ids and not
     * yet owned by anyone now belong to the contact.
     */
    async attachAnonymous(trx: Db, workspaceId: string, anonymousIds: string[], contactId: string): Promise<number> {
      let attached = 0;
      for (const part of chunk(anonymousIds, 1000)) {
        attached += await trx('events')
          .where({ workspace_id: workspaceId })
          .whereIn('anonymous_id', part)
          .whereNull('contact_id')
          .update({ contact_id: contactId });
      }
      return attached;
    },

    /**
     * Every workspace's events that occurred at or after `since` (the operator's status): a range of the
     * (workspace_id, created_at) index per workspace, so the cost is the recent events, not the table.
     */
    async countSince(db: Db, since: number): Promise<number> {
      const [{ n }] = (await db('events')
        .whereIn('workspace_id', db('workspaces').select('id'))
        .where('created_at', '>=', since)
        .count({ n: '*' })) as [{ n: unknown }];
      return dialect.readNumber(n);
    },

    /** The workspace's events that occurred at or after `since`: a range of its (workspace_id, created_at) index. */
    async countInWorkspaceSince(db: Db, workspaceId: string, since: number): Promise<number> {
      const [{ n }] = (await db('events').where({ workspace_id: workspaceId }).where('created_at', '>=', since).count({ n: '*' })) as [{ n: unknown }];
      return dialect.readNumber(n);
    },

    async list(db: Db, workspaceId: string, filter: { contact_id?: string; event_name?: string }, paging: Paging) {
      const base = db('events').where({ workspace_id: workspaceId });
      if (filter.contact_id) base.where({ contact_id: filter.contact_id });
      if (filter.event_name) base.where({ event_name: filter.event_name });
      return selectPage(
        base,
        NEWEST_FIRST,
        paging,
        toRecord,
      );
    },
  };
}

export type EventStore = ReturnType<typeof createEventStore>;
