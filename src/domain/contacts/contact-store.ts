import type { Knex } from 'knex';
import { byWorkspace, chunk, chunkSizeFor } from '../db/bulk.js';
import { bulkInsert, bulkInsertIgnoringConflicts } from '../db/bulk-insert.js';
import type { Dialect } from '../db/dialect/dialect.js';
import { NEWEST_FIRST, selectPage } from '../db/page.js';
import type { Paging } from '../shared/paging.js';
import { toIso } from '../shared/time.js';
import { emailKey } from '../shared/keys.js';
import { type ConsentChange, type Contact, type SubscriptionStatus } from './contact.schema.js';
import { compositeKey, pairOf } from '../shared/keys.js';
import type { Db } from '../db/database.js';

export interface ContactRow {
  id: string;
  workspace_id: string;
  email: string;
  email_key: string;
  properties: Record<string, unknown>;
  subscription_status: SubscriptionStatus;
  source: string | null;
  lifetime_revenue: number;
  orders_count: number;
  created_at: number;
  updated_at: number;
}

/** A change of a contact's subscription status, recorded with time and origin. */
export interface StatusChange {
  contactId: string;
  from: SubscriptionStatus | null;
  to: SubscriptionStatus;
  origin: string;
  at: number;
  /** The message whose consent link (or a relay's complaint about which) made the change. */
  messageId?: string | null;
}

export const contactKey = (workspaceId: string, email: string) => compositeKey(workspaceId, emailKey(email));

// Tuple IN lists: two bindings a pair, well under either database's limit.
const PAIRS_PER_QUERY = 5_000;

/**
 * The contacts a person can reach: erased contacts stay as tombstones (their orders point at them) and are
 * left out of every read.
 */
const people = (db: Db) => db('contacts').whereNull('erased_at');

