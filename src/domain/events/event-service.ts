import type { Knex } from 'knex';
import type { Reader } from '../db/database.js';
import type { Dialect } from '../db/dialect/dialect.js';
import type { EnsureContacts } from '../contacts/contact-service.js';
import type { ContactLookup } from '../contacts/contact-lookup.js';
import { contactKey } from '../contacts/contact-lookup.js';
import type { WriteBatcher, BatchHandler } from '../db/write-batcher.js';
import { LimitReachedError, NotFoundError, ValidationError } from '../errors.js';
import { uuidv7 } from '../shared/ids.js';
import { toPage, type Page, type Paging } from '../shared/paging.js';
import { parseInput } from '../shared/validate.js';
import type { ApplyShippingEvents } from '../shipments/shipment-service.js';
import { triggerTypeForEvent, type TriggerFact, type TriggerOutbox } from '../triggers/trigger-outbox.js';
import {
  collectEventSchema,
  createEventSchema,
  eventListQuerySchema,
  type EventRecord,
} from './event.schema.js';
import { createEventStore, dedupeKeyOf, type EventRow } from './event-store.js';
import { identityTokenOf } from '../identity-tokens/identity-token.schema.js';
import type { IdentityTokenService } from '../identity-tokens/identity-token-service.js';
import { ActivityDelta } from '../recommendations/activity-delta.js';
import type { ProductActivity } from '../recommendations/product-activity.js';
import { createEventBatches } from './event-batch.js';
import type { TableGrowth } from '../db/table-growth.js';
import type { KnownContacts, RememberedContacts } from '../contacts/known-contacts.js';
import type { EventOwner, EventWrite, EventWriteResult } from './event-write.js';
import { compositeKey } from '../shared/keys.js';

/** Source of contacts created by an event that names an unseen email through the Collect API. */
const COLLECT_SOURCE = 'collect';

