import type { Knex } from 'knex';
import type { Db } from '../db/database.js';
import { chunk, chunkSizeFor } from '../db/bulk.js';
import type { Dialect } from '../db/dialect/dialect.js';
import { NEWEST_FIRST, selectPage } from '../db/page.js';
import type { Paging } from '../shared/paging.js';
import { toIso } from '../shared/time.js';
import type { TemplateVariables } from '../templates/template-engine.js';
import { compileSteps, type ProgramEntry } from './flow-program.js';
import type { Enrollment, EnrollmentStatus, ExitReason, Flow, FlowStep, FlowTrigger } from './flow.schema.js';

/**
 * A flow as stored: the record's fields (`trigger`, `steps` and `filters` are JSON columns, decoded by the row
 * mapper), but its times in epoch milliseconds, and the columns the API does not show.
 */
export type FlowRow = Omit<Flow, 'created_at' | 'updated_at'> & {
  workspace_id: string;
  trigger_type: FlowTrigger['type'];
  live_after_fact: number | null;
  skipped: number;
  deleted_at: number | null;
  created_at: number;
  updated_at: number;
};

/** What an email step's templates see of the trigger (event, order, cart, viewed products), kept with the enrolment. */
export type TriggerContext = Pick<TemplateVariables, 'event' | 'order' | 'cart' | 'viewed_products'>;

/** One call of a webhook step (GET /flows/{id}/webhook-attempts). */
export interface WebhookAttempt {
  id: string;
  enrollment_id: string;
  step: number;
  attempt: number;
  status_code: number | null;
  error: string | null;
  duration_ms: number;
  created_at: string;
}
export type WebhookAttemptRow = Omit<WebhookAttempt, 'created_at'> & { workspace_id: string; flow_id: string; created_at: number };

/**
 * An enrolment as stored: the record's fields, but its times in epoch milliseconds, and the columns the API does
 * not show (`context` is a JSON column, decoded by the row mapper).
 */
export type EnrollmentRow = Omit<Enrollment, 'step_path' | 'next_run_at' | 'created_at' | 'updated_at'> & {
  workspace_id: string;
  dedupe_key: string;
  trigger_fact_id: number | null;
  context: TriggerContext;
  next_run_at: number | null;
  created_at: number;
  updated_at: number;
};

/** Enrolments that may still move. */
export const IN_PROGRESS: EnrollmentStatus[] = ['active', 'waiting'];