export function createContactStore(dialect: Dialect) {
  const fromRow = (raw: Record<string, unknown>): ContactRow => ({
    ...(raw as unknown as ContactRow),
    properties: dialect.readJson<Record<string, unknown>>(raw.properties) ?? {},
    lifetime_revenue: dialect.readNumber(raw.lifetime_revenue),
    orders_count: dialect.readNumber(raw.orders_count),
  });

  async function selectByKeys(db: Db, pairs: [string, string][], lock: boolean): Promise<ContactRow[]> {
    const rows: ContactRow[] = [];
    for (const [workspaceId, keys] of byWorkspace(pairs, PAIRS_PER_QUERY)) {
      const query = people(db).where({ workspace_id: workspaceId }).whereIn('email_key', keys).orderBy('id');
      rows.push(...(await (lock ? dialect.forUpdate(query) : query)).map(fromRow));
    }
    return rows;
  }

  async function anonymousIdsOf(db: Db, contactIds: string[]): Promise<Map<string, string[]>> {
    const byContact = new Map<string, string[]>();
    for (const part of chunk(contactIds, PAIRS_PER_QUERY)) {
      const rows = await db('contact_anonymous_ids')
        .whereIn('contact_id', part)
        .orderBy('created_at')
        .select('contact_id', 'anonymous_id');
      for (const row of rows) {
        const list = byContact.get(row.contact_id) ?? [];
        list.push(row.anonymous_id);
        byContact.set(row.contact_id, list);
      }
    }
    return byContact;
  }

  function toContact(row: ContactRow, anonymousIds: string[]): Contact {
    return {
      id: row.id,
      email: row.email,
      properties: row.properties,
      subscription_status: row.subscription_status,
      source: row.source,
      anonymous_ids: anonymousIds,
      lifetime_revenue: row.lifetime_revenue,
      orders_count: row.orders_count,
      created_at: toIso(row.created_at)!,
      updated_at: toIso(row.updated_at)!,
    };
  }

  return {
    fromRow,

    /** Contacts of (workspace, email key) pairs; with `lock`, locked (PostgreSQL) until the transaction ends. */
    findByKeys: (db: Db, pairs: [string, string][], { lock }: { lock: boolean }) => selectByKeys(db, pairs, lock),

    /** Inserts contacts, yielding to the unique (workspace_id, email_key) index; returns the ids written. */
    insertIgnoringConflicts: (db: Db, rows: ContactRow[]): Promise<Set<string>> =>
      bulkInsertIgnoringConflicts(db, dialect, 'contacts', rows, ['workspace_id', 'email_key'], ['properties']),

    /** Writes the properties of stored contacts, a statement per few hundred (an upsert on their unique key). */
    async updateProperties(db: Db, rows: ContactRow[], now: number): Promise<void> {
      for (const part of chunk(rows, chunkSizeFor(dialect, 11))) {
        await db('contacts')
          .insert(part.map((row) => ({ ...row, properties: dialect.writeJson(row.properties), updated_at: now })))
          .onConflict(['workspace_id', 'email_key'])
          .merge(['properties', 'updated_at']);
      }
    },

    /** The workspace's contacts (erased ones left out, as GET /contacts leaves them) and how many are subscribed. */
    async audience(db: Db, workspaceId: string): Promise<{ contacts: number; subscribed: number }> {
      const row = await people(db)
        .where({ workspace_id: workspaceId })
        .first(db.raw('COUNT(*) AS contacts'), db.raw("SUM(CASE WHEN subscription_status = 'subscribed' THEN 1 ELSE 0 END) AS subscribed"));
      return { contacts: dialect.readNumber(row?.contacts), subscribed: dialect.readNumber(row?.subscribed) };
    },

    async countInWorkspace(db: Db, workspaceId: string): Promise<number> {
      const [{ n }] = (await people(db).where({ workspace_id: workspaceId }).count({ n: '*' })) as [{ n: number | string }];
      return Number(n);
    },

    /** Existing contacts of (workspace, email) pairs, by `contactKey`; one query per workspace. Never creates. */
    async findByEmails(db: Db, pairs: Array<readonly [string, string]>): Promise<Map<string, ContactRow>> {
      const keys = [...new Set(pairs.map(([workspaceId, email]) => contactKey(workspaceId, email)))];
      const found = new Map<string, ContactRow>();
      for (const row of await selectByKeys(db, keys.map(pairOf), false)) found.set(compositeKey(row.workspace_id, row.email_key), row);
      return found;
    },

    /**
     * The ids of existing contacts of (workspace, email) pairs, by `contactKey`: what an event's owner needs,
     * two columns instead of whole rows (the batch event writes look up 1000 emails a chunk). Never creates.
     */
    async idsByEmails(db: Db, pairs: Array<readonly [string, string]>): Promise<Map<string, string>> {
      const keys = [...new Set(pairs.map(([workspaceId, email]) => contactKey(workspaceId, email)))];
      const ids = new Map<string, string>();
      for (const [workspaceId, emailKeys] of byWorkspace(keys.map(pairOf), PAIRS_PER_QUERY)) {
        const rows = await people(db).where({ workspace_id: workspaceId }).whereIn('email_key', emailKeys).select('id', 'email_key');
        for (const row of rows as Array<{ id: string; email_key: string }>) ids.set(compositeKey(workspaceId, row.email_key), row.id);
      }
      return ids;
    },

    /** With `lock`, locked (PostgreSQL) until the transaction ends, in id order. */
    async findByIds(db: Db, workspaceId: string, ids: string[], { lock }: { lock: boolean } = { lock: false }): Promise<ContactRow[]> {
      const rows: ContactRow[] = [];
      for (const part of chunk(ids, PAIRS_PER_QUERY)) {
        const query = people(db).where({ workspace_id: workspaceId }).whereIn('id', part).orderBy('id');
        rows.push(...(await (lock ? dialect.forUpdate(query) : query)).map(fromRow));
      }
      return rows;
    },

    /**
     * The time of each contact's latest status decision (contacts with none are absent). A contact created
     * `non_subscribed` by default (origin `create:…`) was decided nothing for: that first entry does not count.
     */
    async lastStatusDecisions(db: Db, contactIds: string[]): Promise<Map<string, number>> {
      const last = new Map<string, number>();
      for (const part of chunk(contactIds, PAIRS_PER_QUERY)) {
        const rows = await db('subscription_changes')
          .whereIn('contact_id', part)
          .whereNot((q) => q.whereNull('from_status').where('to_status', 'non_subscribed').where('origin', 'like', 'create:%'))
          .groupBy('contact_id')
          .select('contact_id', db.raw('MAX(created_at) AS at'));
        for (const row of rows as Array<{ contact_id: string; at: unknown }>) last.set(row.contact_id, dialect.readNumber(row.at));
      }
      return last;
    },

    /** Sets the subscription status of contacts: one statement per status. */
    async setStatuses(db: Db, statuses: Map<string, SubscriptionStatus>): Promise<void> {
      const now = Date.now();
      for (const status of new Set(statuses.values())) {
        const ids = [...statuses].filter(([, s]) => s === status).map(([id]) => id).sort();
        for (const part of chunk(ids, PAIRS_PER_QUERY)) await db('contacts').whereIn('id', part).update({ subscription_status: status, updated_at: now });
      }
    },

    async findById(db: Db, workspaceId: string, id: string, lock = false): Promise<ContactRow | null> {
      const query = people(db).where({ workspace_id: workspaceId, id }).first();
      const row = await (lock ? dialect.forUpdate(query) : query);
      return row ? fromRow(row) : null;
    },

    async update(
      db: Db,
      id: string,
      changes: { properties?: Record<string, unknown>; subscription_status?: SubscriptionStatus },
    ): Promise<void> {
      const patch: Record<string, unknown> = { updated_at: Date.now() };
      if (changes.properties) patch.properties = dialect.writeJson(changes.properties);
      if (changes.subscription_status) patch.subscription_status = changes.subscription_status;
      await db('contacts').where({ id }).update(patch);
    },

    /** Held until the transaction's next statement: history rows nobody reads back in the same transaction. */
    async recordStatusChanges(db: Db, changes: StatusChange[]): Promise<void> {
      await bulkInsert(
        db,
        dialect,
        'subscription_changes',
        changes.map((change) => ({
          contact_id: change.contactId,
          from_status: change.from,
          to_status: change.to,
          origin: change.origin,
          created_at: change.at,
          message_id: change.messageId ?? null,
        })),
        [],
        { hold: true },
      );
    },

    /**
     * Contacts unsubscribed through the messages `messages` selects (its `id`), counted once per contact and per
     * `grp`, the caller's group key (a campaign or flow): the consent changes that name one of those messages.
     */
    async unsubscribeCounts(db: Db, messages: Knex.QueryBuilder): Promise<Map<string, number>> {
      const rows: Array<{ grp: string; unsubscribed: number | string }> = await db
        .from(messages.as('m'))
        .join('subscription_changes as sc', 'sc.message_id', 'm.id')
        .where('sc.to_status', 'unsubscribed')
        .groupBy('m.grp')
        .select('m.grp', db.raw('COUNT(DISTINCT sc.contact_id) AS unsubscribed'));
      return new Map(rows.map((row) => [row.grp, Number(row.unsubscribed)]));
    },

    async statusChanges(db: Db, contactId: string): Promise<ConsentChange[]> {
      const rows = await db('subscription_changes').where({ contact_id: contactId }).orderBy('id');
      return rows.map((row: Record<string, unknown>) => ({
        status: row.to_status as SubscriptionStatus,
        previous_status: (row.from_status as SubscriptionStatus | null) ?? null,
        origin: row.origin as string,
        at: toIso(row.created_at as number)!,
      }));
    },

    /**
     * Turns the contacts into tombstones: no email (each one's key becomes its id, which no email can equal, so
     * the address is free for a new contact), no properties, status or source; their consent history and
     * anonymous ids go. Revenue totals stay: they are sums over the orders they keep.
     */
    async erase(db: Db, ids: string[], now: number): Promise<void> {
      await db('contact_anonymous_ids').whereIn('contact_id', ids).delete();
      await db('subscription_changes').whereIn('contact_id', ids).delete();
      // Each row's key becomes its own id: one statement for all of them.
      await db('contacts')
        .whereIn('id', ids)
        .update({
          email: '',
          email_key: db.ref('id'),
          properties: dialect.writeJson({}),
          subscription_status: 'non_subscribed',
          source: null,
          erased_at: now,
          updated_at: now,
        });
    },

    /** Claims anonymous ids for contacts; an id already claimed keeps its first owner. */
    async linkAnonymousIds(db: Db, links: { workspaceId: string; anonymousId: string; contactId: string }[]) {
      if (links.length === 0) return new Map<string, string>();
      const now = Date.now();
      const sorted = [...links].sort((a, b) =>
        compositeKey(a.workspaceId, a.anonymousId) < compositeKey(b.workspaceId, b.anonymousId) ? -1 : 1,
      );
      for (const part of chunk(sorted, chunkSizeFor(dialect, 4))) {
        await db('contact_anonymous_ids')
          .insert(
            part.map((l) => ({
              workspace_id: l.workspaceId,
              anonymous_id: l.anonymousId,
              contact_id: l.contactId,
              created_at: now,
            })),
          )
          .onConflict(['workspace_id', 'anonymous_id'])
          .ignore();
      }
      return this.ownersOfAnonymousIds(
        db,
        links.map((l) => [l.workspaceId, l.anonymousId]),
      );
    },

    /** `compositeKey(workspace, anonymous_id)` → owning contact id. */
    async ownersOfAnonymousIds(db: Db, pairs: [string, string][]): Promise<Map<string, string>> {
      const owners = new Map<string, string>();
      for (const [workspaceId, anonymousIds] of byWorkspace(pairs, PAIRS_PER_QUERY)) {
        const rows = await db('contact_anonymous_ids')
          .where({ workspace_id: workspaceId })
          .whereIn('anonymous_id', anonymousIds)
          .select('workspace_id', 'anonymous_id', 'contact_id');
        for (const row of rows) owners.set(compositeKey(row.workspace_id, row.anonymous_id), row.contact_id);
      }
      return owners;
    },

    /** Management records for rows, with their anonymous ids in one query. */
    async toContacts(db: Db, rows: ContactRow[]): Promise<Contact[]> {
      const anonymous = await anonymousIdsOf(
        db,
        rows.map((r) => r.id),
      );
      return rows.map((row) => toContact(row, anonymous.get(row.id) ?? []));
    },

    async list(db: Db, workspaceId: string, filter: { email?: string }, paging: Paging) {
      const base = people(db).where({ workspace_id: workspaceId });
      if (filter.email) base.where({ email_key: emailKey(filter.email) });
      return selectPage(base, NEWEST_FIRST, paging, fromRow);
    },
  };
}

export type ContactStore = ReturnType<typeof createContactStore>;
