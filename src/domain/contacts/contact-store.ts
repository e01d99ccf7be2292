import { byWorkspace, chunk, chunkSizeFor, insertRows } from '../db/bulk.js';
import type { Dialect } from '../db/dialect/dialect.js';
import { NEWEST_FIRST, selectPage } from '../db/page.js';
import type { Paging } from '../shared/paging.js';
import { toIso } from '../shared/time.js';
import { emailKey, type Contact, type SubscriptionStatus } from './contact.schema.js';
import { uuidv7 } from '../shared/ids.js';
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

/** What to create when an email has no contact yet. */
export interface ContactSeed {
  workspaceId: string;
  email: string;
  properties: Record<string, unknown>;
  subscriptionStatus: SubscriptionStatus;
  source: string | null;
}

export interface EnsuredContact {
  row: ContactRow;
  /** True when this call created the contact (with the seed's properties). */
  created: boolean;
}

export const contactKey = (workspaceId: string, email: string) => `${workspaceId}\u0000${emailKey(email)}`;

// Tuple IN lists: two bindings a pair, well under either database's limit.
const PAIRS_PER_QUERY = 5_000;

/** The workspace's contact limit (null: none), from settings. */
export interface ContactLimits {
  contactLimitOf(db: Db, workspaceId: string): Promise<number | null>;
}

