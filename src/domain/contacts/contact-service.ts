import type { Knex } from 'knex';
import type { Dialect } from '../db/dialect/dialect.js';
import type { Database, Reader } from '../db/database.js';
import type { WriteBatcher, BatchHandler } from '../db/write-batcher.js';
import { LimitReachedError, NotFoundError } from '../errors.js';
import type { EventRecords } from '../events/event-records.js';
import { contactChangedFact, type TriggerOutbox } from '../triggers/trigger-outbox.js';
import { toPage, type Page, type Paging } from '../shared/paging.js';
import { rehearse, writeRowBatch } from '../shared/row-batch.js';
import { parseInput, rowField } from '../shared/validate.js';
import type { SettingsService } from '../settings/settings-service.js';
import type { SuppressionService } from '../suppressions/suppression-service.js';
import {
  contactListQuerySchema,
  identifySchema,
  importContactSchema,
  updateContactSchema,
  upsertContactSchema,
  type ConsentChange,
  type Contact,
  type ContactImportResult,
  type ImportContactInput,
  type SubscriptionStatus,
} from './contact.schema.js';
import { uuidv7 } from '../shared/ids.js';
import { systemClock, type Clock } from '../shared/time.js';
import { compositeKey, pairOf } from '../shared/keys.js';
import { createContactStore, contactKey, type ContactRow, type StatusChange } from './contact-store.js';
import { emailKey } from '../shared/keys.js';
import type { TableGrowth } from '../db/table-growth.js';
import type { ContactIdentityService, ContactPropertyWrite } from '../contact-identities/contact-identity-service.js';

/** What to create when an email has no contact yet. */
export interface ContactSeed {
  workspaceId: string;
  email: string;
  properties: Record<string, unknown>;
  subscriptionStatus: SubscriptionStatus;
  source: string | null;
  /** How the first status came to be (default: origin `create:<source>`, now). */
  consent?: ConsentOrigin;
}

/** A consent history entry's origin and time (`import`, the time the person originally consented). */
export interface ConsentOrigin {
  origin: string;
  at: number;
}

export interface EnsuredContact {
  row: ContactRow;
  /** True when this call created the contact (with the seed's properties). */
  created: boolean;
}

/** Finds or creates the contacts of seeds, by `contactKey`; see ContactService.ensureContacts. */
export type EnsureContacts = (
  trx: Knex.Transaction,
  seeds: ContactSeed[],
  options: { lock: boolean },
) => Promise<Map<string, EnsuredContact>>;

/** How a contact write treats properties the contact already has. */
type PropertyMerge = 'fill_empty' | 'overwrite';

interface ContactWrite {
  workspaceId: string;
  email: string;
  properties: Record<string, unknown>;
  merge: PropertyMerge;
  /** Only for a contact this write creates; an existing contact's status never changes here. */
  statusOnCreate: SubscriptionStatus;
  sourceOnCreate: string | null;
  consentOnCreate?: ConsentOrigin;
  anonymousId?: string;
}

/** `updated`: an existing contact whose properties this write changed. */
type ContactWriteResult = { contactId: string; email: string; created: boolean; updated: boolean } | { error: 'contact limit reached' };

const CONTACT_LIMIT_REACHED = 'contact limit reached';

function written(result: ContactWriteResult) {
  if ('error' in result) throw new LimitReachedError(result.error);
  return result;
}

/** Origin of an imported contact's first status, and the reason of the suppressions an import adds. */
const IMPORT = 'import';

/** An import row's profile: its properties, with `first_name`, `last_name` and `phone` columns set over them. */
function importedProperties(input: ImportContactInput): Record<string, unknown> {
  const { first_name, last_name, phone } = input;
  return {
    ...input.properties,
    ...(first_name ? { first_name } : {}),
    ...(last_name ? { last_name } : {}),
    ...(phone ? { phone } : {}),
  };
}

const isEmpty = (value: unknown) => value === undefined || value === null || value === '';

/** `fill_empty` (identify): a key is set only where the contact has no value. `overwrite`: reconcile. */
export function mergeProperties(
  current: Record<string, unknown>,
  incoming: Record<string, unknown>,
  merge: PropertyMerge,
): Record<string, unknown> | null {
  const next = { ...current };
  let changed = false;
  for (const [key, value] of Object.entries(incoming)) {
    if (merge === 'fill_empty' && !isEmpty(current[key])) continue;
    if (JSON.stringify(current[key]) === JSON.stringify(value)) continue;
    next[key] = value;
    changed = true;
  }
  return changed ? next : null;
}

