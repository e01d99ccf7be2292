import { isDeepStrictEqual } from 'node:util';
import type { Knex } from 'knex';
import type { z } from 'zod';
import type { ContactLookup } from '../contacts/contact-lookup.js';
import { contactKey } from '../contacts/contact-lookup.js';
import type { BatchHandler, WriteBatcher } from '../db/write-batcher.js';
import type { TableGrowth } from '../db/table-growth.js';
import { ValidationError } from '../errors.js';
import { ActivityDelta } from '../recommendations/activity-delta.js';
import type { ProductActivity } from '../recommendations/product-activity.js';
import { uuidv7 } from '../shared/ids.js';
import { writeRowBatch } from '../shared/row-batch.js';
import { rowField } from '../shared/validate.js';
import {
  batchEventSchema,
  correctEventSchema,
  MAX_BATCH_EVENTS,
  type BatchEventInput,
  type CorrectEventInput,
  type EventRecord,
} from './event.schema.js';
import { dedupeKeyOf, type EventRow, type EventStore } from './event-store.js';
import type { EventWrite, EventWriteResult } from './event-write.js';
import { compositeKey, emailKey } from '../shared/keys.js';

export interface BatchRowError {
  index: number;
  email: string;
  error: string;
}

/**
 * POST /api/v1/events/batch. `processed`: events written. `skipped`: rows carrying a `properties.dedupe_key`
 * already stored for that contact and event name, or sent twice in one batch (a re-sent row: not an error,
 * nothing written, no trigger). `errors`: rows refused, by index.
 */
export interface BatchResult {
  processed: number;
  skipped: number;
  errors: BatchRowError[];
}

/**
 * PUT /api/v1/events/batch, counted per row: `updated` rows changed at least one stored event, `inserted`
 * rows had no match and were inserted (`upsert`), `skipped` rows matched events that already held the values
 * sent (so re-running a correction changes nothing), `errors` rows were refused.
 */
export interface CorrectResult {
  updated: number;
  inserted: number;
  skipped: number;
  errors: BatchRowError[];
}

export const CONTACT_NOT_FOUND = 'contact not found';
export const NO_MATCH = 'no stored event matches email, event_name and dedupe_key';

/** Source of a contact an event creates; batch events never create one, so this is never stored. */
const NO_CONTACT_SOURCE = 'api';

function eventsOf(body: unknown): unknown[] {
  const list = (body as { events?: unknown } | null)?.events;
  if (!Array.isArray(list)) throw new ValidationError('invalid request: events must be an array');
  if (list.length > MAX_BATCH_EVENTS) {
    throw new ValidationError(`invalid request: events must hold at most ${MAX_BATCH_EVENTS} events`);
  }
  return list;
}

const rowError = (index: number, raw: unknown, error: string): BatchRowError => ({ index, email: rowField(raw, 'email') ?? '', error });

/** Replacement properties always carry the row's dedupe_key, so the event keeps matching its key. */
function withDedupeKey(properties: Record<string, unknown>, dedupeKey: string): Record<string, unknown> {
  return { ...properties, dedupe_key: dedupeKey };
}