export function createContactStore(dialect: Dialect, limits: ContactLimits) {
  const fromRow = (raw: Record<string, unknown>): ContactRow => ({
    ...(raw as unknown as ContactRow),
    properties: dialect.readJson<Record<string, unknown>>(raw.properties) ?? {},
    lifetime_revenue: dialect.readNumber(raw.lifetime_revenue),
    orders_count: dialect.readNumber(raw.orders_count),
  });

  async function selectByKeys(db: Db, pairs: [string, string][], lock: boolean): Promise<ContactRow[]> {
    const rows: ContactRow[] = [];
    for (const [workspaceId, keys] of byWorkspace(pairs, PAIRS_PER_QUERY)) {
      const query = db('contacts').where({ workspace_id: workspaceId }).whereIn('email_key', keys).orderBy('id');
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

  /**
   * The keys (sorted) that may still become contacts: a workspace with a `contact_limit` takes new contacts
   * only up to it. Several processes creating at the same moment may overshoot by their concurrent inserts.
   */
  async function withinContactLimits(db: Db, keys: string[]): Promise<string[]> {
    if (keys.length === 0) return keys;
    const room = new Map<string, number>();
    for (const workspaceId of new Set(keys.map((key) => key.split('\u0000')[0]!))) {
      const limit = await limits.contactLimitOf(db, workspaceId);
      if (limit === null) continue;
      const [{ n }] = (await db('contacts').where({ workspace_id: workspaceId }).count({ n: '*' })) as [{ n: number | string }];
      room.set(workspaceId, Math.max(0, limit - Number(n)));
    }
    if (room.size === 0) return keys;
    return keys.filter((key) => {
      const workspaceId = key.split('\u0000')[0]!;
      const left = room.get(workspaceId);
      if (left === undefined) return true;
      room.set(workspaceId, left - 1);
      return left > 0;
    });
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

    /**
     * Finds the contact of each seed's email, creating the missing ones. A seed whose contact would pass the
     * workspace's contact limit is left out of the result. Race-free: creation is an insert
     * that yields to the unique (workspace_id, email_key) index, and a lost race re-reads the winner's row.
     * With `lock`, for callers that go on to change the rows, existing rows stay locked (PostgreSQL) until the
     * transaction ends; keys are taken in sorted order, so concurrent batches cannot deadlock.
     */
    async ensure(db: Db, seeds: ContactSeed[], { lock }: { lock: boolean }): Promise<Map<string, EnsuredContact>> {
      const firstSeed = new Map<string, ContactSeed>();
      for (const seed of seeds) {
        const key = contactKey(seed.workspaceId, seed.email);
        if (!firstSeed.has(key)) firstSeed.set(key, seed);
      }
      const keys = [...firstSeed.keys()].sort();
      const pairOf = (key: string) => key.split('\u0000') as [string, string];
      const found = new Map<string, EnsuredContact>();
      const remember = (row: ContactRow, created: boolean) =>
        found.set(`${row.workspace_id}\u0000${row.email_key}`, { row, created });

      for (const row of await selectByKeys(db, keys.map(pairOf), lock)) remember(row, false);
      const now = Date.now();
      const creatable = await withinContactLimits(db, keys.filter((key) => !found.has(key)));
      const missing: ContactRow[] = creatable
        .map((key) => {
          const seed = firstSeed.get(key)!;
          return {
            id: uuidv7(now),
            workspace_id: seed.workspaceId,
            email: seed.email.trim(),
            email_key: emailKey(seed.email),
            properties: seed.properties,
            subscription_status: seed.subscriptionStatus,
            source: seed.source,
            lifetime_revenue: 0,
            orders_count: 0,
            created_at: now,
            updated_at: now,
          };
        });
      if (missing.length === 0) return found;

      const insertedIds = new Set<string>();
      for (const part of chunk(missing, chunkSizeFor(dialect, 11))) {
        const rows = part.map((row) => ({ ...row, properties: dialect.writeJson(row.properties) }));
        const returned = await db('contacts')
          .insert(rows)
          .onConflict(['workspace_id', 'email_key'])
          .ignore()
          .returning('id');
        for (const r of returned as Array<{ id: string }>) insertedIds.add(r.id);
      }
      const lostRaces: [string, string][] = [];
      const createdRows: ContactRow[] = [];
      for (const row of missing) {
        if (insertedIds.has(row.id)) {
          remember(row, true);
          createdRows.push(row);
        } else lostRaces.push([row.workspace_id, row.email_key]);
      }
      // A contact's first status is a change like any other: recorded with time and origin.
      await insertRows(
        db,
        dialect,
        'subscription_changes',
        createdRows.map((row) => ({
          contact_id: row.id,
          from_status: null,
          to_status: row.subscription_status,
          origin: `create:${row.source ?? 'unknown'}`,
          created_at: now,
        })),
      );
      for (const row of await selectByKeys(db, lostRaces, lock)) remember(row, false);
      return found;
    },

    /** Existing contacts of (workspace, email) pairs, by `contactKey`; one query per workspace. Never creates. */
    async findByEmails(db: Db, pairs: Array<readonly [string, string]>): Promise<Map<string, ContactRow>> {
      const keys = [...new Set(pairs.map(([workspaceId, email]) => `${workspaceId}\u0000${emailKey(email)}`))];
      const found = new Map<string, ContactRow>();
      for (const row of await selectByKeys(db, keys.map((key) => key.split('\u0000') as [string, string]), false)) {
        found.set(`${row.workspace_id}\u0000${row.email_key}`, row);
      }
      return found;
    },

    async findByIds(db: Db, workspaceId: string, ids: string[]): Promise<ContactRow[]> {
      const rows: ContactRow[] = [];
      for (const part of chunk(ids, PAIRS_PER_QUERY)) {
        rows.push(...(await db('contacts').where({ workspace_id: workspaceId }).whereIn('id', part)).map(fromRow));
      }
      return rows;
    },

    async findById(db: Db, workspaceId: string, id: string, lock = false): Promise<ContactRow | null> {
      const query = db('contacts').where({ workspace_id: workspaceId, id }).first();
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

    async recordStatusChange(
      db: Db,
      change: { contactId: string; from: SubscriptionStatus | null; to: SubscriptionStatus; origin: string },
    ): Promise<void> {
      await db('subscription_changes').insert({
        contact_id: change.contactId,
        from_status: change.from,
        to_status: change.to,
        origin: change.origin,
        created_at: Date.now(),
      });
    },

    /** Claims anonymous ids for contacts; an id already claimed keeps its first owner. */
    async linkAnonymousIds(db: Db, links: { workspaceId: string; anonymousId: string; contactId: string }[]) {
      if (links.length === 0) return new Map<string, string>();
      const now = Date.now();
      const sorted = [...links].sort((a, b) =>
        `${a.workspaceId}\u0000${a.anonymousId}` < `${b.workspaceId}\u0000${b.anonymousId}` ? -1 : 1,
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

    /** `workspace\0anonymous_id` → owning contact id. */
    async ownersOfAnonymousIds(db: Db, pairs: [string, string][]): Promise<Map<string, string>> {
      const owners = new Map<string, string>();
      for (const [workspaceId, anonymousIds] of byWorkspace(pairs, PAIRS_PER_QUERY)) {
        const rows = await db('contact_anonymous_ids')
          .where({ workspace_id: workspaceId })
          .whereIn('anonymous_id', anonymousIds)
          .select('workspace_id', 'anonymous_id', 'contact_id');
        for (const row of rows) owners.set(`${row.workspace_id}\u0000${row.anonymous_id}`, row.contact_id);
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
      const base = db('contacts').where({ workspace_id: workspaceId });
      if (filter.email) base.where({ email_key: emailKey(filter.email) });
      return selectPage(base, NEWEST_FIRST, paging, fromRow);
    },
  };
}

export type ContactStore = ReturnType<typeof createContactStore>;
