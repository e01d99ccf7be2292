import type { Knex } from 'knex';
import type { Dialect } from '../db/dialect/dialect.js';
import type { ContactLookup } from '../contacts/contact-lookup.js';
import type { Database, Db, Reader } from '../db/database.js';
import { ConflictError, NotFoundError, ValidationError } from '../errors.js';
import { DeferJob, RetryJobLater, type Job, type JobHandlers, type JobQueue } from '../jobs/job-queue.js';
import type { MessageService, PendingMessage } from '../messages/message-service.js';
import { campaignAudience } from '../segments/audience.js';
import type { SenderService } from '../senders/sender-service.js';
import { uuidv7 } from '../shared/ids.js';
import { toPage, type Page, type Paging } from '../shared/paging.js';
import { systemClock, type Clock } from '../shared/time.js';
import { parseInput } from '../shared/validate.js';
import type { ContentFormat, Templates } from '../templates/template-engine.js';
import {
  campaignCreateSchema,
  campaignPreviewSchema,
  campaignSendSchema,
  campaignUpdateSchema,
  type AbTest,
  type Campaign,
  type Variant,
} from './campaign.schema.js';
import { pickWinner, splitKey } from './ab-split.js';
import type { CampaignReport } from './campaign.schema.js';
import { createCampaignStore, type CampaignRow } from './campaign-store.js';

/** Recipients per worker job: small enough that a retried job redoes little, large enough to batch writes. */
export const CAMPAIGN_BATCH_SIZE = 500;

export const CAMPAIGN_JOBS = { start: 'campaign.start', batch: 'campaign.batch', abWinner: 'campaign.ab_winner' } as const;

/**
 * Campaigns (docs/email.md, Campaigns): drafts, then one send, now or at `send_at`. Sending fixes the
 * recipients at once (a queued message per subscribed, unsuppressed contact, in batches), and the worker sends
 * the batches; a process killed mid-send leaves its batch to another, which sends each remaining message once.
 */
