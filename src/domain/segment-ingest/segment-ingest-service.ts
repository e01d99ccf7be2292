import type { Knex } from 'knex';
import type { Dialect } from '../db/dialect/dialect.js';
import type { ContactService } from '../contacts/contact-service.js';
import type { ContactLookup } from '../contacts/contact-lookup.js';
import type { WriteBatcher } from '../db/write-batcher.js';
import { LimitReachedError, NotFoundError, PayloadTooLargeError, UnauthorizedError, ValidationError } from '../errors.js';
import { canonicalEventName } from '../events/event-names.js';
import type { EventService } from '../events/event-service.js';
import type { EventRecords } from '../events/event-records.js';
import type { EventOwner, EventWrite } from '../events/event-write.js';
import { compositeKey } from '../shared/keys.js';
import type { FieldPath } from '../shared/storable.js';
import { checkValue, fieldName, text } from '../shared/validate.js';
import { contactChangedFact, type TriggerFact, type TriggerOutbox } from '../triggers/trigger-outbox.js';
import {
  MAX_MESSAGE_BYTES,
  MESSAGE_SCHEMAS,
  messageTypeSchema,
  type PageMessage,
  type SegmentMessage,
  type MessageType,
} from './segment-ingest.schema.js';
import { createSegmentIngestStore, type UserIdOwner } from './segment-ingest-store.js';

/** Segment's e-commerce spec names for emk's standard events; any other name goes through emk's own aliases. */
const SEGMENT_EVENT_NAMES: Record<string, string> = {
  'Product Viewed': 'viewed_product',
  'Product Added': 'added_to_cart',
  'Product Removed': 'removed_from_cart',
  'Checkout Started': 'started_checkout',
  'Products Searched': 'search_submitted',
  'Product Clicked': 'product_clicked',
  'Cart Viewed': 'cart_viewed',
  'Product List Viewed': 'collection_viewed',
};

export const segmentEventName = (name: string) => canonicalEventName(SEGMENT_EVENT_NAMES[name] ?? name);

/** `source` of the events stored and of the contacts created. */
const SOURCE = 'segment';

/** Segment's reserved traits that emk's properties spell otherwise. */
const TRAIT_NAMES: Record<string, string> = { firstName: 'first_name', lastName: 'last_name' };

/** Page fields copied from `context.page` when the page's properties lack them. */
const PAGE_FIELDS = ['url', 'title', 'referrer', 'path', 'search'] as const;

/**
 * The anonymous id under which events of a `userId` nobody identified yet wait; the identify that names the
 * user's email attaches them.
 */
const waitingKey = (userId: string) => `user_id:${userId}`;

const writeKeySchema = text(64);
const bytesOf = (value: unknown) => Buffer.byteLength(JSON.stringify(value) ?? '');
const isObject = (value: unknown): value is Record<string, unknown> => !!value && typeof value === 'object' && !Array.isArray(value);

/** The email a message names itself: identify's `traits.email`, else `context.traits.email`. */
function ownEmail(m: SegmentMessage): string | undefined {
  return (m.type === 'identify' ? m.traits?.email : undefined) ?? m.context?.traits?.email;
}

/** Identify's traits (email aside, Segment's reserved names in emk's spelling) and the `user_id`. */
function contactProperties(m: SegmentMessage): Record<string, unknown> {
  const properties: Record<string, unknown> = {};
  if (m.type === 'identify') {
    for (const [key, value] of Object.entries(m.traits ?? {})) if (key !== 'email') properties[TRAIT_NAMES[key] ?? key] = value;
  }
  if (m.userId) properties.user_id = m.userId;
  return properties;
}

/** `active_on_site`'s properties: the page's, completed from `context.page`, with its name and category. */
function pageProperties(m: PageMessage): Record<string, unknown> {
  const properties: Record<string, unknown> = { ...(m.properties ?? {}) };
  for (const field of PAGE_FIELDS) {
    const value = m.context?.page?.[field];
    if (properties[field] === undefined && value !== undefined) properties[field] = value;
  }
  if (m.name !== undefined && properties.name === undefined) properties.name = m.name;
  if (m.category !== undefined && properties.category === undefined) properties.category = m.category;
  return properties;
}

/**
 * One message checked: `at` is where it sits (`batch[3]`) or nothing for a single-message call. Null for the
 * types accepted and not stored (`screen`, `group`).
 */
function parseMessage(raw: unknown, at: FieldPath): SegmentMessage | null {
  const where = at.length > 0 ? `${fieldName(at)}.` : '';
  if (!isObject(raw)) throw new ValidationError(`invalid request: ${fieldName(at)} must be an object`);
  const type = checkValue(messageTypeSchema, raw.type, [...at, 'type']);
  if (!type.success) throw new ValidationError(`invalid request: ${type.problem}`);
  const parsed = checkValue(MESSAGE_SCHEMAS[type.data], raw, at);
  if (!parsed.success) throw new ValidationError(`invalid request: ${parsed.problem}`);
  const message = parsed.data;
  if (message.type === 'screen' || message.type === 'group') return null;
  if (message.type !== 'alias' && !message.userId && !message.anonymousId) {
    throw new ValidationError(`invalid request: ${where}userId or anonymousId is required`);
  }
  return message as SegmentMessage;
}

