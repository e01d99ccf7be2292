import type { Knex } from 'knex';
import type { Database, Db, Reader } from '../db/database.js';
import type { Dialect } from '../db/dialect/dialect.js';
import { NotFoundError } from '../errors.js';
import { canonicalEventName } from '../events/event-names.js';
import type { JobHandlers, JobQueue } from '../jobs/job-queue.js';
import { uuidv7 } from '../shared/ids.js';
import { toPage, type Page, type Paging } from '../shared/paging.js';
import { systemClock, type Clock } from '../shared/time.js';
import { parseInput } from '../shared/validate.js';
import type { FactConsumer } from '../triggers/trigger-dispatcher.js';
import type { ContactChange, OutboxFact, TriggerFact, TriggerOutbox } from '../triggers/trigger-outbox.js';
import {
  dependenciesOf,
  parseConditions,
  segmentCreateSchema,
  segmentUpdateSchema,
  type ConditionDependencies,
  type Segment,
  type SegmentConditions,
  type SegmentMember,
} from './segment.schema.js';
import { createSegmentStore, type SegmentRow } from './segment-store.js';

export const SEGMENT_JOBS = { refresh: 'segments.refresh' } as const;

/** Time-window segments are refreshed for everyone this often (CONTRACT §7.5: at least hourly). */
export const REFRESH_INTERVAL_MS = 3_600_000;

/** Whether a fact can change the truth of conditions with these dependencies, for the fact's contact. */
function affects(fact: OutboxFact, reads: ConditionDependencies): boolean {
  switch (fact.triggerType) {
    case 'event':
    case 'shipping_information':
    case 'cart':
      return fact.eventName !== null && fact.eventName !== undefined && reads.events.has(canonicalEventName(fact.eventName));
    case 'order_placed':
    case 'order_updated':
      return reads.orders;
    case 'contact_changed': {
      const change = fact.payload?.change as ContactChange | undefined;
      if (change === 'orders') return reads.orders;
      if (change === 'profile') return reads.contact;
      if (change === 'events') return reads.events.size > 0;
      // A new contact (or a fact that does not say): every condition may hold for it now.
      return true;
    }
    default:
      return false;
  }
}

/**
 * Segments (docs/segments.md): saved conditions whose members are kept in `segment_members`. Saving computes
 * the members at once; the outbox consumer re-evaluates the contacts a write changed, for the segments that
 * change can affect; the hourly refresh moves time windows for everyone. Entering records `segment_entered`.
 */