export function createEventService(deps: {
  knex: Knex;
  reader: Reader;
  writer: WriteBatcher;
  dialect: Dialect;
  contactLookup: ContactLookup;
  ensureContacts: EnsureContacts;
  outbox: TriggerOutbox;
  /** Sets the Shipping Status of orders named by stored `shipping_information` events (shipments noun). */
  applyShippingEvents: ApplyShippingEvents;
  /** Product views feed the recommendation aggregates, in the same transaction. */
  activity: ProductActivity;
  identityTokens: IdentityTokenService;
  /** Batches report the events they add (planner statistics on PostgreSQL). */
  tableGrowth: TableGrowth;
  /** Owners seen before, used without a lookup (checked inside the transaction). */
  knownContacts: KnownContacts;
}) {
  const { knex, reader, writer, contactLookup, ensureContacts, outbox, applyShippingEvents, activity, identityTokens, tableGrowth, knownContacts } = deps;
  const eventStore = createEventStore(deps.dialect);

  /** `workspace\0contact_id` of every contact-id owner that exists in its workspace (remembered ones unread). */
  async function existingContactIds(trx: Knex.Transaction, writes: EventWrite[], remembered: RememberedContacts) {
    const idsByWorkspace = new Map<string, string[]>();
    const known = new Set<string>();
    for (const w of writes) {
      if (!('contactId' in w.owner)) continue;
      if (remembered.hasId(w.workspaceId, w.owner.contactId)) {
        known.add(compositeKey(w.workspaceId, w.owner.contactId));
        continue;
      }
      const list = idsByWorkspace.get(w.workspaceId) ?? [];
      list.push(w.owner.contactId);
      idsByWorkspace.set(w.workspaceId, list);
    }
    for (const [workspaceId, ids] of idsByWorkspace) {
      const rows = await contactLookup.findByIds(trx, workspaceId, ids);
      remembered.learn(rows);
      for (const row of rows) known.add(compositeKey(workspaceId, row.id));
    }
    return known;
  }

  /**
   * Stores a group of events set-based: owners resolved in a few queries, events and their triggers in
   * multi-row inserts. Events of an anonymous visitor already identified go straight to that contact.
   */
  const recordEvents: BatchHandler<EventWrite, EventWriteResult> = async (trx, writes) => {
    const remembered = knownContacts.within(trx);
    const knownIds = await existingContactIds(trx, writes, remembered);
    const existingByEmail = await contactLookup.idsByEmails(
      trx,
      writes.flatMap((w) => ('existingEmail' in w.owner ? [[w.workspaceId, w.owner.existingEmail] as const] : [])),
    );
    // Owners by email: remembered ones need no lookup; the rest are found or created.
    const rememberedOwners = new Map<string, string>();
    for (const w of writes) {
      if (!('email' in w.owner)) continue;
      const key = contactKey(w.workspaceId, w.owner.email);
      const id = remembered.idByEmail(key);
      if (id !== undefined) rememberedOwners.set(key, id);
    }
    const ensured = await ensureContacts(
      trx,
      writes.flatMap((w) =>
        'email' in w.owner && !rememberedOwners.has(contactKey(w.workspaceId, w.owner.email))
          ? [
              {
                workspaceId: w.workspaceId,
                email: w.owner.email,
                properties: {},
                subscriptionStatus: 'non_subscribed' as const,
                source: w.contactSource,
              },
            ]
          : [],
      ),
      // Events only read the contact: no row lock needed.
      { lock: false },
    );
    remembered.learn([...ensured.values()].map((owner) => owner.row));

    const anonymousOwners = await contactLookup.ownersOfAnonymousIds(
      trx,
      writes.flatMap((w) => ('anonymousId' in w.owner && !('email' in w.owner) ? [[w.workspaceId, w.owner.anonymousId]] : [])) as [
        string,
        string,
      ][],
    );

    const now = Date.now();
    const rows: EventRow[] = [];
    const facts: TriggerFact[] = [];
    const results: EventWriteResult[] = writes.map((w) => {
      let contactId: string | null;
      let anonymousId: string | null = null;
      if ('contactId' in w.owner) {
        if (!knownIds.has(compositeKey(w.workspaceId, w.owner.contactId))) return { error: 'contact not found' };
        contactId = w.owner.contactId;
      } else if ('email' in w.owner) {
        const key = contactKey(w.workspaceId, w.owner.email);
        const ownerId = rememberedOwners.get(key) ?? ensured.get(key)?.row.id;
        if (ownerId === undefined) return { error: 'contact limit reached' };
        contactId = ownerId;
        anonymousId = w.owner.anonymousId ?? null;
      } else if ('existingEmail' in w.owner) {
        const ownerId = existingByEmail.get(contactKey(w.workspaceId, w.owner.existingEmail));
        if (!ownerId) return { error: 'contact not found' };
        contactId = ownerId;
      } else {
        anonymousId = w.owner.anonymousId;
        contactId = anonymousOwners.get(compositeKey(w.workspaceId, anonymousId)) ?? null;
      }
      const row: EventRow = {
        id: uuidv7(now),
        workspace_id: w.workspaceId,
        contact_id: contactId,
        anonymous_id: anonymousId,
        event_name: w.eventName,
        properties: w.properties,
        source: w.source,
        dedupe_key: dedupeKeyOf(w.properties),
        created_at: w.occurredAt,
        received_at: now,
      };
      rows.push(row);
      // An anonymous event has nobody to enrol: it fires nothing, now or when its visitor is identified later.
      if (w.fireTrigger && contactId) {
        facts.push({
          workspaceId: w.workspaceId,
          triggerType: triggerTypeForEvent(w.eventName),
          eventName: w.eventName,
          contactId,
          subjectType: 'event',
          subjectId: row.id,
          source: w.source,
          at: now,
        });
      }
      return { record: eventStore.toRecord(row as unknown as Record<string, unknown>) };
    });
    const views = new ActivityDelta();
    for (const row of rows) views.event(row, 1);
    // One after another: a transaction is one connection, which runs one statement at a time. The check of
    // remembered owners goes first, ahead of every write.
    await remembered.check();
    await eventStore.insert(trx, rows);
    await outbox.record(trx, facts);
    await activity.record(trx, views);
    await applyShippingEvents(trx, writes.filter((w, i) => !w.viaCollect && 'record' in results[i]!));
    return results;
  };

  async function record(write: EventWrite): Promise<EventRecord> {
    const result = await writer.submit(recordEvents, write);
    if ('error' in result) {
      throw result.error === 'contact not found' ? new NotFoundError(result.error) : new LimitReachedError(result.error);
    }
    return result.record;
  }

  return {
    recordEvents,

    /** POST and PUT /api/v1/events/batch, `emk events import|correct`: see event-batch.ts. */
    ...createEventBatches({ writer, eventStore, contactLookup, recordEvents, activity, tableGrowth }),

    /** POST /collect/event: attach by contact_id, else email (created if unseen), else anonymous_id. */
    async collect(workspaceId: string, body: unknown): Promise<EventRecord> {
      const input = parseInput(collectEventSchema, body);
      // A visitor who arrived from a sent message (the SDK sends its `_ir_id` cookie) is that message's contact.
      const token = input.contact_id || input.email ? null : identityTokenOf(body as Record<string, unknown>);
      const claims = token === null ? null : await identityTokens.resolve(workspaceId, token);
      let owner: EventOwner;
      if (input.contact_id) owner = { contactId: input.contact_id };
      else if (input.email) owner = { email: input.email, ...(input.anonymous_id ? { anonymousId: input.anonymous_id } : {}) };
      else if (claims) owner = { contactId: claims.contactId };
      else if (input.anonymous_id) owner = { anonymousId: input.anonymous_id };
      else throw new ValidationError('invalid request: one of email, contact_id or anonymous_id is required');
      return record({
        workspaceId,
        owner,
        eventName: input.event_name,
        properties: input.properties ?? {},
        source: input.source ?? null,
        occurredAt: Date.now(),
        fireTrigger: true,
        contactSource: COLLECT_SOURCE,
        viaCollect: true,
      });
    },

    /** POST /api/v1/events: an event for a known contact of this workspace. */
    async create(workspaceId: string, body: unknown): Promise<EventRecord> {
      const input = parseInput(createEventSchema, body);
      return record({
        workspaceId,
        owner: { contactId: input.contact_id },
        eventName: input.event_name,
        properties: input.properties ?? {},
        source: input.source ?? null,
        occurredAt: Date.now(),
        fireTrigger: true,
        contactSource: COLLECT_SOURCE,
      });
    },

    /** Every workspace's events that occurred at or after `since` (the operator's status). */
    occurredSince: (since: number) => eventStore.countSince(knex, since),

    /** The workspace's events that occurred at or after `since` (the console's overview). */
    countInWorkspaceSince: (workspaceId: string, since: number) => eventStore.countInWorkspaceSince(reader(), workspaceId, since),

    async list(workspaceId: string, query: unknown, paging: Paging): Promise<Page<EventRecord>> {
      const filter = parseInput(eventListQuerySchema, query);
      const { rows, total } = await eventStore.list(reader(), workspaceId, filter, paging);
      return toPage(rows, total, paging);
    },
  };
}

export type EventService = ReturnType<typeof createEventService>;
