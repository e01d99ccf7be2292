import { randomBytes } from 'node:crypto';
import type { Knex } from 'knex';
import type { Dialect } from '../db/dialect/dialect.js';
import type { Database, Db, Reader } from '../db/database.js';
import { NotFoundError, ValidationError } from '../errors.js';
import type { ContactLookup } from '../contacts/contact-lookup.js';
import type { MessageService } from '../messages/message-service.js';
import { uuidv7 } from '../shared/ids.js';
import { toPage, type Page, type Paging } from '../shared/paging.js';
import { systemClock, type Clock } from '../shared/time.js';
import { fieldName, parseInput } from '../shared/validate.js';
import { compileSteps, walkSteps } from './flow-program.js';
import type { WebhookOptions } from './webhook-client.js';
import { webhookUrlProblem } from './webhook-guard.js';
import type { Templates } from '../templates/template-engine.js';
import type { TriggerOutbox } from '../triggers/trigger-outbox.js';
import type { FlowEngine } from './flow-engine.js';
import {
  enrollmentListQuerySchema,
  flowCreateSchema,
  stepPathSchema,
  stepPreviewQuerySchema,
  type EmailStep,
  flowUpdateSchema,
  MAX_BRANCH_DEPTH,
  MAX_TOTAL_STEPS,
  webhookAttemptQuerySchema,
  type Enrollment,
  type Flow,
  type FlowReport,
  type FlowStep,
  type FlowTrigger,
} from './flow.schema.js';
import { createFlowStore, type FlowRow, type WebhookAttempt } from './flow-store.js';
import { parseConditions } from '../segments/segment.schema.js';
import type { SegmentService } from '../segments/segment-service.js';
import type { SenderService } from '../senders/sender-service.js';


/**
 * Flows (docs/flows.md): the records, their checks at save, enrolment lists and reports. What runs them is the
 * engine (flow-engine.ts); this service tells it when a flow goes live again or is deleted.
 */