export function createCampaignService(deps: {
  knex: Knex;
  reader: Reader;
  writeTransaction: Database['writeTransaction'];
  dialect: Dialect;
  messages: MessageService;
  templates: Templates;
  senders: Pick<SenderService, 'checkFromEmail'>;
  jobs: JobQueue;
  contactLookup: ContactLookup;
  segmentExists: (db: Db, workspaceId: string, segmentId: string) => Promise<boolean>;
  clock?: Clock;
}) {
  const { knex, reader, writeTransaction, messages, templates, jobs, contactLookup, segmentExists } = deps;
  const store = createCampaignStore(deps.dialect);
  const clock = deps.clock ?? systemClock;

  /** Each template must parse and render against sample data within the limits: else a 400 naming its field. */
  const checkTemplates = (fields: { subject?: string | undefined; html?: string | undefined; text?: string | null | undefined; format?: ContentFormat | undefined }) =>
    templates.check({ subject: fields.subject, html: fields.html, text: fields.text, format: fields.format });

  /**
   * An A/B test needs both its variants and its settings (or neither); each variant's templates are checked like
   * the campaign's own, in the campaign's format, a 400 naming `variants[i].subject` / `.html` / `.text`.
   */
  async function checkAbTest(variants: Variant[] | null, abTest: AbTest | null, format: ContentFormat) {
    if ((variants === null) !== (abTest === null)) {
      throw new ValidationError(`invalid request: ${variants === null ? 'variants' : 'ab_test'} is required with ${variants === null ? 'ab_test' : 'variants'}`);
    }
    for (const [i, variant] of (variants ?? []).entries()) await templates.check({ ...variant, format }, `variants[${i}].`);
  }

  /**
   * What a variant's recipients get: its subject, html and text in place of the campaign's. Text written for the
   * campaign's HTML would not match a variant's own, so a variant with html and no text has its text part made
   * from its HTML.
   */
  function contentOf(row: CampaignRow, variant: number | null): CampaignRow {
    const override = variant === null ? undefined : row.variants?.[variant];
    if (!override) return row;
    const text = override.text ?? (override.html === undefined ? row.text : null);
    return { ...row, subject: override.subject ?? row.subject, html: override.html ?? row.html, text };
  }

  /** A campaign's segment must be one of the workspace's (checked in the saving transaction). */
  async function checkSegment(trx: Knex.Transaction, workspaceId: string, segmentId: string | null | undefined) {
    if (segmentId && !(await segmentExists(trx, workspaceId, segmentId))) throw new ValidationError('invalid request: segment_id names no segment');
  }

  async function load(db: Knex | Knex.Transaction, workspaceId: string, id: string, lock = false): Promise<CampaignRow> {
    const row = await store.find(db, workspaceId, id, lock);
    if (!row) throw new NotFoundError();
    return row;
  }

  async function loadDraft(trx: Knex.Transaction, workspaceId: string, id: string): Promise<CampaignRow> {
    const row = await load(trx, workspaceId, id, true);
    if (row.status !== 'draft') throw new ConflictError(`campaign is ${row.status}, not a draft`);
    return row;
  }

  const batchJobs = (campaignId: string, from: number, to: number) =>
    Array.from({ length: Math.max(0, to - from) }, (_, i) => ({ kind: CAMPAIGN_JOBS.batch, payload: { campaignId, batch: from + i } }));

  /** The test group is sent: the winner's job is due when the wait ends (in the caller's transaction). */
  async function endTestIn(trx: Knex.Transaction, row: CampaignRow, abTest: AbTest) {
    const endsAt = clock() + abTest.wait_minutes * 60_000;
    await store.update(trx, row.id, { ab_test_ends_at: endsAt, updated_at: clock() });
    await jobs.enqueue(trx, [{ kind: CAMPAIGN_JOBS.abWinner, payload: { campaignId: row.id }, runAt: endsAt }]);
  }

  /** An A/B campaign's start: its test group (campaigns/ab-split.ts) is queued, each recipient with a variant. */
  async function startTest(trx: Knex.Transaction, row: CampaignRow, abTest: AbTest, variants: number): Promise<{ recipients: number; status: 'testing' }> {
    const now = clock();
    const { recipients, batches } = await messages.queueCampaignTestGroup(trx, {
      campaignId: row.id,
      audience: campaignAudience(trx, row.workspace_id, row.segment_id),
      splitKey: (contactId) => splitKey(row.id, contactId),
      testShare: abTest.test_share,
      variants,
      batchSize: CAMPAIGN_BATCH_SIZE,
      now,
    });
    await store.update(trx, row.id, { status: 'testing', started_at: now, recipients, updated_at: now });
    if (recipients === 0) await endTestIn(trx, row, abTest);
    await jobs.enqueue(trx, batchJobs(row.id, 0, batches));
    return { recipients, status: 'testing' };
  }

  /**
   * The test's end: the winner by the metric over the test group's messages, then (unless everyone was in the test)
   * the winner queued for the rest of the audience as it stands now, leaving out whoever has a message of the
   * campaign. One transaction with the status change: a retried or repeated job finds the campaign no longer
   * `testing` and does nothing.
   */
  async function chooseWinner(trx: Knex.Transaction, row: CampaignRow, abTest: AbTest, variants: number) {
    const now = clock();
    const results = await messages.variantReport(trx, row.workspace_id, row.id, variants);
    const winner = pickWinner(results.map((r) => r[abTest.metric]));
    if (abTest.test_share >= 1) {
      await store.update(trx, row.id, { ab_winner: winner, status: 'sent', sent_at: now, updated_at: now });
      return;
    }
    const firstBatch = Math.ceil((row.recipients ?? 0) / CAMPAIGN_BATCH_SIZE);
    const { recipients, batches } = await messages.queueCampaign(trx, {
      campaignId: row.id,
      recipients: campaignAudience(trx, row.workspace_id, row.segment_id),
      batchSize: CAMPAIGN_BATCH_SIZE,
      now,
      variant: winner,
      firstBatch,
    });
    const rest = batchJobs(row.id, firstBatch, batches);
    const status = rest.length === 0 ? 'sent' : 'sending';
    await store.update(trx, row.id, { ab_winner: winner, status, recipients, updated_at: now, ...(status === 'sent' ? { sent_at: now } : {}) });
    await jobs.enqueue(trx, rest);
  }

  /** A batch's messages, each with its variant's content in place of the campaign's. */
  async function deliverBatch(row: CampaignRow, pending: PendingMessage[]) {
    const groups = new Map<number | null, PendingMessage[]>();
    for (const m of pending) {
      const group = groups.get(m.variant);
      if (group) group.push(m);
      else groups.set(m.variant, [m]);
    }
    let later: RetryJobLater | DeferJob | null = null;
    for (const [variant, group] of groups) {
      try {
        await messages.deliver(row.workspace_id, group, contentOf(row, variant), { settle: (trx, skipped) => store.addSkipped(trx, row.id, skipped) });
      } catch (error) {
        // A variant's mails that must wait do not hold back the others': the job runs again for what is left.
        if (!(error instanceof RetryJobLater || error instanceof DeferJob)) throw error;
        later ??= error;
      }
    }
    if (later) throw later;
  }

  /** Fixes the recipients and hands their batches to the worker, in the caller's transaction. */
  async function start(trx: Knex.Transaction, row: CampaignRow): Promise<{ recipients: number; status: 'testing' | 'sending' | 'sent' }> {
    if (row.variants && row.ab_test) return startTest(trx, row, row.ab_test, row.variants.length);
    const now = clock();
    const { recipients, batches } = await messages.queueCampaign(trx, {
      campaignId: row.id,
      recipients: campaignAudience(trx, row.workspace_id, row.segment_id),
      batchSize: CAMPAIGN_BATCH_SIZE,
      now,
    });
    const status = recipients === 0 ? 'sent' : 'sending';
    await store.update(trx, row.id, { status, started_at: now, recipients, updated_at: now, ...(status === 'sent' ? { sent_at: now } : {}) });
    await jobs.enqueue(trx, batchJobs(row.id, 0, batches));
    return { recipients, status };
  }

  const campaignIdOf = (job: Job) => String(job.payload.campaignId);

  const handlers: JobHandlers = {
    /** A scheduled campaign's time has come. */
    [CAMPAIGN_JOBS.start]: async (job) => {
      await writeTransaction(async (trx) => {
        const row = await store.findById(trx, campaignIdOf(job));
        const locked = row && (await store.find(trx, row.workspace_id, row.id, true));
        if (locked?.status === 'scheduled') await start(trx, locked);
      });
    },

    /** One batch of recipients: whatever of it is not yet sent, then the campaign is sent when none is left. */
    [CAMPAIGN_JOBS.batch]: async (job) => {
      const row = await store.findById(knex, campaignIdOf(job));
      if (!row) return;
      const pending = await messages.pendingInCampaignBatch(knex, row.id, Number(job.payload.batch));
      await deliverBatch(row, pending);
      if (await messages.campaignUnfinished(knex, row.id)) return;
      if (row.status !== 'testing') {
        await store.markSent(knex, row.id, clock());
        return;
      }
      // The last of the test group is out: the test ends after the wait (once, whichever batch gets here first).
      await writeTransaction(async (trx) => {
        const locked = await store.find(trx, row.workspace_id, row.id, true);
        if (locked?.status === 'testing' && locked.ab_test && locked.ab_test_ends_at === null && !(await messages.campaignUnfinished(trx, row.id))) {
          await endTestIn(trx, locked, locked.ab_test);
        }
      });
    },

    /** An A/B test's wait is over: the winner is named and sent to the rest. */
    [CAMPAIGN_JOBS.abWinner]: async (job) => {
      await writeTransaction(async (trx) => {
        const row = await store.findById(trx, campaignIdOf(job));
        const locked = row && (await store.find(trx, row.workspace_id, row.id, true));
        if (locked?.status === 'testing' && locked.ab_test && locked.variants) await chooseWinner(trx, locked, locked.ab_test, locked.variants.length);
      });
    },
  };

  return {
    /** Names by id (the revenue report's rows). */
    names: (db: Db, workspaceId: string, ids: string[]) => store.names(db, workspaceId, ids),

    handlers,

    async create(workspaceId: string, body: unknown): Promise<Campaign> {
      const input = parseInput(campaignCreateSchema, body);
      await checkTemplates(input);
      await checkAbTest(input.variants ?? null, input.ab_test ?? null, input.format ?? 'html');
      await deps.senders.checkFromEmail(workspaceId, input.from_email, 'from_email');
      const now = clock();
      const row: CampaignRow = {
        id: uuidv7(now),
        workspace_id: workspaceId,
        name: input.name,
        subject: input.subject,
        html: input.html,
        format: input.format ?? 'html',
        text: input.text ?? null,
        segment_id: input.segment_id ?? null,
        from_email: input.from_email ?? null,
        from_name: input.from_name ?? null,
        status: 'draft',
        send_at: null,
        started_at: null,
        sent_at: null,
        recipients: null,
        variants: input.variants ?? null,
        ab_test: input.ab_test ?? null,
        ab_winner: null,
        ab_test_ends_at: null,
        skipped: 0,
        created_at: now,
        updated_at: now,
      };
      await writeTransaction(async (trx) => {
        await checkSegment(trx, workspaceId, row.segment_id);
        await store.insert(trx, row);
      });
      return store.toRecord(row);
    },

    async list(workspaceId: string, paging: Paging): Promise<Page<Campaign>> {
      const { rows, total } = await store.list(reader(), workspaceId, paging);
      return toPage(rows.map(store.toRecord), total, paging);
    },

    get: async (workspaceId: string, id: string): Promise<Campaign> => store.toRecord(await load(knex, workspaceId, id)),

    async update(workspaceId: string, id: string, body: unknown): Promise<Campaign> {
      const input = parseInput(campaignUpdateSchema, body);
      // A new format alone is checked against the stored HTML, a new HTML alone against the stored format.
      const stored = input.format !== undefined || input.html !== undefined ? await load(knex, workspaceId, id) : null;
      await checkTemplates({ ...input, html: input.html ?? (input.format !== undefined ? stored?.html : undefined), format: input.format ?? stored?.format });
      await deps.senders.checkFromEmail(workspaceId, input.from_email, 'from_email');
      return writeTransaction(async (trx) => {
        const draft = await loadDraft(trx, workspaceId, id);
        await checkSegment(trx, workspaceId, input.segment_id);
        // A new format is a new language for the variants' html too.
        if (input.variants !== undefined || input.ab_test !== undefined || input.format !== undefined) {
          await checkAbTest(input.variants === undefined ? draft.variants : input.variants, input.ab_test === undefined ? draft.ab_test : input.ab_test, input.format ?? draft.format);
        }
        const patch = Object.fromEntries(Object.entries(input).filter(([, value]) => value !== undefined));
        await store.update(trx, id, { ...patch, updated_at: clock() });
        return store.toRecord(await load(trx, workspaceId, id));
      });
    },

    async delete(workspaceId: string, id: string): Promise<void> {
      await writeTransaction(async (trx) => {
        await loadDraft(trx, workspaceId, id);
        await store.delete(trx, id);
      });
    },

    /** POST /campaigns/{id}/send: `scheduled` until `send_at`, else `sending` with its recipients fixed. */
    async send(workspaceId: string, id: string, body: unknown = {}) {
      const { send_at: sendAt } = parseInput(campaignSendSchema, body ?? {});
      return writeTransaction(async (trx) => {
        const row = await load(trx, workspaceId, id, true);
        if (row.status !== 'draft') throw new ConflictError(`campaign is already ${row.status}`);
        if (sendAt !== undefined && sendAt > clock()) {
          await store.update(trx, id, { status: 'scheduled', send_at: sendAt, updated_at: clock() });
          await jobs.enqueue(trx, [{ kind: CAMPAIGN_JOBS.start, payload: { campaignId: id }, runAt: sendAt }]);
          return { id, status: 'scheduled' as const, recipients: null };
        }
        const { recipients, status } = await start(trx, row);
        return { id, status, recipients };
      });
    },

    async report(workspaceId: string, id: string): Promise<CampaignReport> {
      const row = await load(knex, workspaceId, id);
      const report = { ...(await messages.report(knex, workspaceId, { campaign_id: id })), skipped: row.skipped };
      if (!row.variants) return report;
      const variants = await messages.variantReport(knex, workspaceId, id, row.variants.length);
      return { ...report, variants: variants.map((v) => ({ ...v, winner: v.index === row.ab_winner })) };
    },

    /** POST /campaigns/{id}/preview: the message as this contact would get it (of one variant); nothing is sent or stored. */
    async preview(workspaceId: string, id: string, body: unknown) {
      const { contact_id, variant } = parseInput(campaignPreviewSchema, body);
      const row = await load(knex, workspaceId, id);
      if (variant !== undefined && variant >= (row.variants?.length ?? 0)) {
        throw new ValidationError(`invalid request: variant ${row.variants ? `must be less than ${row.variants.length}` : 'is only for an A/B campaign'}`);
      }
      const contact = await contactLookup.findById(knex, workspaceId, contact_id);
      if (!contact) throw new NotFoundError('contact not found');
      return messages.preview(workspaceId, contact, contentOf(row, variant ?? null));
    },
  };
}

export type CampaignService = ReturnType<typeof createCampaignService>;
