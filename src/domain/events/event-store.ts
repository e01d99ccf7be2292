import type { Knex } from 'knex';
import { chunk, insertRows } from '../db/bulk.js';
import type { Dialect } from '../db/dialect/dialect.js';
import { selectPage } from '../db/page.js';
import type { Paging } from '../shared/paging.js';
import { toIso } from '../shared/time.js';
import type { EventRecord } from './event.schema.js';

type Db = Knex | Knex.Transaction;

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

    async insert(trx: Db, rows: EventRow[]): Promise<void> {
      await insertRows(
        trx,
        dialect,
        'events',
        rows.map((row) => ({ ...row, properties: dialect.writeJson(row.properties) })),
      );
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

    async list(db: Db, workspaceId: string, filter: { contact_id?: string; event_name?: string }, paging: Paging) {
      const base = db('events').where({ workspace_id: workspaceId });
      if (filter.contact_id) base.where({ contact_id: filter.contact_id });
      if (filter.event_name) base.where({ event_name: filter.event_name });
      return selectPage(
        base,
        [
          { column: 'created_at', order: 'desc' },
          { column: 'id', order: 'desc' },
        ],
        paging,
        toRecord,
      );
    },
  };
}

export type EventStore = ReturnType<typeof createEventStore>;