export function createSegmentService(deps: {
  knex: Knex;
  reader: Reader;
  writeTransaction: Database['writeTransaction'];
  dialect: Dialect;
  outbox: TriggerOutbox;
  jobs: JobQueue;
  clock?: Clock;
}) {
  const { knex, reader, writeTransaction, outbox, jobs } = deps;
  const store = createSegmentStore(deps.dialect);
  const clock = deps.clock ?? systemClock;

  async function load(db: Db, workspaceId: string, id: string, lock = false): Promise<SegmentRow> {
    const row = await store.find(db, workspaceId, id, lock);
    if (!row) throw new NotFoundError();
    return row;
  }

  async function toRecord(db: Db, row: SegmentRow): Promise<Segment> {
    const counts = await store.memberCounts(db, [row.id]);
    return store.toRecord(row, counts.get(row.id) ?? 0);
  }

  /** Re-evaluates the contacts in scope (null: everyone) and records `segment_entered` for those who entered. */
  async function reevaluate(trx: Knex.Transaction, row: SegmentRow, scope: string[] | null): Promise<TriggerFact[]> {
    const now = clock();
    const entered = await store.reevaluate(trx, row, store.conditionsSql(row.conditions, now), now, scope);
    return entered.map((contactId) => ({
      workspaceId: row.workspace_id,
      triggerType: 'segment_entered',
      contactId,
      subjectType: 'segment',
      subjectId: row.id,
      at: now,
    }));
  }

  /**
   * Makes sure a refresh waits to run, an hour from now, unless one already waits: one chain of jobs however
   * many segments are saved. A running refresh does not count (it may have checked for segments before this
   * one was saved); two chains started at once merge, as each run re-enqueues only when none waits.
   */
  async function scheduleRefresh(trx: Knex.Transaction): Promise<void> {
    if (await jobs.hasWaiting(trx, SEGMENT_JOBS.refresh)) return;
    await jobs.enqueue(trx, [{ kind: SEGMENT_JOBS.refresh, runAt: clock() + REFRESH_INTERVAL_MS }]);
  }

  const handlers: JobHandlers = {
    /** Every time-window segment, for everyone: windows moved since the last run. Then the next run, while any exist. */
    [SEGMENT_JOBS.refresh]: async () => {
      // One transaction per segment: a long refresh never holds every segment's rows at once.
      for (const row of await store.withTimeWindow(knex)) {
        await writeTransaction(async (trx) => {
          const current = await store.find(trx, row.workspace_id, row.id, true);
          if (current) await outbox.record(trx, await reevaluate(trx, current, null));
        });
      }
      await writeTransaction(async (trx) => {
        if (await store.anyWithTimeWindow(trx)) await scheduleRefresh(trx);
      });
    },
  };

  /**
   * The outbox consumer: for each segment, the contacts of the facts that can affect it, re-evaluated in two
   * set-based statements per segment, in the dispatcher's transaction.
   */
  const consumeFacts: FactConsumer = async (trx, facts) => {
    const withContact = facts.filter((fact) => fact.contactId);
    const segments = await store.inWorkspaces(trx, [...new Set(withContact.map((fact) => fact.workspaceId))]);
    const entered: TriggerFact[] = [];
    for (const row of segments) {
      const reads = dependenciesOf(row.conditions);
      const contactIds = withContact.filter((fact) => fact.workspaceId === row.workspace_id && affects(fact, reads)).map((fact) => fact.contactId!);
      if (contactIds.length > 0) entered.push(...(await reevaluate(trx, row, contactIds)));
    }
    await outbox.record(trx, entered);
  };

  return {
    handlers,
    consumeFacts,

    /** Which of these contacts meet the conditions now (a flow's filters). */
    async matching(db: Db, workspaceId: string, conditions: SegmentConditions, contactIds: string[]): Promise<Set<string>> {
      if (contactIds.length === 0) return new Set();
      return new Set(await store.matching(db, workspaceId, store.conditionsSql(conditions, clock()), contactIds));
    },

    exists: (db: Db, workspaceId: string, segmentId: string): Promise<boolean> => store.exists(db, workspaceId, segmentId),

    /** POST /segments: the members are computed before the reply. */
    async create(workspaceId: string, body: unknown): Promise<Segment> {
      const input = parseInput(segmentCreateSchema, body);
      const conditions = parseConditions(input.conditions, 'conditions');
      const now = clock();
      const row: SegmentRow = {
        id: uuidv7(now),
        workspace_id: workspaceId,
        name: input.name,
        conditions,
        has_time_window: dependenciesOf(conditions).timeWindow,
        created_at: now,
        updated_at: now,
      };
      return writeTransaction(async (trx) => {
        await store.insert(trx, row);
        await store.fill(trx, row, store.conditionsSql(row.conditions, now), now);
        if (row.has_time_window) await scheduleRefresh(trx);
        return toRecord(trx, row);
      });
    },

    async list(workspaceId: string, paging: Paging): Promise<Page<Segment>> {
      const db = reader();
      const { rows, total } = await store.list(db, workspaceId, paging);
      const counts = await store.memberCounts(db, rows.map((row) => row.id));
      return toPage(
        rows.map((row) => store.toRecord(row, counts.get(row.id) ?? 0)),
        total,
        paging,
      );
    },

    get: async (workspaceId: string, id: string): Promise<Segment> => toRecord(knex, await load(knex, workspaceId, id)),

    /** PATCH /segments/{id}: new conditions re-evaluate everyone at once; those who enter are recorded. */
    async update(workspaceId: string, id: string, body: unknown): Promise<Segment> {
      const { name, conditions: raw } = parseInput(segmentUpdateSchema, body);
      const conditions = raw === undefined ? undefined : parseConditions(raw, 'conditions');
      return writeTransaction(async (trx) => {
        const row = await load(trx, workspaceId, id, true);
        const next: SegmentRow = {
          ...row,
          ...(name !== undefined ? { name } : {}),
          ...(conditions !== undefined ? { conditions, has_time_window: dependenciesOf(conditions).timeWindow } : {}),
          updated_at: clock(),
        };
        await store.update(trx, id, { name: next.name, conditions: next.conditions, has_time_window: next.has_time_window, updated_at: next.updated_at });
        if (conditions !== undefined) {
          await outbox.record(trx, await reevaluate(trx, next, null));
          if (next.has_time_window) await scheduleRefresh(trx);
        }
        return toRecord(trx, next);
      });
    },

    async delete(workspaceId: string, id: string): Promise<void> {
      await writeTransaction(async (trx) => {
        await load(trx, workspaceId, id, true);
        await store.delete(trx, id);
      });
    },

    async members(workspaceId: string, id: string, paging: Paging): Promise<Page<SegmentMember>> {
      const db = reader();
      await load(db, workspaceId, id);
      const { rows, total } = await store.members(db, id, paging);
      return toPage(rows, total, paging);
    },
  };
}

export type SegmentService = ReturnType<typeof createSegmentService>;