export function createEventBatches(deps: {
  writer: WriteBatcher;
  eventStore: EventStore;
  contactLookup: ContactLookup;
  recordEvents: BatchHandler<EventWrite, EventWriteResult>;
  activity: ProductActivity;
  tableGrowth: TableGrowth;
}) {
  const { writer, eventStore, contactLookup, recordEvents, activity, tableGrowth } = deps;

  /** POST rows set-based in one transaction: a dedupe lookup, then the shared event handler. */
  async function recordRows(
    trx: Knex.Transaction,
    workspaceId: string,
    rows: Array<{ index: number; input: BatchEventInput }>,
    fireTriggers: boolean,
    result: BatchResult,
  ) {
    // The stored column's notion of a dedupe key (text or number, 1-255 characters); other values never skip.
    const dedupeOf = (input: BatchEventInput) => dedupeKeyOf(input.properties ?? {});
    const keyOf = (input: BatchEventInput) => {
      const dedupe = dedupeOf(input);
      return dedupe === null ? null : compositeKey(emailKey(input.email), input.event_name, dedupe);
    };
    const withKey = rows.filter((r) => dedupeOf(r.input) !== null);
    const seen = await eventStore.storedDedupeKeys(trx, workspaceId, {
      emailKeys: [...new Set(withKey.map((r) => emailKey(r.input.email)))],
      eventNames: [...new Set(withKey.map((r) => r.input.event_name))],
      dedupeKeys: [...new Set(withKey.map((r) => dedupeOf(r.input)!))],
    });
    const now = Date.now();
    const toWrite: Array<{ index: number; email: string; write: EventWrite }> = [];
    for (const { index, input } of rows) {
      const key = keyOf(input);
      if (key !== null && seen.has(key)) {
        result.skipped++;
        continue;
      }
      if (key !== null) seen.add(key);
      toWrite.push({
        index,
        email: input.email,
        write: {
          workspaceId,
          owner: { existingEmail: input.email },
          eventName: input.event_name,
          properties: input.properties ?? {},
          source: input.source ?? null,
          occurredAt: input.timestamp ?? now,
          fireTrigger: fireTriggers,
          contactSource: NO_CONTACT_SOURCE,
        },
      });
    }
    const outcomes = await recordEvents(
      trx,
      toWrite.map((w) => w.write),
    );
    outcomes.forEach((outcome, k) => {
      if ('record' in outcome) result.processed++;
      else result.errors.push({ index: toWrite[k]!.index, email: toWrite[k]!.email, error: outcome.error });
    });
  }

  /** PUT rows set-based in one transaction: contacts in one query, matches in one, grouped updates, one insert. */
  async function correctRows(
    trx: Knex.Transaction,
    workspaceId: string,
    rows: Array<{ index: number; input: CorrectEventInput }>,
    upsert: boolean,
    result: CorrectResult,
  ) {
    const owners = await contactLookup.idsByEmails(
      trx,
      rows.map((r) => [workspaceId, r.input.email] as const),
    );
    const contactIds = [...new Set(owners.values())];
    const stored = await eventStore.findByDedupeKeys(trx, workspaceId, {
      contactIds,
      eventNames: [...new Set(rows.map((r) => r.input.event_name))],
      dedupeKeys: [...new Set(rows.map((r) => r.input.dedupe_key))],
    });
    const matchKey = (contactId: string, eventName: string, dedupeKey: string) => compositeKey(contactId, eventName, dedupeKey);
    const byKey = new Map<string, EventRow[]>();
    for (const row of stored) {
      const key = matchKey(row.contact_id!, row.event_name, row.dedupe_key!);
      byKey.set(key, [...(byKey.get(key) ?? []), row]);
    }

    // The matched events' views as stored, taken out of the aggregates; their corrected values go back in below.
    const views = new ActivityDelta();
    for (const row of stored) views.event(row, -1);

    const now = Date.now();
    const inserts: EventRow[] = [];
    const changed = new Map<string, { id: string; patch: Partial<Pick<EventRow, 'properties' | 'source' | 'created_at'>> }>();
    for (const { index, input } of rows) {
      const ownerId = owners.get(contactKey(workspaceId, input.email));
      if (!ownerId) {
        result.errors.push({ index, email: input.email, error: CONTACT_NOT_FOUND });
        continue;
      }
      const key = matchKey(ownerId, input.event_name, input.dedupe_key);
      const matches = byKey.get(key);
      if (!matches) {
        if (!upsert) {
          result.errors.push({ index, email: input.email, error: NO_MATCH });
          continue;
        }
        // Inserted as a plain event of the contact; a correction never fires a trigger.
        const row: EventRow = {
          id: uuidv7(now),
          workspace_id: workspaceId,
          contact_id: ownerId,
          anonymous_id: null,
          event_name: input.event_name,
          properties: withDedupeKey(input.properties ?? {}, input.dedupe_key),
          source: input.source ?? null,
          dedupe_key: input.dedupe_key,
          created_at: input.timestamp ?? now,
          received_at: now,
        };
        inserts.push(row);
        // A later row of this request with the same key corrects the inserted event.
        byKey.set(key, [row]);
        result.inserted++;
        continue;
      }
      // Several stored events sharing one key are all corrected alike.
      let anyChange = false;
      for (const event of matches) {
        const patch = changed.get(event.id)?.patch ?? {};
        if (input.timestamp !== undefined && input.timestamp !== event.created_at) patch.created_at = event.created_at = input.timestamp;
        if (input.source !== undefined && input.source !== event.source) patch.source = event.source = input.source;
        if (input.properties !== undefined) {
          const properties = withDedupeKey(input.properties, input.dedupe_key);
          if (!isDeepStrictEqual(properties, event.properties)) patch.properties = event.properties = properties;
        }
        if (Object.keys(patch).length === 0) continue;
        anyChange = true;
        // An event inserted earlier in this request is written with its final values by the insert.
        if (!inserts.includes(event)) changed.set(event.id, { id: event.id, patch });
      }
      if (anyChange) result.updated++;
      else result.skipped++;
    }
    await eventStore.insert(trx, inserts);
    await eventStore.applyPatches(trx, [...changed.values()]);
    for (const row of [...stored, ...inserts]) views.event(row, 1);
    await activity.record(trx, views);
  }

  return {
    /**
     * POST /api/v1/events/batch and `emk events import`: up to 1000 events of existing contacts (by email,
     * case-insensitive; never created), one transaction, set-based. Each written event fires its flow
     * trigger unless `fireTriggers` is false (history backfill).
     */
    async recordBatch(workspaceId: string, body: unknown, options: { fireTriggers?: boolean } = {}): Promise<BatchResult> {
      const result = await writeRowBatch({
        schema: batchEventSchema,
        listName: 'events',
        rows: eventsOf(body),
        errorFor: rowError,
        empty: (): BatchResult => ({ processed: 0, skipped: 0, errors: [] }),
        run: (unit, rows) => writer.run(unit, rows),
        write: (trx, valid, counts) => recordRows(trx, workspaceId, valid, options.fireTriggers !== false, counts),
      });
      tableGrowth.added('events', result.processed);
      return result;
    },

    /**
     * PUT /api/v1/events/batch and `emk events correct`: corrections matched by contact email + event_name +
     * dedupe_key, one transaction, no trigger ever.
     */
    async correctBatch(workspaceId: string, body: unknown): Promise<CorrectResult> {
      const list = eventsOf(body);
      const upsert = (body as { upsert?: unknown }).upsert;
      if (upsert !== undefined && typeof upsert !== 'boolean') throw new ValidationError('invalid request: upsert must be a boolean');
      const result = await writeRowBatch({
        schema: correctEventSchema,
        listName: 'events',
        rows: list,
        errorFor: rowError,
        empty: (): CorrectResult => ({ updated: 0, inserted: 0, skipped: 0, errors: [] }),
        run: (unit, rows) => writer.run(unit, rows),
        write: (trx, valid, counts) => correctRows(trx, workspaceId, valid, upsert === true, counts),
      });
      tableGrowth.added('events', result.inserted);
      return result;
    },
  };
}
