import type { Knex } from 'knex';
import { emailKey } from '../shared/keys.js';
import type { Database, Reader } from '../db/database.js';
import { createDomainPacer, createPacedQueue, isTemporaryRefusal, recipientDomain, type DomainPacer } from '../delivery/domain-pacing.js';
import { TemporaryDeliveryError, textFromHtml, type DkimKey, type OutgoingMail, type Transport } from '../delivery/mail.js';
import type { ContactRow } from '../contacts/contact-lookup.js';
import type { Db } from '../db/database.js';
import type { Dialect } from '../db/dialect/dialect.js';
import { mayStillReceive } from '../segments/audience.js';
import { uuidv7 } from '../shared/ids.js';
import { NotFoundError } from '../errors.js';
import { DeferJob, RetryJobLater } from '../jobs/job-queue.js';
import type { SettingsService } from '../settings/settings-service.js';
import type { Settings } from '../settings/settings.schema.js';
import { toPage, type Page, type Paging } from '../shared/paging.js';
import { systemClock, type Clock } from '../shared/time.js';
import { bareAddress, parseInput } from '../shared/validate.js';
import { HARD_BOUNCE } from '../suppressions/suppression.schema.js';
import type { SuppressionService } from '../suppressions/suppression-service.js';
import type { ContentFormat, TemplateVariables, Templates } from '../templates/template-engine.js';
import type { TrackingService } from '../tracking/tracking-service.js';
import type { WorkspaceService } from '../workspaces/workspace-service.js';
import { messageListQuerySchema, type MessageRecord } from './message.schema.js';
import { createMessageStore, type FlowMessageRow, type MessageOutcome, type PendingMessage } from './message-store.js';
import { footerTemplates, renderWithFooter } from './footer.js';
import { createSendReports } from './send-report.js';
import { createCaptureRecorder, createGroupFlusher, createHandOverSlots } from './hand-overs.js';

export type { FlowMessageRow, PendingMessage } from './message-store.js';

/** What one send renders: the campaign's or flow step's template and where it comes from. */
export interface MessageContent {
  subject: string;
  html: string;
  /** How `html` is written: `html` (CSS inlined) or `mjml`; absent is `html` (docs/email.md, Formats). */
  format?: ContentFormat | undefined;
  text: string | null;
  from_email: string | null;
  from_name: string | null;
}

/** What the messages of one send share when they render. */
interface RenderBatch {
  workspace: TemplateVariables['workspace'];
  signer: Awaited<ReturnType<TrackingService['signerFor']>>;
  /** The footer a marketing message gets when a part lacks its unsubscribe link (footer.ts). */
  footer: ReturnType<typeof footerTemplates>;
}

/** The parts of a message a template produced, before delivery. */
interface Rendered {
  message: PendingMessage;
  subject: string;
  html: string;
  text: string | null;
  unsubscribeUrl: string | null;
}

/** A message without a text template has the text part derived from its HTML (as the relay got it). */
const withText = (record: MessageRecord): MessageRecord =>
  record.text === null && record.html !== null ? { ...record, text: textFromHtml(record.html) } : record;

const DEFAULT_FROM = 'no-reply@localhost';
/** The relay's pooled connections when the caller does not say (EMK_SMTP_POOL's default). */
const DEFAULT_IN_FLIGHT = 5;
/** Renders in flight at once: enough to keep every render thread busy while this thread fetches block products. */
const RENDER_PARALLEL = 32;

/** `fn` over `items`, at most `limit` at a time, results in the order of `items`. */
async function mapConcurrently<T, R>(items: T[], limit: number, fn: (item: T) => Promise<R>): Promise<R[]> {
  const results = new Array<R>(items.length);
  let next = 0;
  const lane = async () => {
    for (let i = next++; i < items.length; i = next++) results[i] = await fn(items[i]!);
  };
  await Promise.all(Array.from({ length: Math.min(limit, items.length) }, lane));
  return results;
}

