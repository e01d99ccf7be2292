import type { Knex } from 'knex';
import type { WriteBatcher, BatchHandler } from '../db/write-batcher.js';
import { LimitReachedError, NotFoundError } from '../errors.js';
import type { EventStore } from '../events/event-store.js';
import { toPage, type Page, type Paging } from '../shared/paging.js';
import { parseInput } from '../shared/validate.js';
import {
  contactListQuerySchema,
  identifySchema,
  updateContactSchema,
  upsertContactSchema,
  type Contact,
  type SubscriptionStatus,
} from './contact.schema.js';
import { contactKey, type ContactStore, type EnsuredContact } from './contact-store.js';

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
  anonymousId?: string;
}

type ContactWriteResult = { contactId: string; email: string; created: boolean } | { error: 'contact limit reached' };

const CONTACT_LIMIT_REACHED = 'contact limit reached';

function written(result: ContactWriteResult) {
  if ('error' in result) throw new LimitReachedError(result.error);
  return result;
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
  writer: WriteBatcher;
  contacts: ContactStore;
  events: EventStore;
}) {
  const { knex, writer, contacts, events } = deps;

  /**
   * Finds or creates the contact of each write, merges properties into existing ones, and links anonymous
   * ids (attaching their earlier events). Set-based, for a whole group of concurrent requests at once.
   */
  const writeContacts: BatchHandler<ContactWrite, ContactWriteResult> = async (trx, writes) => {
    const ensured = await contacts.ensure(
      trx,
      writes.map((w) => ({
        workspaceId: w.workspaceId,
        email: w.email,
        properties: w.properties,
        subscriptionStatus: w.statusOnCreate,
        source: w.sourceOnCreate,
      })),
      { lock: true },
    );
    // Later writes of one email in the same group build on earlier ones: the first may have created it.
    const seen = new Set<string>();
    const dirty = new Map<string, EnsuredContact>();
    const results = writes.map((w): ContactWriteResult => {
      const key = contactKey(w.workspaceId, w.email);
      const contact = ensured.get(key);
      if (!contact) return { error: CONTACT_LIMIT_REACHED };
      const createdHere = contact.created && !seen.has(key);
      seen.add(key);
      if (!createdHere) {
        const merged = mergeProperties(contact.row.properties, w.properties, w.merge);
        if (merged) {
          contact.row.properties = merged;
          dirty.set(contact.row.id, contact);
        }
      }
      return { contactId: contact.row.id, email: contact.row.email, created: createdHere };
    });
    for (const contact of dirty.values()) {
      await contacts.update(trx, contact.row.id, { properties: contact.row.properties });
    }

    const links = writes.flatMap((w, i) => {
      const result = results[i]!;
      return w.anonymousId && 'contactId' in result
        ? [{ workspaceId: w.workspaceId, anonymousId: w.anonymousId, contactId: result.contactId }]
        : [];
    });
    const owners = await contacts.linkAnonymousIds(trx, links);
    for (const link of links) {
      if (owners.get(`${link.workspaceId}\u0000${link.anonymousId}`) !== link.contactId) continue;
      await events.attachAnonymous(trx, link.workspaceId, [link.anonymousId], link.contactId);
    }
    return results;
  };

  async function getRecord(db: Knex | Knex.Transaction, workspaceId: string, id: string): Promise<Contact> {
    const row = await contacts.findById(db, workspaceId, id);
    if (!row) throw new NotFoundError();
    return (await contacts.toContacts(db, [row]))[0]!;
  }

  return {
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

    /** PATCH /api/v1/contacts/{id}: merge properties; the consent update endpoint records every change. */
    async update(workspaceId: string, id: string, body: unknown): Promise<Contact> {
      const input = parseInput(updateContactSchema, body);
      return writer.run(async (trx) => {
        const row = await contacts.findById(trx, workspaceId, id, true);
        if (!row) throw new NotFoundError();
        const properties = input.properties ? mergeProperties(row.properties, input.properties, 'overwrite') : null;
        const status =
          input.subscription_status && input.subscription_status !== row.subscription_status
            ? input.subscription_status
            : undefined;
        if (properties || status) {
          await contacts.update(trx, id, {
            ...(properties ? { properties } : {}),
            ...(status ? { subscription_status: status } : {}),
          });
        }
        if (status) {
          await contacts.recordStatusChange(trx, {
            contactId: id,
            from: row.subscription_status,
            to: status,
            origin: 'api:update',
          });
        }
        return getRecord(trx, workspaceId, id);
      });
    },

    get: (workspaceId: string, id: string) => getRecord(knex, workspaceId, id),

    async list(workspaceId: string, query: unknown, paging: Paging): Promise<Page<Contact>> {
      const filter = parseInput(contactListQuerySchema, query);
      const { rows, total } = await contacts.list(knex, workspaceId, filter, paging);
      return toPage(await contacts.toContacts(knex, rows), total, paging);
    },
  };
}

export type ContactService = ReturnType<typeof createContactService>;