/** Identity: contacts are one per email per workspace; consent changes only through `update`. */
export function createContactService(deps: {
  knex: Knex;
  reader: Reader;
  writer: WriteBatcher;
  writeTransaction: Database['writeTransaction'];
  dialect: Dialect;
  eventRecords: EventRecords;
  /** An import adds its suppressed addresses in the transaction of its chunk. */
  suppressions: Pick<SuppressionService, 'add'>;
  /** Every change of a contact's properties or status (and every new contact) re-evaluates its segments. */
  outbox: TriggerOutbox;
  /** The workspace's `contact_limit` (null: none). */
  settings: Pick<SettingsService, 'cached'>;
  /** New contacts are reported as they are written (planner statistics on PostgreSQL). */
  tableGrowth: TableGrowth;
  /** When status changes happen (the consent history's times, which a platform's consent time is compared with). */
  clock?: Clock;
  /** Every write of properties keeps the contacts' platform customer ids and phone numbers in step, in its transaction. */
  identities: Pick<ContactIdentityService, 'record'>;
}) {
  const { knex, reader, writer, writeTransaction, eventRecords, suppressions, outbox, settings, tableGrowth, identities } = deps;
  const clock = deps.clock ?? systemClock;
  const contactStore = createContactStore(deps.dialect);

  /**
   * The keys (sorted) that may still become contacts: a workspace with a `contact_limit` takes new contacts
   * only up to it. Several processes creating at the same moment may overshoot by their concurrent inserts.
   */
  async function withinContactLimits(db: Knex.Transaction, keys: string[]): Promise<string[]> {
    if (keys.length === 0) return keys;
    const room = new Map<string, number>();
    for (const workspaceId of new Set(keys.map((key) => pairOf(key)[0]))) {
      const limit = (await settings.cached(workspaceId, db)).contact_limit;
      if (limit !== null) room.set(workspaceId, Math.max(0, limit - (await contactStore.countInWorkspace(db, workspaceId))));
    }
    if (room.size === 0) return keys;
    return keys.filter((key) => {
      const workspaceId = pairOf(key)[0];
      const left = room.get(workspaceId);
      if (left === undefined) return true;
      room.set(workspaceId, left - 1);
      return left > 0;
    });
  }

  /**
   * Finds the contact of each seed's email, creating the missing ones. A seed whose contact would pass the
   * workspace's contact limit is left out of the result. Race-free: creation is an insert that yields to the
   * unique (workspace_id, email_key) index, and a lost race re-reads the winner's row. With `lock`, for
   * callers that go on to change the rows, existing rows stay locked (PostgreSQL) until the transaction ends;
   * keys are taken in sorted order, so concurrent batches cannot deadlock.
   */
  const ensureContacts: EnsureContacts = async (trx, seeds, { lock }) => {
    const firstSeed = new Map<string, ContactSeed>();
    for (const seed of seeds) {
      const key = contactKey(seed.workspaceId, seed.email);
      if (!firstSeed.has(key)) firstSeed.set(key, seed);
    }
    const keys = [...firstSeed.keys()].sort();
    const found = new Map<string, EnsuredContact>();
    const remember = (row: ContactRow, created: boolean) => found.set(compositeKey(row.workspace_id, row.email_key), { row, created });

    for (const row of await contactStore.findByKeys(trx, keys.map(pairOf), { lock })) remember(row, false);
    const now = Date.now();
    const missing = (await withinContactLimits(trx, keys.filter((key) => !found.has(key)))).map((key): ContactRow => {
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

    const insertedIds = await contactStore.insertIgnoringConflicts(trx, missing);
    const created = missing.filter((row) => insertedIds.has(row.id));
    for (const row of created) remember(row, true);
    // Counted before the commit: a rolled-back write only brings an analysis forward.
    tableGrowth.added('contacts', created.length);
    // A contact's first status is a change like any other: recorded with time and origin.
    await contactStore.recordStatusChanges(
      trx,
      created.map((row) => {
        const consent = firstSeed.get(compositeKey(row.workspace_id, row.email_key))!.consent;
        return {
          contactId: row.id,
          from: null,
          to: row.subscription_status,
          origin: consent?.origin ?? `create:${row.source ?? 'unknown'}`,
          at: consent?.at ?? clock(),
        };
      }),
    );
    await outbox.record(trx, created.map((row) => contactChangedFact(row.workspace_id, row.id, 'created', now)));
    await identities.record(trx, created.map((row) => ({ workspaceId: row.workspace_id, contactId: row.id, before: null, after: row.properties, named: row.properties })));
    const lostRaces = missing.filter((row) => !insertedIds.has(row.id)).map((row): [string, string] => [row.workspace_id, row.email_key]);
    for (const row of await contactStore.findByKeys(trx, lostRaces, { lock })) remember(row, false);
    return found;
  };

  /**
   * Finds or creates the contact of each write, merges properties into existing ones, and links anonymous
   * ids (attaching their earlier events). Set-based, for a whole group of concurrent requests at once.
   */
  const writeContacts: BatchHandler<ContactWrite, ContactWriteResult> = async (trx, writes) => {
    const ensured = await ensureContacts(
      trx,
      writes.map((w) => ({
        workspaceId: w.workspaceId,
        email: w.email,
        properties: w.properties,
        subscriptionStatus: w.statusOnCreate,
        source: w.sourceOnCreate,
        ...(w.consentOnCreate ? { consent: w.consentOnCreate } : {}),
      })),
      { lock: true },
    );
    // Later writes of one email in the same group build on earlier ones: the first may have created it.
    const seen = new Set<string>();
    const dirty = new Map<string, EnsuredContact>();
    // A contact this group created had its identities recorded with its creation.
    const propertyWrites: ContactPropertyWrite[] = [];
    const results = writes.map((w): ContactWriteResult => {
      const key = contactKey(w.workspaceId, w.email);
      const contact = ensured.get(key);
      if (!contact) return { error: CONTACT_LIMIT_REACHED };
      const createdHere = contact.created && !seen.has(key);
      seen.add(key);
      const merged = createdHere ? null : mergeProperties(contact.row.properties, w.properties, w.merge);
      if (!createdHere) {
        propertyWrites.push({ workspaceId: w.workspaceId, contactId: contact.row.id, before: contact.row.properties, after: merged ?? contact.row.properties, named: w.properties });
      }
      if (merged) {
        contact.row.properties = merged;
        dirty.set(contact.row.id, contact);
      }
      return { contactId: contact.row.id, email: contact.row.email, created: createdHere, updated: merged !== null };
    });
    const now = Date.now();
    await contactStore.updateProperties(trx, [...dirty.values()].map(({ row }) => row), now);
    await identities.record(trx, propertyWrites);
    const changed = [...dirty.values()].map(({ row }) => contactChangedFact(row.workspace_id, row.id, 'profile', now));

    const links = writes.flatMap((w, i) => {
      const result = results[i]!;
      return w.anonymousId && 'contactId' in result
        ? [{ workspaceId: w.workspaceId, anonymousId: w.anonymousId, contactId: result.contactId }]
        : [];
    });
    const owners = await contactStore.linkAnonymousIds(trx, links);
    for (const link of links) {
      if (owners.get(compositeKey(link.workspaceId, link.anonymousId)) !== link.contactId) continue;
      // Earlier events become the contact's: its event counts may have changed.
      if ((await eventRecords.attachAnonymous(trx, link.workspaceId, [link.anonymousId], link.contactId)) > 0) {
        changed.push(contactChangedFact(link.workspaceId, link.contactId, 'events', now));
      }
    }
    await outbox.record(trx, changed);
    return results;
  };

  async function getRecord(db: Knex | Knex.Transaction, workspaceId: string, id: string): Promise<Contact> {
    const row = await contactStore.findById(db, workspaceId, id);
    if (!row) throw new NotFoundError();
    return (await contactStore.toContacts(db, [row]))[0]!;
  }

  return {
    ensureContacts,
    writeContacts,

    /** POST /collect/identify: properties set on create or where empty; `anonymous_id` merged. */
    async identify(workspaceId: string, body: unknown): Promise<{ contact_id: string; email: string }> {
      const input = parseInput(identifySchema, body);
      const result = written(
        await writer.submit(writeContacts, {
          workspaceId,
          email: input.email,
          properties: input.properties ?? {},
          merge: 'fill_empty',
          statusOnCreate: 'non_subscribed',
          sourceOnCreate: 'collect',
          ...(input.anonymous_id ? { anonymousId: input.anonymous_id } : {}),
        }),
      );
      return { contact_id: result.contactId, email: result.email };
    },

    /** POST /api/v1/contacts: create, or merge properties into the contact of that email (status untouched). */
    async upsert(workspaceId: string, body: unknown): Promise<{ contact: Contact; created: boolean }> {
      const input = parseInput(upsertContactSchema, body);
      const result = written(
        await writer.submit(writeContacts, {
          workspaceId,
          email: input.email,
          properties: input.properties ?? {},
          merge: 'overwrite',
          statusOnCreate: input.subscription_status ?? 'non_subscribed',
          sourceOnCreate: input.source ?? 'api',
        }),
      );
      return { contact: await getRecord(knex, workspaceId, result.contactId), created: result.created };
    },

    /**
     * `emk contacts import`: one chunk of a contact list (up to a few thousand rows), each row validated alone,
     * in one transaction, set-based. A new contact takes the row's status with a consent history entry (origin
     * `import`, at `consented_at` or now); an existing one has its properties merged and keeps its status.
     * `suppressed` rows add their address to the suppressions. Idempotent by email. With `dryRun` the chunk is
     * written and rolled back: the counts say what a real run would do.
     */
    importContacts(workspaceId: string, rows: unknown[], options: { dryRun?: boolean } = {}): Promise<ContactImportResult> {
      return writeRowBatch({
        schema: importContactSchema,
        listName: 'contacts',
        rows,
        errorFor: (index, raw, error) => ({ index, email: rowField(raw, 'email'), error }),
        empty: (): ContactImportResult => ({ created: 0, updated: 0, errors: [] }),
        run: (unit, rows) => (options.dryRun ? rehearse(writeTransaction, unit) : writer.run(unit, rows)),
        write: async (trx, valid, result) => {
          const now = Date.now();
          const outcomes = await writeContacts(
            trx,
            valid.map(({ input }) => ({
              workspaceId,
              email: input.email,
              properties: importedProperties(input),
              merge: 'overwrite',
              statusOnCreate: input.subscription_status,
              sourceOnCreate: IMPORT,
              consentOnCreate: { origin: IMPORT, at: input.consented_at ?? clock() },
            })),
          );
          outcomes.forEach((outcome, k) => {
            const { index, input } = valid[k]!;
            if ('error' in outcome) result.errors.push({ index, email: input.email, error: outcome.error });
            else if (outcome.created) result.created++;
            else if (outcome.updated) result.updated++;
          });
          const suppressed = valid.filter(({ input }) => input.suppressed).map(({ input }) => input.email);
          await suppressions.add(trx, workspaceId, suppressed, IMPORT, now);
        },
      });
    },

    /** PATCH /api/v1/contacts/{id}: merge properties; the consent update endpoint records every change. */
    async update(workspaceId: string, id: string, body: unknown): Promise<Contact> {
      const input = parseInput(updateContactSchema, body);
      return writer.run(async (trx) => {
        const row = await contactStore.findById(trx, workspaceId, id, true);
        if (!row) throw new NotFoundError();
        const properties = input.properties ? mergeProperties(row.properties, input.properties, 'overwrite') : null;
        if (input.properties) await identities.record(trx, [{ workspaceId, contactId: id, before: row.properties, after: properties ?? row.properties, named: input.properties }]);
        const status =
          input.subscription_status && input.subscription_status !== row.subscription_status
            ? input.subscription_status
            : undefined;
        if (properties || status) {
          await contactStore.update(trx, id, {
            ...(properties ? { properties } : {}),
            ...(status ? { subscription_status: status } : {}),
          });
          await outbox.record(trx, [contactChangedFact(workspaceId, id, 'profile', Date.now())]);
        }
        if (status) {
          await contactStore.recordStatusChanges(trx, [
            { contactId: id, from: row.subscription_status, to: status, origin: 'api:update', at: clock() },
          ]);
        }
        return getRecord(trx, workspaceId, id);
      });
    },

    /**
     * A flow's `update_contact` step (docs/flows.md): merges properties (overwriting the keys given) and sets the
     * status, recorded in the consent history with `origin`. A flow never subscribes a contact who unsubscribed:
     * that status change is left out (`false`), the properties still merge. An erased or absent contact: nothing.
     */
    async applyFlowUpdate(
      workspaceId: string,
      id: string,
      update: { properties?: Record<string, unknown> | undefined; subscription_status?: SubscriptionStatus | undefined },
      origin: string,
    ): Promise<{ statusChanged: boolean; statusRefused: boolean }> {
      return writer.run(async (trx) => {
        const row = await contactStore.findById(trx, workspaceId, id, true);
        if (!row) return { statusChanged: false, statusRefused: false };
        const properties = update.properties ? mergeProperties(row.properties, update.properties, 'overwrite') : null;
        if (update.properties) await identities.record(trx, [{ workspaceId, contactId: id, before: row.properties, after: properties ?? row.properties, named: update.properties }]);
        const wanted = update.subscription_status;
        const statusRefused = wanted === 'subscribed' && row.subscription_status === 'unsubscribed';
        const status = wanted && wanted !== row.subscription_status && !statusRefused ? wanted : undefined;
        if (properties || status) {
          await contactStore.update(trx, id, { ...(properties ? { properties } : {}), ...(status ? { subscription_status: status } : {}) });
          await outbox.record(trx, [contactChangedFact(workspaceId, id, 'profile', Date.now())]);
        }
        if (status) await contactStore.recordStatusChanges(trx, [{ contactId: id, from: row.subscription_status, to: status, origin, at: clock() }]);
        return { statusChanged: status !== undefined, statusRefused };
      });
    },

    /**
     * A consent change from outside the API (an unsubscribe link, the preferences page, a relay's complaint or
     * unsubscribe), recorded with its origin, the message it came through, if any, and when it was made (a relay
     * says when; else now). Returns the status before; unchanged statuses record nothing.
     */
    async changeStatus(
      workspaceId: string,
      id: string,
      status: SubscriptionStatus,
      origin: string,
      messageId: string | null = null,
      at: number = clock(),
    ): Promise<SubscriptionStatus> {
      return writer.run(async (trx) => {
        const row = await contactStore.findById(trx, workspaceId, id, true);
        if (!row) throw new NotFoundError();
        if (row.subscription_status !== status) {
          await contactStore.update(trx, id, { subscription_status: status });
          await contactStore.recordStatusChanges(trx, [{ contactId: id, from: row.subscription_status, to: status, origin, at, messageId }]);
          await outbox.record(trx, [contactChangedFact(workspaceId, id, 'profile', Date.now())]);
        }
        return row.subscription_status;
      });
    },

    /**
     * A shop platform's record of consent for existing contacts, in the caller's transaction: a status changes
     * only when the platform recorded it after the contact's last status decision (so a newer unsubscribe through
     * emk's own link is not undone by an older platform record, nor a platform's newer record by its older one),
     * and is recorded in the consent history at the platform's time with the platform as its origin. A contact
     * created `non_subscribed` by default has no decision to keep. In order: a later change of one contact builds
     * on an earlier one.
     */
    async applyPlatformConsent(
      trx: Knex.Transaction,
      changes: Array<{ workspaceId: string; contactId: string; status: SubscriptionStatus; at: number; origin: string }>,
    ): Promise<void> {
      if (changes.length === 0) return;
      const ids = [...new Set(changes.map((c) => c.contactId))].sort();
      const current = new Map<string, { status: SubscriptionStatus; since: number }>();
      const decided = await contactStore.lastStatusDecisions(trx, ids);
      for (const workspaceId of new Set(changes.map((c) => c.workspaceId))) {
        for (const row of await contactStore.findByIds(trx, workspaceId, ids, { lock: true })) {
          current.set(row.id, { status: row.subscription_status, since: decided.get(row.id) ?? 0 });
        }
      }
      const recorded: StatusChange[] = [];
      for (const change of changes) {
        const contact = current.get(change.contactId);
        if (!contact || change.at <= contact.since || change.status === contact.status) continue;
        recorded.push({ contactId: change.contactId, from: contact.status, to: change.status, origin: change.origin, at: change.at });
        current.set(change.contactId, { status: change.status, since: change.at });
      }
      if (recorded.length === 0) return;
      const changed = new Map(recorded.map((r) => [r.contactId, r.to]));
      await contactStore.setStatuses(trx, changed);
      await contactStore.recordStatusChanges(trx, recorded);
      const now = Date.now();
      const workspaceOf = new Map(changes.map((c) => [c.contactId, c.workspaceId]));
      await outbox.record(trx, [...changed.keys()].map((id) => contactChangedFact(workspaceOf.get(id)!, id, 'profile', now)));
    },

    /** Every status change of a contact, oldest first (GET /contacts/{id}/consent). */
    async consentHistory(workspaceId: string, id: string): Promise<{ data: ConsentChange[] }> {
      if (!(await contactStore.findById(knex, workspaceId, id))) throw new NotFoundError();
      return { data: await contactStore.statusChanges(knex, id) };
    },

    get: (workspaceId: string, id: string) => getRecord(knex, workspaceId, id),

    async list(workspaceId: string, query: unknown, paging: Paging): Promise<Page<Contact>> {
      const filter = parseInput(contactListQuerySchema, query);
      const db = reader();
      const { rows, total } = await contactStore.list(db, workspaceId, filter, paging);
      return toPage(await contactStore.toContacts(db, rows), total, paging);
    },
  };
}

export type ContactService = ReturnType<typeof createContactService>;
