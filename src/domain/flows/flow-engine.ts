import type { Knex } from 'knex';
import type { Dialect } from '../db/dialect/dialect.js';
import type { ContactLookup } from '../contacts/contact-lookup.js';
import type { Database, Db } from '../db/database.js';
import type { Job, JobHandlers, JobQueue, JobToEnqueue } from '../jobs/job-queue.js';
import type { MessageService } from '../messages/message-service.js';
import { chunk } from '../db/bulk.js';
import { uuidv7 } from '../shared/ids.js';
import { systemClock, type Clock } from '../shared/time.js';
import type { FactConsumer } from '../triggers/trigger-dispatcher.js';
import { CART_EVENT_NAMES } from '../events/event-names.js';
import type { OutboxFact, TriggerOutbox } from '../triggers/trigger-outbox.js';
import type { BranchStep, EmailStep, ExitReason, UpdateContactStep, WebhookStep } from './flow.schema.js';
import { createFlowStore, IN_PROGRESS, type EnrollmentRow, type FlowRow, type TriggerContext } from './flow-store.js';
import { compileSteps, remapPosition } from './flow-program.js';
import { VIEWED_PRODUCT, type TriggerContexts } from './trigger-context.js';
import { callWebhook, DEFAULT_WEBHOOK_OPTIONS, type WebhookOptions } from './webhook-client.js';
import { RetryJobLater } from '../jobs/job-queue.js';
import type { ContactService } from '../contacts/contact-service.js';
import type { SegmentConditions } from '../segments/segment.schema.js';
import type { SegmentService } from '../segments/segment-service.js';

export const FLOW_JOBS = { step: 'flow.step', cartCheck: 'flow.cart_check', browseCheck: 'flow.browse_check', webhook: 'flow.webhook' } as const;

/** A webhook step's calls: the first and up to four retries, each after twice the wait before it. */
export const WEBHOOK_ATTEMPTS = 5;

/** Enrolments per step job: a retried job redoes little, and one job renders and delivers a batch of messages. */
export const STEP_BATCH = 100;


const CART_ACTIVITY = { triggerTypes: ['cart' as const], eventNames: CART_EVENT_NAMES };
const ORDERS = { triggerTypes: ['order_placed' as const] };
/** Flows that wait after a fact and end at an order: abandoned carts and browse abandonment. */
const WAITING_TRIGGERS = ['abandoned_cart', 'browse_abandonment'];
const isView = (fact: OutboxFact) => fact.triggerType === 'event' && fact.eventName === VIEWED_PRODUCT;

const isCartActivity = (fact: OutboxFact) => fact.triggerType === 'cart' || (fact.triggerType === 'event' && CART_EVENT_NAMES.includes(fact.eventName ?? ''));

/** Whether a fact starts a flow at once (abandoned carts and browse abandonment wait first: see their checks). */
function starts(flow: FlowRow, fact: OutboxFact): boolean {
  const trigger = flow.trigger;
  switch (trigger.type) {
    case 'event':
      return fact.triggerType === 'event' && fact.eventName === trigger.event_name;
    case 'order_placed':
    case 'order_updated':
      return fact.triggerType === trigger.type;
    case 'shipping_information':
      return fact.triggerType === 'shipping_information' && (trigger.source_filter === 'all' || trigger.source_filter === fact.source);
    case 'segment_entered':
      // Only those who enter after the flow went live.
      return fact.triggerType === 'segment_entered' && fact.subjectId === trigger.segment_id && fact.id > (flow.live_after_fact ?? Infinity);
    case 'abandoned_cart':
    case 'browse_abandonment':
      return false;
  }
}

/** Trigger types whose facts can concern a flow of this type. */
const FLOW_TYPES_OF_FACT: Record<OutboxFact['triggerType'], FlowRow['trigger_type'][]> = {
  event: ['event', 'abandoned_cart', 'browse_abandonment'],
  shipping_information: ['shipping_information'],
  order_placed: ['order_placed'],
  order_updated: ['order_updated'],
  cart: ['abandoned_cart'],
  segment_entered: ['segment_entered'],
  contact_changed: [],
};

interface EnrollmentRequest {
  flow: FlowRow;
  contactId: string;
  fact: OutboxFact;
  dedupeKey: string;
  context: TriggerContext;
}