/** The variables every message's template sees about its recipient (docs/email.md, Templates). */
export function contactVariables(contact: PendingMessage['contact']): TemplateVariables['contact'] {
  const p = contact.properties;
  const field = (key: string) => (typeof p[key] === 'string' || typeof p[key] === 'number' ? String(p[key]) : null);
  return { ...p, email: contact.email, first_name: field('first_name'), last_name: field('last_name'), phone: field('phone') };
}

/**
 * Messages: the render → deliver pipeline every campaign batch and flow step goes through, and the message
 * records. A message row exists (unique per campaign × contact or enrolment × step) before anything leaves; a
 * row that reached `captured`, `sent` or `failed` is never delivered again.
 */
export function createMessageService(deps: {
  knex: Knex;
  reader: Reader;
  writeTransaction: Database['writeTransaction'];
  dialect: Dialect;
  templates: Templates;
  transport: Transport;
  /** The DKIM key of the From address's sender domain (the senders noun), or null: mail is sent unsigned. */
  signingKeyFor: (workspaceId: string, fromEmail: string) => Promise<DkimKey | null>;
  tracking: TrackingService;
  suppressions: SuppressionService;
  settings: SettingsService;
  workspaces: WorkspaceService;
  /**
   * What a campaign's or flow's report adds to its messages' counts: engagements, attributed revenue, and the
   * contacts unsubscribed through the messages a query selects (`id`, grouped by `grp`).
   */
  reporting: Omit<Parameters<typeof createSendReports>[0], 'counts' | 'unsubscribed'> & {
    unsubscribeCounts(db: Db, messages: Knex.QueryBuilder): Promise<Map<string, number>>;
    /** Net revenue of the orders credited to an A/B campaign's messages, per variant. */
    revenueByVariant(db: Db, workspaceId: string, campaignId: string): Promise<Map<number, number>>;
  };
  baseUrl: string;
  /**
   * Mails this process hands to the relay at once, across every batch it sends: the relay's pool (EMK_SMTP_POOL),
   * one message per connection. A mail holds its place until its outcome is committed, so a crash re-sends at most
   * this many (docs/email.md, Each mail once).
   */
  inFlight?: number | undefined;
  /** The pace per recipient domain, shared by this process's batches (docs/email.md, Rates). */
  pacer?: DomainPacer;
  clock?: Clock;
}) {
  const { knex, reader, writeTransaction, templates, transport, tracking, suppressions, settings, workspaces } = deps;
  const store = createMessageStore(deps.dialect);
  const report = createSendReports({
    ...deps.reporting,
    counts: store.counts,
    unsubscribed: async (db, workspaceId, of) =>
      (await deps.reporting.unsubscribeCounts(db, store.idsOf(db, workspaceId, of))).get('campaign_id' in of ? of.campaign_id : of.flow_id) ?? 0,
  });
  const clock = deps.clock ?? systemClock;
  const messageIdDomain = new URL(deps.baseUrl).hostname || 'localhost';
  const inFlight = deps.inFlight ?? DEFAULT_IN_FLIGHT;
  const handOvers = createHandOverSlots(inFlight);
  const pacer = deps.pacer ?? createDomainPacer();

  /**
   * Renders one message: personalised subject and body, the footer of marketing mail whose part lacks its
   * unsubscribe link (footer.ts), tracked links, pixel, consent links.
   */
  async function render(
    message: PendingMessage,
    content: MessageContent,
    batch: RenderBatch,
    extra: Partial<TemplateVariables> = {},
  ): Promise<Rendered> {
    const consent = batch.signer.consentUrls(message.contact_id, message.id);
    const marketing = message.message_type === 'marketing';
    const variables: TemplateVariables = { ...extra, workspace: batch.workspace, contact: contactVariables(message.contact), ...consent };
    const context = { workspaceId: message.workspace_id, contactId: message.contact_id };
    const footer = marketing ? batch.footer : null;
    const { subject, html, text } = await renderWithFooter(templates, content, variables, context, footer, consent.unsubscribe_url);
    return {
      message,
      subject,
      html: batch.signer.decorate(message.id, html),
      text,
      unsubscribeUrl: marketing ? consent.unsubscribe_url : null,
    };
  }

  /** What every message of one send (or one preview) shares: the workspace, its link signer and its footer. */
  async function renderBatch(workspaceId: string, content: MessageContent, preview = false): Promise<RenderBatch & { settings: Settings }> {
    const workspace = await workspaces.get(workspaceId);
    // Cached: a batch reads it once from the database; a PATCH in this process is seen at once.
    const current = await settings.cached(workspaceId);
    return {
      settings: current,
      workspace: { name: workspace.name, postal_address: current.postal_address },
      signer: await tracking.signerFor(workspaceId, { preview }),
      footer: footerTemplates(current, content.text !== null),
    };
  }

  return {
    /**
     * Queues a campaign's recipients (`recipients` selects them: the campaign's audience) in batches, once
     * per campaign × contact, inside the caller's transaction.
     */
    queueCampaign: (
      trx: Knex.Transaction,
      args: { campaignId: string; recipients: Knex.QueryBuilder; batchSize: number; now: number; variant?: number | null; firstBatch?: number },
    ) => store.insertCampaignRecipients(trx, args),
    /** Queues an A/B test's group: each recipient with its variant and batch (campaigns/ab-split.ts). */
    queueCampaignTestGroup: (trx: Knex.Transaction, args: Parameters<typeof store.insertCampaignTestGroup>[1]) => store.insertCampaignTestGroup(trx, args),
    /**
     * Each of an A/B campaign's `variants` variants: messages handed over, unique opens, unique clicks and the net
     * revenue of the orders credited to its messages (each order is credited to one message, so once).
     */
    async variantReport(db: Db, workspaceId: string, campaignId: string, variants: number) {
      const counts = await store.variantCounts(db, workspaceId, campaignId);
      const revenue = await deps.reporting.revenueByVariant(db, workspaceId, campaignId);
      return Array.from({ length: variants }, (_, index) => ({
        index,
        ...(counts.get(index) ?? { sent: 0, unique_opens: 0, unique_clicks: 0 }),
        revenue: revenue.get(index) ?? 0,
      }));
    },
    /** A campaign batch's messages that have not reached an end, with their recipients. */
    pendingInCampaignBatch: (db: Db, campaignId: string, batch: number) => store.pendingInBatch(db, campaignId, batch),
    /** Whether any message of the campaign has not reached an end. */
    campaignUnfinished: (db: Db, campaignId: string) => store.campaignUnfinished(db, campaignId),

    /** Flow step messages, one per enrolment × step: a key that exists already adds nothing. */
    queueFlowMessages: (db: Db, rows: FlowMessageRow[], now: number) => store.insertFlowMessages(db, rows, now),
    existingDedupeKeys: (db: Db, keys: string[]) => store.existingDedupeKeys(db, keys),
    pendingByDedupeKeys: (db: Db, keys: string[]) => store.pendingByDedupeKeys(db, keys),
    /** Which of these contacts got a marketing message at or after `since` (smart sending). */
    marketingSentSince: (db: Db, contactIds: string[], since: number) => store.marketingSentSince(db, contactIds, since),

    /** Every workspace's messages by status, and those handed over since a time (the operator's status and metrics). */
    countByStatus: () => store.countByStatus(knex),
    handedOverSince: (since: number) => store.handedOverSince(knex, since),

    /** Delivery, engagement and attributed revenue of a campaign's or flow's messages (their reports). */
    report,
    /** Deliverability counts per campaign and flow of the messages written since `since` (the deliverability report). */
    async deliverability(db: Db, workspaceId: string, since: number) {
      const rows = await store.deliverabilitySince(db, workspaceId, since);
      const unsubscribed = rows.length === 0 ? new Map<string, number>() : await deps.reporting.unsubscribeCounts(db, store.idsSince(db, workspaceId, since));
      return rows.map((row) => ({ ...row, unsubscribed: unsubscribed.get((row.campaign_id ?? row.flow_id)!) ?? 0 }));
    },

    /**
     * Renders and delivers messages of one workspace written earlier as `queued` (or left `sending` by a
     * process that died). Recipients who may no longer get them (suppressed; unsubscribed for marketing) lose
     * their row and count as skipped. A render failure fails that message alone. Temporary relay failures leave
     * their messages `sending` and throw RetryJobLater, so the job runs again for them only.
     */
    async deliver(
      workspaceId: string,
      messages: PendingMessage[],
      content: MessageContent,
      options: {
        /** What one message's templates see beyond the recipient (a flow's trigger: event, order, cart). */
        variablesOf?: (message: PendingMessage) => Partial<TemplateVariables>;
        settle?: (trx: Knex.Transaction, skipped: number) => Promise<void>;
      } = {},
    ): Promise<{ delivered: number; failed: number; skipped: number }> {
      // The address the envelope gets is the one the address rule makes of the row's: a row stored before the rule
      // that a relay would read as another address (`x<victim@example.org>`) is failed here and handed to nobody.
      const outcomes: MessageOutcome[] = [];
      const addressed: PendingMessage[] = [];
      for (const m of messages) {
        const checked = bareAddress(m.to);
        if ('address' in checked) addressed.push({ ...m, to: checked.address });
        else outcomes.push({ id: m.id, status: 'failed', subject: null, html: null, text: null, error: 'invalid address', sent_at: null });
      }
      const suppressed = await suppressions.suppressedKeys(knex, workspaceId, addressed.map((m) => m.to));
      const skipped = addressed.filter((m) => !mayStillReceive(m, suppressed.has(emailKey(m.to))));
      const skippedIds = new Set(skipped.map((m) => m.id));
      const due = addressed.filter((m) => !skippedIds.has(m.id));

      const batch = await renderBatch(workspaceId, content);
      const { sender, domain_rates } = batch.settings;
      // Without a relay, rendering is the hand-over: messages are recorded `captured` while the rest still render.
      const captured = transport.captures ? createCaptureRecorder<MessageOutcome>((group) => writeTransaction((trx) => store.saveOutcomes(trx, group, clock()))) : null;
      // Rendered on the pool's threads, several at once; kept in the batch's order.
      const results = await mapConcurrently(due, RENDER_PARALLEL, (message) =>
        render(message, content, batch, options.variablesOf?.(message)).then(
          (r) => {
            captured?.add({ id: r.message.id, status: 'captured', subject: r.subject, html: r.html, text: r.text, error: null, sent_at: clock() });
            return r;
          },
          (error: unknown) => error instanceof Error ? error : new Error(String(error)),
        ),
      );
      await captured?.finish();
      const rendered: Rendered[] = [];
      for (const [i, result] of results.entries()) {
        if (!(result instanceof Error)) rendered.push(result);
        // A message past a template limit fails alone; the error names the part and the limit, never the template.
        else outcomes.push({ id: due[i]!.id, status: 'failed', subject: null, html: null, text: null, error: `render failed: ${result.message}`, sent_at: null });
      }

      const now = clock();
      const hardBounces: string[] = [];
      /** Mails the relay took (recorded `sent`) or captured, already committed one group at a time. */
      let sent = 0;
      let temporary: TemporaryDeliveryError | null = null;
      let paced: { count: number; afterMs: number | null } = { count: 0, afterMs: null };
      if (captured) {
        sent = rendered.length;
      } else {
        // Rendered content is stored first: a mail handed over again after a crash is this same mail.
        await writeTransaction((trx) =>
          store.saveOutcomes(trx, rendered.map((r) => ({ id: r.message.id, status: 'sending', subject: r.subject, html: r.html, text: r.text, error: null, sent_at: null })), now),
        );
        const from = { email: content.from_email ?? sender.from_email ?? DEFAULT_FROM, name: content.from_name ?? sender.from_name ?? null };
        const dkim = rendered.length > 0 ? await deps.signingKeyFor(workspaceId, from.email) : null;
        // Each mail the relay took is recorded `sent` as its 250 comes back, in a group commit with those that came
        // meanwhile; its slot is given back only then, so a crash re-sends at most `inFlight` mails of this process.
        const recorded = createGroupFlusher<{ id: string; sent_at: number }>((taken) =>
          writeTransaction((trx) => store.markSent(trx, taken, clock())),
        );
        // Each domain at its pace; mails a domain has no room for soon stay `sending` for the job's retry.
        const queue = createPacedQueue(pacer, { workspaceId, rates: domain_rates, domainOf: (r: Rendered) => recipientDomain(r.message.to) });
        for (const r of rendered) queue.add(r);
        const send = async () => {
          for (let r = await queue.next(); r; r = await queue.next()) {
            const mail: OutgoingMail = {
              messageId: r.message.id,
              from,
              to: r.message.to,
              subject: r.subject,
              html: r.html,
              text: r.text,
              listUnsubscribeUrl: r.unsubscribeUrl,
              messageIdDomain,
              dkim,
            };
            const giveBack = await handOvers.take();
            try {
              const result = await transport.deliver(mail);
              if (result.status === 'failed') {
                // A refusal delivers nothing: it is written with its suppression at the end of the batch.
                outcomes.push({ id: r.message.id, subject: r.subject, html: r.html, text: r.text, status: 'failed', error: result.error, sent_at: null });
                hardBounces.push(r.message.to);
              } else {
                await recorded.add({ id: r.message.id, sent_at: clock() });
                sent++;
              }
            } catch (error) {
              if (!(error instanceof TemporaryDeliveryError)) throw error;
              if (isTemporaryRefusal(error)) pacer.refused(recipientDomain(r.message.to));
              temporary ??= error;
            } finally {
              giveBack();
            }
          }
        };
        await Promise.all(Array.from({ length: Math.min(inFlight, rendered.length) }, send));
        paced = queue.setAside;
      }

      await writeTransaction(async (trx) => {
        await store.saveOutcomes(trx, outcomes, clock());
        await store.remove(trx, [...skippedIds]);
        if (hardBounces.length > 0) await suppressions.add(trx, workspaceId, hardBounces, HARD_BOUNCE);
        // The caller's counters move in the same commit as the rows they count.
        await options.settle?.(trx, skipped.length);
      });
      const failed = outcomes.filter((o) => o.status === 'failed').length;
      const result = { delivered: sent + outcomes.length - failed, failed, skipped: skipped.length };
      if (temporary !== null) {
        const { message, retryAfterMs } = temporary as TemporaryDeliveryError;
        throw new RetryJobLater(`temporary delivery failure: ${message}`, Math.min(retryAfterMs ?? 60_000, paced.afterMs ?? Infinity));
      }
      if (paced.afterMs !== null) throw new DeferJob(`${paced.count} messages wait for their domain's rate`, paced.afterMs);
      return result;
    },

    /**
     * A campaign's or flow step's message rendered for one contact, links as written, with nothing sent or
     * stored; `variables` adds what a flow's trigger shows (event, order, cart), `messageType` decides the footer.
     */
    async preview(
      workspaceId: string,
      contact: ContactRow,
      content: MessageContent,
      options: { variables?: Partial<TemplateVariables>; messageType?: PendingMessage['message_type'] } = {},
    ) {
      const message: PendingMessage = {
        id: uuidv7(),
        workspace_id: workspaceId,
        contact_id: contact.id,
        campaign_id: null,
        flow_id: null,
        enrollment_id: null,
        variant: null,
        message_type: options.messageType ?? 'marketing',
        to: contact.email,
        status: 'queued',
        contact: { email: contact.email, properties: contact.properties, subscription_status: contact.subscription_status },
      };
      // Links as written: a preview's message is never stored, so its links must not redirect (no open redirect).
      const r = await render(message, content, await renderBatch(workspaceId, content, true), options.variables);
      return { to: contact.email, subject: r.subject, html: r.html, text: r.text ?? textFromHtml(r.html) };
    },

    async list(workspaceId: string, query: unknown, paging: Paging): Promise<Page<MessageRecord>> {
      const filter = parseInput(messageListQuerySchema, query);
      const { rows, total } = await store.list(reader(), workspaceId, filter, paging);
      return toPage(rows.map(withText), total, paging);
    },

    async get(workspaceId: string, id: string): Promise<MessageRecord> {
      const record = await store.get(knex, workspaceId, id);
      if (!record) throw new NotFoundError();
      return withText(record);
    },
  };
}

export type MessageService = ReturnType<typeof createMessageService>;