export function createFlowStore(dialect: Dialect) {
  const fromRow = (raw: Record<string, unknown>): FlowRow => ({
    ...(raw as unknown as FlowRow),
    trigger: dialect.readJson<FlowTrigger>(raw.trigger),
    steps: dialect.readJson<FlowStep[]>(raw.steps),
    filters: raw.filters === null || raw.filters === undefined ? null : dialect.readJson<Record<string, unknown>>(raw.filters),
    smart_sending_hours: dialect.readNumber(raw.smart_sending_hours),
    live_after_fact: dialect.readNullableNumber(raw.live_after_fact),
    skipped: dialect.readNumber(raw.skipped),
    deleted_at: dialect.readNullableNumber(raw.deleted_at),
    created_at: dialect.readNumber(raw.created_at),
    updated_at: dialect.readNumber(raw.updated_at),
  });

  const toRow = (row: Partial<FlowRow>): Record<string, unknown> => ({
    ...row,
    ...(row.trigger !== undefined ? { trigger: dialect.writeJson(row.trigger) } : {}),
    ...(row.steps !== undefined ? { steps: dialect.writeJson(row.steps) } : {}),
    ...(row.filters !== undefined ? { filters: row.filters === null ? null : dialect.writeJson(row.filters) } : {}),
  });

  const enrollmentFromRow = (raw: Record<string, unknown>): EnrollmentRow => ({
    ...(raw as unknown as EnrollmentRow),
    trigger_fact_id: dialect.readNullableNumber(raw.trigger_fact_id),
    context: dialect.readJson<TriggerContext>(raw.context) ?? {},
    current_step: dialect.readNumber(raw.current_step),
    next_run_at: dialect.readNullableNumber(raw.next_run_at),
    created_at: dialect.readNumber(raw.created_at),
    updated_at: dialect.readNumber(raw.updated_at),
  });

  const enrollmentRecord = (program: ProgramEntry[]) => (raw: Record<string, unknown>): Enrollment => {
    const row = enrollmentFromRow(raw);
    return {
      id: row.id,
      flow_id: row.flow_id,
      contact_id: row.contact_id,
      trigger_event_id: row.trigger_event_id ?? null,
      status: row.status,
      current_step: row.current_step,
      step_path: ['active', 'waiting'].includes(row.status) ? (program[row.current_step]?.path ?? null) : null,
      next_run_at: toIso(row.next_run_at),
      exit_reason: row.exit_reason ?? null,
      created_at: toIso(row.created_at)!,
      updated_at: toIso(row.updated_at)!,
    };
  };

  const live = (db: Db) => db('flows').where({ status: 'live' }).whereNull('deleted_at');

  return {
    toRecord: (row: FlowRow): Flow => ({
      id: row.id,
      name: row.name,
      status: row.status,
      trigger: row.trigger,
      steps: row.steps,
      message_type: row.message_type,
      reentry: row.reentry,
      filters: row.filters,
      smart_sending_hours: row.smart_sending_hours,
      created_at: toIso(row.created_at)!,
      updated_at: toIso(row.updated_at)!,
    }),

    async insert(db: Db, row: FlowRow): Promise<void> {
      await db('flows').insert(toRow(row));
    },

    async update(db: Db, id: string, patch: Partial<FlowRow>): Promise<void> {
      await db('flows').where({ id }).update(toRow(patch));
    },

    /** A flow of this workspace that was not deleted (locked for the transaction when asked). */
    async find(db: Db, workspaceId: string, id: string, lock = false): Promise<FlowRow | null> {
      const query = db('flows').where({ workspace_id: workspaceId, id }).whereNull('deleted_at').first();
      const row = await (lock ? dialect.forUpdate(query) : query);
      return row ? fromRow(row) : null;
    },

    /** Any flow by id, deleted ones too (the worker's view). */
    async findById(db: Db, id: string): Promise<FlowRow | null> {
      const row = await db('flows').where({ id }).first();
      return row ? fromRow(row) : null;
    },

    list: (db: Db, workspaceId: string, paging: Paging) =>
      selectPage(db('flows').where({ workspace_id: workspaceId }).whereNull('deleted_at'), NEWEST_FIRST, paging, fromRow),

    /** The live flows of these workspaces that these trigger types start. */
    async liveFlows(db: Db, workspaceIds: string[], triggerTypes: string[]): Promise<FlowRow[]> {
      if (workspaceIds.length === 0 || triggerTypes.length === 0) return [];
      const rows = await live(db).whereIn('workspace_id', workspaceIds).whereIn('trigger_type', triggerTypes);
      return rows.map(fromRow);
    },

    async names(db: Db, workspaceId: string, ids: string[]): Promise<Map<string, string>> {
      if (ids.length === 0) return new Map();
      const rows = await db('flows').where({ workspace_id: workspaceId }).whereIn('id', ids).select('id', 'name');
      return new Map(rows.map((r: { id: string; name: string }) => [r.id, r.name]));
    },

    async addSkipped(db: Db, id: string, skipped: number): Promise<void> {
      if (skipped > 0) await db('flows').where({ id }).increment('skipped', skipped);
    },

    /** New enrolments; those whose dedupe key exists already (a fact seen twice, `reentry: once`) are dropped. */
    async insertEnrollments(db: Db, rows: EnrollmentRow[]): Promise<EnrollmentRow[]> {
      const inserted: EnrollmentRow[] = [];
      for (const part of chunk(rows, chunkSizeFor(dialect, 14))) {
        const ids = (await db('flow_enrollments')
          .insert(part.map((row) => ({ ...row, context: dialect.writeJson(row.context) })))
          .onConflict('dedupe_key')
          .ignore()
          .returning('id')) as Array<{ id: string }>;
        const kept = new Set(ids.map((r) => r.id));
        inserted.push(...part.filter((row) => kept.has(row.id)));
      }
      return inserted;
    },

    /**
     * What an enrolment in the flow saw of its trigger, and whose it is (a step's preview): the one named, or the
     * contact's latest; null when there is none.
     */
    async enrollmentContext(db: Db, flowId: string, which: { id: string } | { contact_id: string }): Promise<{ contact_id: string; context: TriggerContext } | null> {
      const row = await db('flow_enrollments').where({ flow_id: flowId, ...which }).orderBy('id', 'desc').first('contact_id', 'context');
      return row ? { contact_id: row.contact_id, context: dialect.readJson<TriggerContext>(row.context) ?? {} } : null;
    },

    async findEnrollments(db: Db, ids: string[]): Promise<EnrollmentRow[]> {
      const out: EnrollmentRow[] = [];
      for (const part of chunk(ids, 500)) out.push(...(await db('flow_enrollments').whereIn('id', part)).map(enrollmentFromRow));
      return out;
    },

    async findByIds(db: Db, ids: string[]): Promise<FlowRow[]> {
      if (ids.length === 0) return [];
      return (await db('flows').whereIn('id', ids)).map(fromRow);
    },

    /**
     * Moves enrolments on, only those still in progress at the step they were read at (a duplicate job finds
     * them moved and does nothing); returns the ids that moved.
     */
    async advance(
      db: Db,
      ids: string[],
      fromStep: number,
      patch: Partial<Pick<EnrollmentRow, 'status' | 'current_step' | 'next_run_at' | 'exit_reason' | 'updated_at'>>,
    ): Promise<Set<string>> {
      const moved = new Set<string>();
      for (const part of chunk(ids, 500)) {
        const rows = (await db('flow_enrollments')
          .whereIn('id', part)
          .where({ current_step: fromStep })
          .whereIn('status', IN_PROGRESS)
          .update(patch)
          .returning('id')) as Array<{ id: string }>;
        for (const row of rows) moved.add(row.id);
      }
      return moved;
    },

    async fail(db: Db, ids: string[], now: number): Promise<void> {
      for (const part of chunk(ids, 500)) await db('flow_enrollments').whereIn('id', part).whereIn('status', IN_PROGRESS).update({ status: 'failed', updated_at: now });
    },

    /** Ends the in-progress enrolments that match `where`; returns how many. */
    async exitWhere(db: Db, where: (q: Knex.QueryBuilder) => void, reason: ExitReason, now: number): Promise<number> {
      const query = db('flow_enrollments').whereIn('status', IN_PROGRESS);
      where(query);
      return query.update({ status: 'exited', exit_reason: reason, next_run_at: null, updated_at: now });
    },

    /**
     * Ends the abandoned-cart and browse-abandonment enrolments of these workspaces that each contact started before its order (an
     * outbox fact id: facts are numbered in commit order); returns how many.
     */
    exitCartEnrollmentsBefore(db: Db, workspaceIds: string[], lastOrderOf: Map<string, number>, now: number): Promise<number> {
      const cartFlows = db('flows').select('id').whereIn('trigger_type', ['abandoned_cart', 'browse_abandonment']).whereIn('workspace_id', workspaceIds);
      return this.exitWhere(
        db,
        (q) =>
          q
            .where((byContact) => {
              for (const [contactId, orderFact] of lastOrderOf) {
                byContact.orWhere((one) => one.where({ contact_id: contactId }).where('trigger_fact_id', '<', orderFact));
              }
            })
            .whereIn('flow_id', cartFlows),
        'order_placed',
        now,
      );
    },

    /** The in-progress enrolments of a flow, for the jobs that resume them. */
    async inProgress(db: Db, flowId: string): Promise<Array<{ id: string; current_step: number; next_run_at: number | null }>> {
      const rows = await db('flow_enrollments').where({ flow_id: flowId }).whereIn('status', IN_PROGRESS).select('id', 'current_step', 'next_run_at');
      return rows.map((r: Record<string, unknown>) => ({
        id: r.id as string,
        current_step: dialect.readNumber(r.current_step),
        next_run_at: dialect.readNullableNumber(r.next_run_at),
      }));
    },

    listEnrollments: (db: Db, flow: FlowRow, filter: { status?: EnrollmentStatus }, paging: Paging) =>
      selectPage(db('flow_enrollments').where({ flow_id: flow.id, ...filter }), NEWEST_FIRST, paging, enrollmentRecord(compileSteps(flow.steps))),

    /**
     * Hands enrolments to their webhook step's job: those at the step that are running (or whose delay before it
     * ran out) become `waiting` without `next_run_at`; one already handed over is not handed again.
     */
    async awaitWebhook(db: Db, ids: string[], step: number, now: number): Promise<Set<string>> {
      const moved = new Set<string>();
      for (const part of chunk(ids, 500)) {
        const rows = (await db('flow_enrollments')
          .whereIn('id', part)
          .where({ current_step: step })
          .where((q) => q.where({ status: 'active' }).orWhere((w) => w.where({ status: 'waiting' }).whereNotNull('next_run_at')))
          .update({ status: 'waiting', next_run_at: null, updated_at: now })
          .returning('id')) as Array<{ id: string }>;
        for (const row of rows) moved.add(row.id);
      }
      return moved;
    },

    /** Moves every in-progress enrolment of a flow from one position to another (its steps were edited). */
    async movePositions(db: Db, flowId: string, moves: Map<number, number>, now: number): Promise<void> {
      if (moves.size === 0) return;
      // Through a position no enrolment can hold, so one move never catches another's result.
      for (const [from] of moves) {
        await db('flow_enrollments').where({ flow_id: flowId, current_step: from }).whereIn('status', IN_PROGRESS).update({ current_step: -1 - from, updated_at: now });
      }
      for (const [from, to] of moves) {
        const moved = () => db('flow_enrollments').where({ flow_id: flowId, current_step: -1 - from });
        // A webhook call in flight at the old place is dropped: the enrolment runs its new step afresh.
        await moved().where({ status: 'waiting' }).whereNull('next_run_at').update({ status: 'active' });
        await moved().whereIn('status', IN_PROGRESS).update({ current_step: to });
      }
    },

    /** The positions a flow's in-progress enrolments hold. */
    async positionsInUse(db: Db, flowId: string): Promise<number[]> {
      const rows = await db('flow_enrollments').where({ flow_id: flowId }).whereIn('status', IN_PROGRESS).distinct('current_step');
      return rows.map((r: { current_step: unknown }) => dialect.readNumber(r.current_step));
    },

    async insertWebhookAttempt(db: Db, row: WebhookAttemptRow): Promise<void> {
      await db('flow_webhook_attempts').insert(row);
    },

    listWebhookAttempts: (db: Db, flowId: string, filter: { enrollment_id?: string }, paging: Paging) =>
      selectPage(db('flow_webhook_attempts').where({ flow_id: flowId, ...filter }), NEWEST_FIRST, paging, (raw: Record<string, unknown>): WebhookAttempt => ({
        id: raw.id as string,
        enrollment_id: raw.enrollment_id as string,
        step: dialect.readNumber(raw.step),
        attempt: dialect.readNumber(raw.attempt),
        status_code: dialect.readNullableNumber(raw.status_code),
        error: (raw.error as string | null) ?? null,
        duration_ms: dialect.readNumber(raw.duration_ms),
        created_at: toIso(dialect.readNumber(raw.created_at))!,
      })),

    /** Enrolments in progress, counted per status and step. */
    async inProgressCounts(db: Db, flowId: string): Promise<Array<{ status: EnrollmentStatus; current_step: number; n: number }>> {
      const rows = await db('flow_enrollments')
        .where({ flow_id: flowId })
        .whereIn('status', IN_PROGRESS)
        .groupBy('status', 'current_step')
        .select('status', 'current_step', db.raw('COUNT(*) AS n'));
      return (rows as Array<{ status: EnrollmentStatus; current_step: unknown; n: unknown }>).map((row) => ({
        status: row.status,
        current_step: Number(row.current_step),
        n: Number(row.n),
      }));
    },

    async enrollmentCounts(db: Db, flowId: string): Promise<Record<EnrollmentStatus, number>> {
      const rows = await db('flow_enrollments').where({ flow_id: flowId }).groupBy('status').select('status', db.raw('COUNT(*) AS n'));
      const counts: Record<EnrollmentStatus, number> = { active: 0, waiting: 0, completed: 0, exited: 0, failed: 0 };
      for (const row of rows as Array<{ status: EnrollmentStatus; n: unknown }>) counts[row.status] = Number(row.n);
      return counts;
    },
  };
}

export type FlowStore = ReturnType<typeof createFlowStore>;