export function createFlowService(deps: {
  knex: Knex;
  reader: Reader;
  writeTransaction: Database['writeTransaction'];
  dialect: Dialect;
  engine: FlowEngine;
  templates: Templates;
  /** Where an email step's `from_email` may be. */
  senders: Pick<SenderService, 'checkFromEmail'>;
  /** Whether a `segment_entered` trigger names one of the workspace's segments. */
  segments: Pick<SegmentService, 'exists'>;
  outbox: TriggerOutbox;
  messages: Pick<MessageService, 'report' | 'preview'>;
  contactLookup: Pick<ContactLookup, 'findById'>;
  /** Which hosts webhook steps may name over http:// or on private addresses. */
  webhooks: Pick<WebhookOptions, 'allowHosts'>;
  clock?: Clock;
}) {
  const { knex, reader, writeTransaction, engine, templates, segments, outbox, messages } = deps;
  const store = createFlowStore(deps.dialect);
  const clock = deps.clock ?? systemClock;

  /** Templates parse and render within the limits, filters are usable conditions, a segment trigger names a segment: each 400 names its place. */
  async function check(
    db: Db,
    workspaceId: string,
    input: { steps?: FlowStep[] | undefined; trigger?: FlowTrigger | undefined; filters?: Record<string, unknown> | null | undefined },
  ) {
    let total = 0;
    for (const { step, at, depth } of walkSteps(input.steps ?? [])) {
      const place = fieldName(at);
      if (++total > MAX_TOTAL_STEPS) throw new ValidationError(`invalid request: steps must have at most ${MAX_TOTAL_STEPS} steps in all (every path's steps counted)`);
      if (step.type === 'branch') {
        if (depth + 1 > MAX_BRANCH_DEPTH) throw new ValidationError(`invalid request: ${place} nests branches more than ${MAX_BRANCH_DEPTH} deep`);
        parseConditions(step.conditions, `${place}.conditions`);
      }
      if (step.type === 'update_contact' && step.properties === undefined && step.subscription_status === undefined) {
        throw new ValidationError(`invalid request: ${place} must set properties or subscription_status`);
      }
      if (step.type === 'webhook') {
        const problem = webhookUrlProblem(step.url, deps.webhooks.allowHosts);
        if (problem) throw new ValidationError(`invalid request: ${place}.url ${problem}`);
      }
      if (step.type !== 'email') continue;
      await templates.check({ subject: step.subject, html: step.html, text: step.text, format: step.format }, `${place}.`);
      await deps.senders.checkFromEmail(workspaceId, step.from_email, `${place}.from_email`);
    }
    if (input.filters) parseConditions(input.filters, 'filters');
    if (input.trigger?.type === 'segment_entered' && !(await segments.exists(db, workspaceId, input.trigger.segment_id))) {
      throw new ValidationError('invalid request: trigger.segment_id names no segment');
    }
  }

  /** A webhook step without a secret gets one (shown in the flow record; send it back to keep it). */
  const withSecrets = (steps: FlowStep[]): FlowStep[] =>
    steps.map((step) => {
      if (step.type === 'webhook') return step.secret === undefined ? { ...step, secret: `whsec_${randomBytes(24).toString('hex')}` } : step;
      if (step.type === 'branch') return { ...step, yes: withSecrets(step.yes), no: withSecrets(step.no) };
      return step;
    });

  /** The step at `path` (`2`, or `2.yes.0` inside a branch), named as the flow program names it; 404 when there is none. */
  function stepAt(steps: FlowStep[], path: string): FlowStep {
    const entry = compileSteps(steps).find((e) => e.path === path);
    if (!entry) throw new NotFoundError('step not found');
    return entry.step;
  }

  async function load(db: Db, workspaceId: string, id: string, lock = false): Promise<FlowRow> {
    const row = await store.find(db, workspaceId, id, lock);
    if (!row) throw new NotFoundError();
    return row;
  }

  return {
    /** Names by id (the revenue report's rows). */
    names: (db: Db, workspaceId: string, ids: string[]) => store.names(db, workspaceId, ids),

    async create(workspaceId: string, body: unknown): Promise<Flow> {
      const input = parseInput(flowCreateSchema, body);
      await check(knex, workspaceId, input);
      const now = clock();
      const row: FlowRow = {
        id: uuidv7(now),
        workspace_id: workspaceId,
        name: input.name,
        status: input.status,
        trigger_type: input.trigger.type,
        trigger: input.trigger,
        steps: withSecrets(input.steps),
        message_type: input.message_type,
        reentry: input.reentry,
        filters: input.filters ?? null,
        smart_sending_hours: input.smart_sending_hours,
        live_after_fact: null,
        skipped: 0,
        deleted_at: null,
        created_at: now,
        updated_at: now,
      };
      await writeTransaction(async (trx) => {
        if (row.status === 'live') row.live_after_fact = await outbox.lastFactId(trx);
        await store.insert(trx, row);
      });
      return store.toRecord(row);
    },

    async list(workspaceId: string, paging: Paging): Promise<Page<Flow>> {
      const { rows, total } = await store.list(reader(), workspaceId, paging);
      return toPage(rows.map(store.toRecord), total, paging);
    },

    get: async (workspaceId: string, id: string): Promise<Flow> => store.toRecord(await load(knex, workspaceId, id)),

    /** Any field; going live (again) marks where segment entries start to count and resumes the enrolments the flow held. */
    async update(workspaceId: string, id: string, body: unknown): Promise<Flow> {
      const input = parseInput(flowUpdateSchema, body);
      await check(knex, workspaceId, input);
      return writeTransaction(async (trx) => {
        const row = await load(trx, workspaceId, id, true);
        const now = clock();
        const patch: Partial<FlowRow> = { ...Object.fromEntries(Object.entries(input).filter(([, v]) => v !== undefined)), updated_at: now };
        if (input.trigger) patch.trigger_type = input.trigger.type;
        if (input.steps) patch.steps = withSecrets(input.steps);
        const goesLive = input.status === 'live' && row.status !== 'live';
        if (goesLive) patch.live_after_fact = await outbox.lastFactId(trx);
        await store.update(trx, id, patch);
        if (patch.steps) await engine.remap(trx, { ...row, ...patch } as FlowRow, row.steps, patch.steps);
        if (goesLive) await engine.resume(trx, id);
        return store.toRecord(await load(trx, workspaceId, id));
      });
    },

    /** Ends the flow's enrolments (`exited`, `flow_deleted`), then the flow answers 404 everywhere. */
    async delete(workspaceId: string, id: string): Promise<void> {
      await writeTransaction(async (trx) => {
        await load(trx, workspaceId, id, true);
        const now = clock();
        await store.exitWhere(trx, (q) => q.where({ flow_id: id }), 'flow_deleted', now);
        await store.update(trx, id, { deleted_at: now, updated_at: now });
      });
    },

    async enrollments(workspaceId: string, id: string, query: unknown, paging: Paging): Promise<Page<Enrollment>> {
      const filter = parseInput(enrollmentListQuerySchema, query ?? {});
      const { rows, total } = await store.listEnrollments(knex, await load(knex, workspaceId, id), filter, paging);
      return toPage(rows, total, paging);
    },

    /** GET /flows/{id}/webhook-attempts: every call of the flow's webhook steps, newest first; `?enrollment_id=` filters. */
    async webhookAttempts(workspaceId: string, id: string, query: unknown, paging: Paging): Promise<Page<WebhookAttempt>> {
      const filter = parseInput(webhookAttemptQuerySchema, query ?? {});
      await load(knex, workspaceId, id);
      const { rows, total } = await store.listWebhookAttempts(knex, id, filter, paging);
      return toPage(rows, total, paging);
    },

    /**
     * How many enrolments in progress are at each step, by step index (the console's flow page). A `waiting`
     * enrolment has passed its delay step and waits for the next (`current_step`): it is counted at the delay; an
     * `active` one at the step it is about to run.
     */
    async waitingByStep(workspaceId: string, id: string): Promise<Map<number, number>> {
      await load(knex, workspaceId, id);
      const at = new Map<number, number>();
      for (const { status, current_step, n } of await store.inProgressCounts(knex, id)) {
        const step = status === 'waiting' ? Math.max(0, current_step - 1) : current_step;
        at.set(step, (at.get(step) ?? 0) + n);
      }
      return at;
    },

    /**
     * An email step's message as this contact would get it (GET /flows/{id}/steps/{path}/preview.html): the trigger
     * as the named enrolment, else their latest enrolment in the flow, saw it (none: without event, order or
     * cart); nothing sent or stored.
     */
    async previewStep(workspaceId: string, id: string, params: unknown, query: unknown) {
      const { path } = parseInput(stepPathSchema, params);
      const { contact_id, enrollment_id } = parseInput(stepPreviewQuerySchema, query);
      const row = await load(knex, workspaceId, id);
      const step = stepAt(row.steps, path);
      if (step.type !== 'email') throw new ValidationError(`invalid request: path names a ${step.type} step, not an email step`);
      // The flow was loaded in the workspace, so an enrolment found in it is the workspace's.
      const enrollment = await store.enrollmentContext(knex, id, enrollment_id === undefined ? { contact_id: contact_id! } : { id: enrollment_id });
      if (enrollment_id !== undefined && !enrollment) throw new NotFoundError('enrollment not found');
      if (enrollment_id !== undefined && contact_id !== undefined && enrollment!.contact_id !== contact_id) {
        throw new ValidationError("invalid request: enrollment_id names another contact's enrolment");
      }
      const contact = await deps.contactLookup.findById(knex, workspaceId, contact_id ?? enrollment!.contact_id);
      if (!contact) throw new NotFoundError('contact not found');
      const email = step as EmailStep;
      const content = { subject: email.subject, html: email.html, format: email.format, text: email.text ?? null, from_email: email.from_email ?? null, from_name: email.from_name ?? null };
      return messages.preview(workspaceId, contact, content, { variables: enrollment?.context ?? {}, messageType: row.message_type });
    },

    async report(workspaceId: string, id: string): Promise<FlowReport> {
      const row = await load(knex, workspaceId, id);
      const sends = await messages.report(knex, workspaceId, { flow_id: id });
      const enrolments = await store.enrollmentCounts(knex, id);
      const enrolled = Object.values(enrolments).reduce((sum, n) => sum + n, 0);
      return {
        ...sends,
        skipped: row.skipped,
        enrolled,
        completed: enrolments.completed,
        exited: enrolments.exited,
      };
    },
  };
}

export type FlowService = ReturnType<typeof createFlowService>;