/**
 * Segment's HTTP Tracking API over emk's own write paths (docs/api/segment.md): contacts through
 * `contacts.writeContacts`, events through `events.recordEvents` (flow triggers, segments and recommendation
 * aggregates as for /collect/event). A request is one unit of work: all of it is stored, or nothing.
 */
export function createSegmentIngestService(deps: {
  writer: WriteBatcher;
  dialect: Dialect;
  contactLookup: ContactLookup;
  eventRecords: EventRecords;
  outbox: TriggerOutbox;
  workspaces: { findBySiteId(siteId: string): Promise<{ id: string }> };
  writeContacts: ContactService['writeContacts'];
  recordEvents: EventService['recordEvents'];
}) {
  const { writer, contactLookup, eventRecords, outbox, workspaces, writeContacts, recordEvents } = deps;
  const store = createSegmentIngestStore(deps.dialect);

  /** The workspace whose site id is the write key; 401 for none or a wrong one. */
  async function workspaceOf(writeKey: string | undefined): Promise<string> {
    if (writeKey === undefined || writeKey === '') throw new UnauthorizedError('missing write key');
    if (!checkValue(writeKeySchema, writeKey).success) throw new UnauthorizedError('invalid write key');
    try {
      return (await workspaces.findBySiteId(writeKey)).id;
    } catch (error) {
      if (error instanceof NotFoundError) throw new UnauthorizedError('invalid write key');
      throw error;
    }
  }

  /** The messages seen for the first time (no `messageId`: always); their ids are recorded. */
  async function firstDeliveries(trx: Knex.Transaction, workspaceId: string, messages: SegmentMessage[], now: number) {
    const fresh = await store.recordNewMessageIds(trx, workspaceId, messages.flatMap((m) => (m.messageId ? [m.messageId] : [])), now);
    return messages.filter((m) => {
      if (!m.messageId) return true;
      // Deleted once taken: a second copy in the same request is a duplicate too.
      return fresh.delete(m.messageId);
    });
  }

  /** The contacts (with emails) owning anonymous ids. */
  async function ownersOfAnonymousIds(trx: Knex.Transaction, workspaceId: string, anonymousIds: string[]) {
    const ids = await contactLookup.ownersOfAnonymousIds(trx, anonymousIds.map((id): [string, string] => [workspaceId, id]));
    const rows = await contactLookup.findByIds(trx, workspaceId, [...new Set(ids.values())]);
    const emailOf = new Map(rows.map((row) => [row.id, row.email]));
    const owners = new Map<string, UserIdOwner>();
    for (const id of anonymousIds) {
      const contactId = ids.get(compositeKey(workspaceId, id));
      if (contactId && emailOf.has(contactId)) owners.set(id, { contactId, email: emailOf.get(contactId)! });
    }
    return owners;
  }

  /** Stores one request's messages set-based: contacts first (so events find them), then events. */
  async function apply(trx: Knex.Transaction, workspaceId: string, parsed: SegmentMessage[]): Promise<void> {
    const now = Date.now();
    const messages = await firstDeliveries(trx, workspaceId, parsed, now);
    if (messages.length === 0) return;

    // Whom the ids name already.
    const users = await store.ownersOfUserIds(
      trx,
      workspaceId,
      messages.flatMap((m) => (m.type === 'alias' ? [m.userId, m.previousId] : m.userId ? [m.userId] : [])),
    );
    const linkedIdOf = (m: SegmentMessage) => (m.type === 'alias' ? m.previousId : m.anonymousId);
    const visitors = await ownersOfAnonymousIds(trx, workspaceId, messages.flatMap((m) => linkedIdOf(m) ?? []));

    // The email each message names: its own, else its user's (the latest named in this request wins), else its
    // visitor's; an alias also by its previousId.
    const emailOfUser = new Map([...users].map(([userId, owner]) => [userId, owner.email]));
    for (const m of messages) {
      const email = ownEmail(m);
      if (email && m.userId) emailOfUser.set(m.userId, email);
    }
    const emails = messages.map((m) => {
      const linkedId = linkedIdOf(m);
      return (
        ownEmail(m) ??
        (m.userId ? emailOfUser.get(m.userId) : undefined) ??
        (m.type === 'alias' ? emailOfUser.get(m.previousId) : undefined) ??
        (linkedId ? visitors.get(linkedId)?.email : undefined)
      );
    });

    // Contact writes: identify and alias always, others when they name an email or bring an unlinked visitor.
    const writtenAt: number[] = [];
    const writes = messages.flatMap((m, i) => {
      const email = emails[i];
      const linkedId = linkedIdOf(m);
      if (!email) return [];
      const bringsVisitor = linkedId !== undefined && !visitors.has(linkedId);
      if (m.type !== 'identify' && m.type !== 'alias' && ownEmail(m) === undefined && !bringsVisitor) return [];
      writtenAt.push(i);
      return [
        {
          workspaceId,
          email,
          properties: contactProperties(m),
          merge: 'overwrite' as const,
          statusOnCreate: 'non_subscribed' as const,
          sourceOnCreate: SOURCE,
          ...(linkedId ? { anonymousId: linkedId } : {}),
        },
      ];
    });
    const contactOf = new Map<number, string>();
    (await writeContacts(trx, writes)).forEach((result, j) => {
      if ('error' in result) throw new LimitReachedError(result.error);
      contactOf.set(writtenAt[j]!, result.contactId);
    });

    // User ids point at the contact their latest message named; a user id new to the workspace brings the
    // events that waited for it.
    const claims = new Map<string, string>();
    messages.forEach((m, i) => {
      const contactId = contactOf.get(i);
      if (contactId && m.userId && users.get(m.userId)?.contactId !== contactId) claims.set(m.userId, contactId);
    });
    await store.claimUserIds(trx, workspaceId, claims, now);
    const facts: TriggerFact[] = [];
    for (const [userId, contactId] of claims) {
      if (users.has(userId)) continue;
      if ((await eventRecords.attachAnonymous(trx, workspaceId, [waitingKey(userId)], contactId)) > 0) {
        facts.push(contactChangedFact(workspaceId, contactId, 'events', now));
      }
    }
    await outbox.record(trx, facts);

    const contactOfMessage = (m: SegmentMessage, i: number) =>
      contactOf.get(i) ??
      (m.userId ? (claims.get(m.userId) ?? users.get(m.userId)?.contactId) : undefined) ??
      (m.anonymousId ? visitors.get(m.anonymousId)?.contactId : undefined);
    const events: EventWrite[] = messages.flatMap((m, i) => {
      if (m.type !== 'track' && m.type !== 'page') return [];
      const contactId = contactOfMessage(m, i);
      const owner: EventOwner = contactId ? { contactId } : { anonymousId: m.anonymousId ?? waitingKey(m.userId!) };
      return [
        {
          workspaceId,
          owner,
          eventName: m.type === 'track' ? segmentEventName(m.event) : 'active_on_site',
          properties: m.type === 'track' ? (m.properties ?? {}) : pageProperties(m),
          source: SOURCE,
          occurredAt: m.timestamp ?? now,
          fireTrigger: true,
          contactSource: SOURCE,
          viaCollect: true,
        },
      ];
    });
    for (const result of await recordEvents(trx, events)) {
      if ('error' in result) throw result.error === 'contact not found' ? new NotFoundError(result.error) : new LimitReachedError(result.error);
    }
  }

  const storeMessages = (workspaceId: string, messages: SegmentMessage[]) => writer.run((trx) => apply(trx, workspaceId, messages));

  return {
    /** POST /v1/identify|track|page|alias (and screen|group, accepted): one message, its type given by the path. */
    async receive(writeKey: string | undefined, type: MessageType, body: unknown): Promise<{ success: true }> {
      const workspaceId = await workspaceOf(writeKey);
      if (bytesOf(body) > MAX_MESSAGE_BYTES) throw new PayloadTooLargeError();
      const message = parseMessage(isObject(body) ? { ...body, type } : body, []);
      if (message) await storeMessages(workspaceId, [message]);
      return { success: true };
    },

    /**
     * POST /v1/batch and /v1/import: every message is checked before anything is stored; a refused one (bad
     * field, over 32 KB) refuses the request naming `batch[i]`, and nothing of it is stored.
     */
    async receiveBatch(writeKey: string | undefined, body: unknown): Promise<{ success: true }> {
      const workspaceId = await workspaceOf(writeKey);
      if (!isObject(body)) throw new ValidationError('invalid request: body must be an object');
      if (!Array.isArray(body.batch)) {
        throw new ValidationError(`invalid request: batch ${body.batch === undefined ? 'is required' : 'must be an array'}`);
      }
      const messages = body.batch.flatMap((raw: unknown, i) => {
        if (bytesOf(raw) > MAX_MESSAGE_BYTES) throw new ValidationError(`invalid request: batch[${i}] must be at most 32 KB`);
        // The batch's `context` stands in for a message's own.
        const withContext = isObject(raw) && raw.context === undefined && body.context !== undefined ? { ...raw, context: body.context } : raw;
        return parseMessage(withContext, ['batch', i]) ?? [];
      });
      if (messages.length > 0) await storeMessages(workspaceId, messages);
      return { success: true };
    },
  };
}

export type SegmentIngestService = ReturnType<typeof createSegmentIngestService>;