/**
 * The automation engine (docs/flows.md): turns outbox facts into enrolments and walks each enrolment through
 * its flow's steps as worker jobs. Every move of an enrolment is conditional on the step it was read at, and
 * every email is a message row keyed by enrolment × step, so duplicate jobs, retries and several processes
 * send each step at most once.
 */
export function createFlowEngine(deps: {
  knex: Knex;
  writeTransaction: Database['writeTransaction'];
  dialect: Dialect;
  outbox: TriggerOutbox;
  jobs: JobQueue;
  contexts: TriggerContexts;
  contactLookup: ContactLookup;
  messages: MessageService;
  /** Which contacts meet a flow's filters now (segment conditions, docs/segments.md). */
  segments: Pick<SegmentService, 'matching'>;
  /** The `update_contact` step's writes and the contact a webhook step posts. */
  contacts: Pick<ContactService, 'applyFlowUpdate' | 'get'>;
  webhooks?: WebhookOptions;
  clock?: Clock;
}) {
  const { knex, writeTransaction, outbox, jobs, contexts, contactLookup, messages, segments, contacts } = deps;
  const webhookOptions = deps.webhooks ?? DEFAULT_WEBHOOK_OPTIONS;
  // A flow's filters were checked as segment conditions when it was saved.
  const filters = (db: Db, workspaceId: string, conditions: Record<string, unknown>, contactIds: string[]) =>
    segments.matching(db, workspaceId, conditions as SegmentConditions, contactIds);
  const store = createFlowStore(deps.dialect);
  const clock = deps.clock ?? systemClock;

  /** Step jobs for enrolments (id, step), a job per STEP_BATCH of them: one job sends one batch of messages. */
  const stepJobs = (items: ReadonlyArray<readonly [string, number]>, runAt?: number): JobToEnqueue[] =>
    chunk([...items], STEP_BATCH).map((part) => ({ kind: FLOW_JOBS.step, payload: { enrollments: part }, ...(runAt === undefined ? {} : { runAt }) }));

  /** Step jobs for enrolments due at different times: batched by time (one delay step's enrolments share it). */
  function stepJobsWhenDue(items: Array<{ id: string; current_step: number; next_run_at: number | null }>, now: number): JobToEnqueue[] {
    const byTime = new Map<number, Array<readonly [string, number]>>();
    for (const e of items) {
      const at = Math.max(now, e.next_run_at ?? now);
      const group = byTime.get(at);
      if (group) group.push([e.id, e.current_step]);
      else byTime.set(at, [[e.id, e.current_step]]);
    }
    return [...byTime].flatMap(([at, group]) => stepJobs(group, at));
  }

  /**
   * Requests whose contact meets the flow's filters (flows without filters keep every contact that is not
   * erased: a kept order of an erased contact still records facts).
   */
  async function meetingFilters(db: Db, requests: EnrollmentRequest[]): Promise<EnrollmentRequest[]> {
    const byFlow = new Map<FlowRow, EnrollmentRequest[]>();
    for (const r of requests) {
      const group = byFlow.get(r.flow);
      if (group) group.push(r);
      else byFlow.set(r.flow, [r]);
    }
    const kept: EnrollmentRequest[] = [];
    for (const [flow, group] of byFlow) {
      const ids = [...new Set(group.map((r) => r.contactId))];
      const meeting =
        flow.filters === null
          ? new Set((await contactLookup.findByIds(db, flow.workspace_id, ids)).map((c) => c.id))
          : await filters(db, flow.workspace_id, flow.filters, ids);
      kept.push(...group.filter((r) => meeting.has(r.contactId)));
    }
    return kept;
  }

  /** Enrols (once per dedupe key) and starts each new enrolment's first step, in the caller's transaction. */
  async function enrol(trx: Knex.Transaction, requests: EnrollmentRequest[]): Promise<void> {
    const now = clock();
    const rows: EnrollmentRow[] = (await meetingFilters(trx, requests)).map((r) => ({
      id: uuidv7(now),
      workspace_id: r.flow.workspace_id,
      flow_id: r.flow.id,
      contact_id: r.contactId,
      dedupe_key: r.dedupeKey,
      trigger_fact_id: r.fact.id,
      trigger_event_id: r.fact.subjectId,
      context: r.context,
      status: 'active',
      current_step: 0,
      next_run_at: null,
      exit_reason: null,
      created_at: now,
      updated_at: now,
    }));
    const inserted = await store.insertEnrollments(trx, rows);
    await jobs.enqueue(trx, stepJobs(inserted.map((row) => [row.id, 0] as const)));
  }

  /** `reentry: once` keys on the contact; otherwise each fact (or, for abandoned carts, each cart) enrols. */
  const dedupeKey = (flow: FlowRow, contactId: string, perTrigger: string) =>
    flow.reentry === 'once' ? `f:${flow.id}:c:${contactId}` : `f:${flow.id}:${perTrigger}`;

  /** The outbox consumer: enrolments for every live flow a fact starts, cart waits, abandoned-cart exits. */
  const consumeFacts: FactConsumer = async (trx, facts) => {
    const owned = facts.filter((f): f is OutboxFact & { contactId: string } => f.contactId !== null);
    if (owned.length === 0) return;
    const now = clock();

    // An order ends the abandoned-cart enrolments its contact had before it (started by an earlier fact).
    const orders = owned.filter((f) => f.triggerType === 'order_placed');
    if (orders.length > 0) {
      const lastOrderOf = new Map<string, number>();
      for (const f of orders) lastOrderOf.set(f.contactId, Math.max(f.id, lastOrderOf.get(f.contactId) ?? 0));
      await store.exitCartEnrollmentsBefore(trx, [...new Set(orders.map((f) => f.workspaceId))], lastOrderOf, now);
    }

    const flowTypes = [...new Set(owned.flatMap((f) => FLOW_TYPES_OF_FACT[f.triggerType]))];
    const flows = await store.liveFlows(trx, [...new Set(owned.map((f) => f.workspaceId))], flowTypes);
    if (flows.length === 0) return;

    const starting: Array<{ flow: FlowRow; fact: OutboxFact & { contactId: string } }> = [];
    const cartChecks: JobToEnqueue[] = [];
    for (const fact of owned) {
      for (const flow of flows) {
        if (flow.workspace_id !== fact.workspaceId) continue;
        if (flow.trigger.type === 'abandoned_cart' && isCartActivity(fact)) {
          cartChecks.push({
            kind: FLOW_JOBS.cartCheck,
            payload: { flowId: flow.id, factId: fact.id },
            runAt: fact.at + flow.trigger.delay_minutes * 60_000,
          });
        } else if (flow.trigger.type === 'browse_abandonment' && isView(fact)) {
          cartChecks.push({
            kind: FLOW_JOBS.browseCheck,
            payload: { flowId: flow.id, factId: fact.id },
            runAt: fact.at + flow.trigger.delay_minutes * 60_000,
          });
        } else if (starts(flow, fact)) {
          starting.push({ flow, fact });
        }
      }
    }
    await jobs.enqueue(trx, cartChecks);
    if (starting.length === 0) return;
    const loaded = await contexts.load(trx, [...new Set(starting.map((s) => s.fact))]);
    await enrol(
      trx,
      starting.map(({ flow, fact }) => ({
        flow,
        contactId: fact.contactId,
        fact,
        dedupeKey: dedupeKey(flow, fact.contactId, `t:${fact.id}`),
        context: loaded.get(fact.id) ?? {},
      })),
    );
  };

  /** Enrolments of one flow standing at one step, run together. */
  interface AtStep {
    flow: FlowRow;
    step: number;
    enrollments: EnrollmentRow[];
  }

  /** Those of a group that must leave before an email: an order since the cart, or filters no longer met. */
  async function exitsBeforeEmail({ flow, enrollments }: AtStep): Promise<Map<string, ExitReason>> {
    const exits = new Map<string, ExitReason>();
    if (WAITING_TRIGGERS.includes(flow.trigger.type)) {
      const lastOrder = await outbox.latestFactIds(knex, enrollments.map((e) => e.contact_id), ORDERS.triggerTypes);
      for (const e of enrollments) {
        if (e.trigger_fact_id !== null && (lastOrder.get(e.contact_id) ?? 0) > e.trigger_fact_id) exits.set(e.id, 'order_placed');
      }
    }
    if (flow.filters !== null) {
      const meeting = await filters(knex, flow.workspace_id, flow.filters, [...new Set(enrollments.map((e) => e.contact_id))]);
      for (const e of enrollments) if (!exits.has(e.id) && !meeting.has(e.contact_id)) exits.set(e.id, 'filters');
    }
    return exits;
  }

  /**
   * One email step for a group: each message written once (keyed by enrolment × step), then every one that has
   * not reached an end delivered in one pass, each rendered with its own trigger.
   */
  async function sendEmails({ flow, step, enrollments }: AtStep, content: EmailStep): Promise<void> {
    const keyOf = (e: EnrollmentRow) => `f:${e.id}:${step}`;
    const existing = await messages.existingDedupeKeys(knex, enrollments.map(keyOf));
    const fresh = enrollments.filter((e) => !existing.has(keyOf(e)));
    const now = clock();
    // Smart sending: marketing email only, and only to those who got none within the window.
    const recent =
      flow.message_type === 'marketing' && flow.smart_sending_hours > 0
        ? await messages.marketingSentSince(knex, [...new Set(fresh.map((e) => e.contact_id))], now - flow.smart_sending_hours * 3_600_000)
        : new Set<string>();
    const contacts = new Map((await contactLookup.findByIds(knex, flow.workspace_id, [...new Set(fresh.map((e) => e.contact_id))])).map((c) => [c.id, c]));
    const writing = fresh.filter((e) => !recent.has(e.contact_id) && contacts.has(e.contact_id));
    await writeTransaction(async (trx) => {
      await store.addSkipped(trx, flow.id, fresh.filter((e) => recent.has(e.contact_id)).length);
      await messages.queueFlowMessages(
        trx,
        writing.map((e) => ({
          id: uuidv7(now),
          workspace_id: e.workspace_id,
          contact_id: e.contact_id,
          flow_id: flow.id,
          enrollment_id: e.id,
          dedupe_key: keyOf(e),
          message_type: flow.message_type,
          to_email: contacts.get(e.contact_id)!.email,
        })),
        now,
      );
    });
    const pending = await messages.pendingByDedupeKeys(knex, enrollments.map(keyOf));
    if (pending.length === 0) return;
    const contextOf = new Map(enrollments.map((e) => [e.id, e.context]));
    await messages.deliver(
      flow.workspace_id,
      pending,
      { subject: content.subject, html: content.html, format: content.format, text: content.text ?? null, from_email: content.from_email ?? null, from_name: content.from_name ?? null },
      { variablesOf: (m) => contextOf.get(m.enrollment_id ?? '') ?? {}, settle: (trx, skipped) => store.addSkipped(trx, flow.id, skipped) },
    );
  }

  /** A branch: the enrolments whose contact meets the conditions now take `yes`, the others `no`. */
  async function branch({ flow, step, enrollments }: AtStep, current: BranchStep, yesAt: number, noAt: number): Promise<AtStep[]> {
    const meeting = await filters(knex, flow.workspace_id, current.conditions, [...new Set(enrollments.map((e) => e.contact_id))]);
    const now = clock();
    const yes = enrollments.filter((e) => meeting.has(e.contact_id));
    const no = enrollments.filter((e) => !meeting.has(e.contact_id));
    const movedYes = await store.advance(knex, yes.map((e) => e.id), step, { status: 'active', current_step: yesAt, next_run_at: null, updated_at: now });
    const movedNo = await store.advance(knex, no.map((e) => e.id), step, { status: 'active', current_step: noAt, next_run_at: null, updated_at: now });
    return [
      { flow, step: yesAt, enrollments: yes.filter((e) => movedYes.has(e.id)) },
      { flow, step: noAt, enrollments: no.filter((e) => movedNo.has(e.id)) },
    ];
  }

  /** Properties and status, one contact at a time through the contacts' own rules (a redo changes nothing more). */
  async function updateContacts({ flow, enrollments }: AtStep, current: UpdateContactStep): Promise<void> {
    for (const contactId of new Set(enrollments.map((e) => e.contact_id))) {
      await contacts.applyFlowUpdate(flow.workspace_id, contactId, { properties: current.properties, subscription_status: current.subscription_status }, `flow:${flow.id}`);
    }
  }

  /** Runs a group from its step until a delay, a webhook, an exit, or the end; enrolments that did not move drop out. */
  async function runFrom(group: AtStep): Promise<void> {
    let { step, enrollments } = group;
    const { flow } = group;
    const program = compileSteps(flow.steps);
    const ids = () => enrollments.map((e) => e.id);
    while (step < program.length && enrollments.length > 0) {
      const now = clock();
      const entry = program[step]!;
      const current = entry.step;
      if (current.type === 'delay' && current.minutes > 0) {
        const at = now + current.minutes * 60_000;
        const from = step;
        await writeTransaction(async (trx) => {
          const moved = await store.advance(trx, ids(), from, { status: 'waiting', current_step: entry.next, next_run_at: at, updated_at: now });
          await jobs.enqueue(trx, stepJobs([...moved].map((id) => [id, entry.next] as const), at));
        });
        return;
      }
      if (current.type === 'branch') {
        for (const path of await branch({ flow, step, enrollments }, current, entry.yes!, entry.no!)) await runFrom(path);
        return;
      }
      if (current.type === 'webhook') {
        // One job per enrolment: its retries and its record are its own; the job moves it on when it is done.
        const from = step;
        await writeTransaction(async (trx) => {
          const handed = await store.awaitWebhook(trx, ids(), from, now);
          await jobs.enqueue(
            trx,
            [...handed].map((id) => ({ kind: FLOW_JOBS.webhook, payload: { enrollmentId: id, step: from }, maxAttempts: WEBHOOK_ATTEMPTS })),
          );
        });
        return;
      }
      if (current.type === 'update_contact') await updateContacts({ flow, step, enrollments }, current);
      if (current.type === 'email') {
        const exits = await exitsBeforeEmail({ flow, step, enrollments });
        for (const reason of new Set(exits.values())) {
          const leaving = [...exits].filter(([, r]) => r === reason).map(([id]) => id);
          await store.advance(knex, leaving, step, { status: 'exited', exit_reason: reason, next_run_at: null, updated_at: now });
        }
        enrollments = enrollments.filter((e) => !exits.has(e.id));
        if (enrollments.length > 0) await sendEmails({ flow, step, enrollments }, current);
      }
      const moved = await store.advance(knex, ids(), step, { status: 'active', current_step: entry.next, next_run_at: null, updated_at: clock() });
      enrollments = enrollments.filter((e) => moved.has(e.id));
      step = entry.next;
    }
    if (enrollments.length > 0) await store.advance(knex, ids(), program.length, { status: 'completed', updated_at: clock() });
  }

  /**
   * A webhook step's call for one enrolment (docs/flows.md, Webhook steps): each attempt recorded; a 2xx answer,
   * or the last failure, moves the enrolment on. Retries wait `retryBaseMs` × 2^(attempt − 1).
   */
  async function runWebhook(job: Job): Promise<void> {
    const enrollmentId = String(job.payload.enrollmentId);
    const step = Number(job.payload.step);
    const [enrollment] = await store.findEnrollments(knex, [enrollmentId]);
    if (!enrollment || enrollment.status !== 'waiting' || enrollment.current_step !== step || enrollment.next_run_at !== null) return;
    const flow = await store.findById(knex, enrollment.flow_id);
    if (!flow || flow.deleted_at !== null) return;
    const entry = compileSteps(flow.steps)[step];
    if (flow.status !== 'live' || entry?.step.type !== 'webhook') {
      // Held (the flow is not live) or the step changed: back to the step, run again when the flow runs.
      await writeTransaction(async (trx) => {
        const moved = await store.advance(trx, [enrollmentId], step, { status: 'active', updated_at: clock() });
        if (flow.status === 'live') await jobs.enqueue(trx, stepJobs([...moved].map((id) => [id, step] as const)));
      });
      return;
    }
    const current = entry.step as WebhookStep;
    const contact = await contacts.get(flow.workspace_id, enrollment.contact_id).catch(() => null);
    const body = JSON.stringify({ flow_id: flow.id, enrollment_id: enrollment.id, contact, trigger: { type: flow.trigger.type, ...enrollment.context } });
    const call = { secret: current.secret ?? '', idempotencyKey: `${enrollment.id}:${step}`, headers: current.headers };
    const result = await callWebhook(current.url, body, call, webhookOptions);
    const last = job.attempt >= job.maxAttempts;
    const now = clock();
    await writeTransaction(async (trx) => {
      await store.insertWebhookAttempt(trx, {
        id: uuidv7(now),
        workspace_id: flow.workspace_id,
        flow_id: flow.id,
        enrollment_id: enrollment.id,
        step,
        attempt: job.attempt,
        status_code: result.statusCode,
        error: result.error?.slice(0, 500) ?? null,
        duration_ms: result.durationMs,
        created_at: now,
      });
      if (result.error !== null && !last) return;
      // Done, or out of attempts: the flow goes on either way (the attempts say what happened).
      const moved = await store.advance(trx, [enrollment.id], step, { status: 'active', current_step: entry.next, next_run_at: null, updated_at: now });
      await jobs.enqueue(trx, stepJobs([...moved].map((id) => [id, entry.next] as const)));
    });
    if (result.error !== null && !last) throw new RetryJobLater(`webhook: ${result.error}`, webhookOptions.retryBaseMs * 2 ** (job.attempt - 1));
  }

  /** A step job: its enrolments that are still where the job found them, grouped by flow and step. */
  async function runSteps(job: Job): Promise<void> {
    const wanted = new Map((job.payload.enrollments as Array<[string, number]>).map(([id, step]) => [id, step]));
    const rows = (await store.findEnrollments(knex, [...wanted.keys()])).filter((e) => IN_PROGRESS.includes(e.status) && e.current_step === wanted.get(e.id));
    const flows = new Map((await store.findByIds(knex, [...new Set(rows.map((e) => e.flow_id))])).map((f) => [f.id, f]));
    const now = clock();
    const groups = new Map<string, AtStep>();
    const early: EnrollmentRow[] = [];
    for (const e of rows) {
      const flow = flows.get(e.flow_id);
      // A flow that is not live holds its enrolments where they are; going live again resumes them.
      if (!flow || flow.deleted_at !== null || flow.status !== 'live') continue;
      if (e.next_run_at !== null && e.next_run_at > now) {
        early.push(e);
        continue;
      }
      const key = `${flow.id}:${e.current_step}`;
      const group = groups.get(key) ?? { flow, step: e.current_step, enrollments: [] };
      group.enrollments.push(e);
      groups.set(key, group);
    }
    if (early.length > 0) {
      await writeTransaction((trx) => jobs.enqueue(trx, stepJobsWhenDue(early, now)));
    }
    for (const group of groups.values()) await runFrom(group);
  }

  /**
   * The opening both waits share (browse and cart checks): the flow still live with that trigger, the fact with
   * its contact, and nothing since that ends the wait (cart activity or an order after the fact); null if any fails.
   */
  async function stillWaiting(trx: Knex.Transaction, job: Job, triggerType: 'browse_abandonment' | 'abandoned_cart') {
    const flow = await store.findById(trx, String(job.payload.flowId));
    if (!flow || flow.deleted_at !== null || flow.status !== 'live' || flow.trigger.type !== triggerType) return null;
    const fact = await outbox.find(trx, Number(job.payload.factId));
    if (!fact?.contactId) return null;
    const contactId = fact.contactId;
    if ((await outbox.latestFactId(trx, contactId, { after: fact.id }, CART_ACTIVITY)) !== null) return null;
    if ((await outbox.latestFactId(trx, contactId, { after: fact.id }, ORDERS)) !== null) return null;
    return { flow, fact, contactId };
  }

  const handlers: JobHandlers = {
    [FLOW_JOBS.webhook]: async (job) => {
      try {
        await runWebhook(job);
      } catch (error) {
        // A failure of ours (not the receiver's: those are recorded and move on after the last attempt).
        if (job.attempt >= job.maxAttempts && !(error instanceof RetryJobLater)) await store.fail(knex, [String(job.payload.enrollmentId)], clock());
        throw error;
      }
    },

    /**
     * A browse-abandonment wait is over: enrol unless the contact viewed a product again since (that view has its
     * own wait), added to a cart or ordered. One enrolment per last view; the templates see the products viewed
     * since the contact's last cart activity or order (at most 10, newest first) as `viewed_products`.
     */
    [FLOW_JOBS.browseCheck]: async (job) => {
      await writeTransaction(async (trx) => {
        const waiting = await stillWaiting(trx, job, 'browse_abandonment');
        if (!waiting) return;
        const { flow, fact, contactId } = waiting;
        const factId = fact.id;
        const context = (await contexts.load(trx, [fact])).get(fact.id) ?? {};
        const viewedAt = context.event ? Date.parse(context.event.created_at) : fact.at;
        if (await contexts.viewedSince(trx, fact.workspaceId, contactId, { id: fact.subjectId, at: viewedAt })) return;
        const before = Math.max(
          (await outbox.latestFactId(trx, contactId, { before: factId }, CART_ACTIVITY)) ?? 0,
          (await outbox.latestFactId(trx, contactId, { before: factId }, ORDERS)) ?? 0,
        );
        const since = before > 0 ? ((await outbox.find(trx, before))?.at ?? 0) : 0;
        context.viewed_products = await contexts.viewedProducts(trx, fact.workspaceId, contactId, { after: since, upTo: viewedAt });
        await enrol(trx, [{ flow, contactId, fact, dedupeKey: dedupeKey(flow, contactId, `browse:${factId}`), context }]);
      });
    },

    [FLOW_JOBS.step]: async (job) => {
      try {
        await runSteps(job);
      } catch (error) {
        // Out of attempts: the enrolments are failed for the operator to see; the job keeps the error.
        if (job.attempt >= job.maxAttempts) await store.fail(knex, (job.payload.enrollments as Array<[string, number]>).map(([id]) => id), clock());
        throw error;
      }
    },

    /**
     * An abandoned-cart wait is over: enrol unless the contact's cart moved again since (that later activity
     * has its own wait), the contact ordered, or the cart itself was converted (a completed checkout). One enrolment per cart: the key is the contact's latest cart
     * (or, for carts seen only through events, the basket since the contact's last order).
     */
    [FLOW_JOBS.cartCheck]: async (job) => {
      await writeTransaction(async (trx) => {
        const waiting = await stillWaiting(trx, job, 'abandoned_cart');
        if (!waiting) return;
        const { flow, fact, contactId } = waiting;
        const factId = fact.id;
        if (fact.subjectType === 'cart' && (await contexts.cartConverted(trx, fact.subjectId))) return;
        const lastOrder = await outbox.latestFactId(trx, contactId, { before: factId }, ORDERS);
        const context = (await contexts.load(trx, [fact])).get(fact.id) ?? {};
        context.cart ??= await contexts.latestCart(trx, contactId);
        const cartId = fact.subjectType === 'cart' ? fact.subjectId : 'events';
        await enrol(trx, [{ flow, contactId, fact, dedupeKey: dedupeKey(flow, contactId, `cart:${lastOrder ?? 0}:${cartId}`), context }]);
      });
    },
  };

  return {
    consumeFacts,
    handlers,

    /** The oldest trigger fact a waiting job will read (a cart check reads its cart fact and those after it). */
    async oldestFactInUse(): Promise<number | null> {
      const ids = [await jobs.smallestInPayload(FLOW_JOBS.cartCheck, 'factId'), await jobs.smallestInPayload(FLOW_JOBS.browseCheck, 'factId')].filter((id): id is number => id !== null);
      return ids.length === 0 ? null : Math.min(...ids);
    },

    /**
     * A flow's steps were edited: each enrolment in progress moves to its step's new position (the same path in
     * the new steps, docs/flows.md), and those that moved get a step job there.
     */
    async remap(trx: Knex.Transaction, flow: FlowRow, before: FlowRow['steps'], after: FlowRow['steps']): Promise<void> {
      const from = compileSteps(before);
      const to = compileSteps(after);
      const moves = new Map<number, number>();
      for (const position of await store.positionsInUse(trx, flow.id)) {
        const target = remapPosition(from, to, position);
        if (target !== position) moves.set(position, target);
      }
      await store.movePositions(trx, flow.id, moves, clock());
      if (moves.size === 0 || flow.status !== 'live') return;
      const moved = (await store.inProgress(trx, flow.id)).filter((e) => [...moves.values()].includes(e.current_step));
      await jobs.enqueue(trx, stepJobsWhenDue(moved, clock()));
    },

    /** A flow went live again: its held enrolments continue (each from its step, when its wait is over). */
    async resume(trx: Knex.Transaction, flowId: string): Promise<void> {
      await jobs.enqueue(trx, stepJobsWhenDue(await store.inProgress(trx, flowId), clock()));
    },
  };
}

export type FlowEngine = ReturnType<typeof createFlowEngine>;
