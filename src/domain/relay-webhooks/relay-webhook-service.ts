import type { Knex } from 'knex';
import { contactKey, type ContactLookup } from '../contacts/contact-lookup.js';
import type { ContactService } from '../contacts/contact-service.js';
import type { Database } from '../db/database.js';
import { NotFoundError, UnauthorizedError, ValidationError } from '../errors.js';
import type { MessageLookup, RelayReport } from '../messages/message-lookup.js';
import { uuidv7 } from '../shared/ids.js';
import { toPage, type Page } from '../shared/paging.js';
import { systemClock, toIso, type Clock } from '../shared/time.js';
import { parseInput } from '../shared/validate.js';
import { COMPLAINT, HARD_BOUNCE } from '../suppressions/suppression.schema.js';
import type { SuppressionService } from '../suppressions/suppression-service.js';
import { mailgunEvents, messageIdFromHeader, postmarkEvents, sendGridEvents, sesEvents, type RelayEvent, type RelayEventKind } from './relay-events.js';
import {
  createSnsVerifier,
  httpsFetch,
  isSnsUrl,
  mailgunSignatureValid,
  postmarkCredentialValid,
  sendGridSignatureValid,
  type RelayFetch,
} from './relay-signatures.js';
import { createRelayWebhookSchema, type RelayWebhook, type RelayWebhookCreated } from './relay-webhook.schema.js';
import { createRelayWebhookStore, type RelayWebhookRow } from './relay-webhook-store.js';

/** A relay webhook call as the server hands it over: the raw body (signatures are over its bytes) and headers. */
export interface RelayCall {
  body: Buffer;
  headers: Record<string, string | string[] | undefined>;
}

const header = (call: RelayCall, name: string): string | undefined => {
  const value = call.headers[name];
  return Array.isArray(value) ? value[0] : value;
};

const invalidSignature = () => new UnauthorizedError('invalid signature');

/** What an event reports of a message it names (a contact's address is suppressed besides, for bounces and complaints). */
const REPORT: Partial<Record<RelayEventKind, RelayReport>> = { hard_bounce: 'bounced', complaint: 'complained', soft_bounce: 'soft_bounce', delivery: 'delivered' };

/** Kinds that act on an address without a message (delivery and soft bounces only count on one). */
const ADDRESS_KINDS = new Set<RelayEventKind>(['hard_bounce', 'complaint', 'unsubscribe', 'reactivation']);

/** An event resolved to what it acts on: the message (when it names one of the workspace's) and the address. */
interface Target {
  event: RelayEvent;
  messageId: string | null;
  contactId: string | null;
  email: string | null;
}

function parseJson(body: Buffer): unknown {
  try {
    return JSON.parse(body.toString('utf8'));
  } catch {
    throw new ValidationError('invalid request: body is not valid JSON');
  }
}

/**
 * Relay webhooks (docs/api/relay-webhooks.md): bounces, complaints and unsubscribes relays report after the SMTP
 * hand-over. An owner registers an endpoint per relay; each call is authenticated by the relay's own scheme, its
 * events are found a message (by emk's id as echoed, or by Message-ID) or a contact (by address), and act once:
 * a hard bounce suppresses (`hard_bounce`) and marks the message `bounced`; a complaint suppresses (`complaint`),
 * unsubscribes the contact (consent origin `complaint`) and marks it `complained`; an unsubscribe at the relay
 * unsubscribes the contact as emk's own link does (consent origin the provider, at the relay's time); Postmark's
 * reactivation lifts a `hard_bounce` suppression emk made before it and never subscribes anyone; a soft bounce
 * adds one to the message's `soft_bounces`; a delivery sets its `delivered_at`.
 */
export function createRelayWebhookService(deps: {
  knex: Knex;
  writeTransaction: Database['writeTransaction'];
  messages: Pick<MessageLookup, 'findForRelay' | 'markRelayed'>;
  contactLookup: Pick<ContactLookup, 'findByEmails'>;
  contacts: Pick<ContactService, 'changeStatus'>;
  suppressions: Pick<SuppressionService, 'add' | 'liftIf'>;
  baseUrl: string;
  /** How SNS certificates and subscription links are fetched (tests give their own; nothing goes out). */
  fetchText?: RelayFetch;
  clock?: Clock;
}) {
  const { knex, writeTransaction, messages, suppressions } = deps;
  const store = createRelayWebhookStore();
  const clock = deps.clock ?? systemClock;
  const fetchText = deps.fetchText ?? httpsFetch;
  const verifySns = createSnsVerifier(fetchText);
  // The host emk writes into every Message-ID (delivery/mail.ts, messageIdHeader).
  const messageIdHost = new URL(deps.baseUrl).hostname || 'localhost';
  const urlOf = (row: Pick<RelayWebhookRow, 'id' | 'provider'>) => `${deps.baseUrl}/esp/${row.provider}/${row.id}`;

  /** SES through SNS: the signature first, then a subscription to confirm or a notification to read. */
  async function sesCall(webhook: RelayWebhookRow, call: RelayCall): Promise<RelayEvent[]> {
    const message = parseJson(call.body);
    if (!message || typeof message !== 'object' || !(await verifySns(message as Record<string, unknown>))) throw invalidSignature();
    const sns = message as Record<string, string>;
    // A topic of another AWS account cannot post here once the first subscription pinned ours.
    if (webhook.topic_arn !== null && sns.TopicArn !== webhook.topic_arn) throw invalidSignature();
    if (sns.Type === 'SubscriptionConfirmation') {
      await confirmSubscription(webhook, sns.TopicArn!, sns.SubscribeURL!);
      return [];
    }
    if (sns.Type !== 'Notification') return [];
    let notification: unknown;
    try {
      notification = JSON.parse(sns.Message!);
    } catch {
      return [];
    }
    return sesEvents(sns.MessageId!, (notification ?? {}) as Record<string, unknown>);
  }

  /**
   * Confirms an SNS subscription by fetching its SubscribeURL, which must be on an SNS host (an outbound call
   * to nowhere else). A link that fails is kept for the operator (GET /relay-webhooks) to visit by hand.
   */
  async function confirmSubscription(webhook: RelayWebhookRow, topicArn: string, subscribeUrl: string): Promise<void> {
    if (!isSnsUrl(subscribeUrl)) throw new ValidationError('invalid request: SubscribeURL must be an https URL on an sns.<region>.amazonaws.com host');
    let confirmedAt: number | null = null;
    try {
      await fetchText(subscribeUrl);
      confirmedAt = clock();
    } catch {
      // Kept below; SNS resends the confirmation for three days as well.
    }
    await store.recordSubscription(knex, webhook.id, topicArn, subscribeUrl, confirmedAt);
  }

  /** The events of a call whose signature or credential holds. */
  async function eventsOf(webhook: RelayWebhookRow, call: RelayCall): Promise<RelayEvent[]> {
    switch (webhook.provider) {
      case 'ses':
        return sesCall(webhook, call);
      case 'postmark': {
        if (!postmarkCredentialValid(webhook.secret ?? '', header(call, 'authorization'))) throw new UnauthorizedError('invalid credential');
        const body = parseJson(call.body);
        return postmarkEvents((body ?? {}) as Record<string, unknown>);
      }
      case 'sendgrid': {
        const signature = header(call, 'x-twilio-email-event-webhook-signature');
        const timestamp = header(call, 'x-twilio-email-event-webhook-timestamp');
        if (!sendGridSignatureValid(webhook.public_key ?? '', signature, timestamp, call.body)) throw invalidSignature();
        return sendGridEvents(parseJson(call.body));
      }
      case 'mailgun': {
        const body = parseJson(call.body) as Record<string, unknown> | null;
        if (!body || !mailgunSignatureValid(webhook.secret ?? '', body.signature)) throw invalidSignature();
        return mailgunEvents((body['event-data'] ?? {}) as Record<string, unknown>);
      }
    }
  }

  /** What each new event acts on: the workspace's message it names, else the workspace's contact of its address. */
  async function resolve(workspaceId: string, events: RelayEvent[]): Promise<Target[]> {
    const targets: Target[] = [];
    const byAddress: RelayEvent[] = [];
    for (const event of events) {
      const id = event.emkMessageId ?? messageIdFromHeader(event.messageIdHeader, messageIdHost);
      const message = id !== null && id.length <= 36 ? await messages.findForRelay(knex, workspaceId, id) : null;
      if (message) targets.push({ event, messageId: message.id, contactId: message.contact_id, email: message.to });
      else if (event.email !== null && event.email.length <= 320) byAddress.push(event);
    }
    const contacts = await deps.contactLookup.findByEmails(knex, byAddress.map((e) => [workspaceId, e.email!] as const));
    for (const event of byAddress) {
      const contact = contacts.get(contactKey(workspaceId, event.email!));
      if (contact && ADDRESS_KINDS.has(event.kind)) targets.push({ event, messageId: null, contactId: contact.id, email: contact.email });
    }
    return targets;
  }

  return {
    /** POST /api/v1/relay-webhooks. */
    async create(workspaceId: string, body: unknown): Promise<RelayWebhookCreated> {
      const input = parseInput(createRelayWebhookSchema, body);
      const at = clock();
      const row: RelayWebhookRow = {
        id: uuidv7(at),
        workspace_id: workspaceId,
        provider: input.provider,
        secret: input.secret ?? null,
        public_key: input.public_key ?? null,
        topic_arn: null,
        subscribe_url: null,
        confirmed_at: null,
        created_at: at,
      };
      await writeTransaction((trx) => store.insert(trx, row));
      return { id: row.id, provider: row.provider, url: urlOf(row) };
    },

    /** GET /api/v1/relay-webhooks: a workspace has a handful (one page); secrets are never shown. */
    async list(workspaceId: string): Promise<Page<RelayWebhook>> {
      const rows = await store.list(knex, workspaceId);
      const data = rows.map(
        (row): RelayWebhook => ({
          id: row.id,
          provider: row.provider,
          url: urlOf(row),
          created_at: toIso(row.created_at)!,
          topic_arn: row.topic_arn,
          subscribe_url: row.subscribe_url,
          confirmed_at: toIso(row.confirmed_at),
        }),
      );
      return toPage(data, data.length, { page: 1, perPage: Math.max(data.length, 1) });
    },

    /**
     * POST /esp/{provider}/{id}: authenticates the call (401 `invalid signature` / `invalid credential`), then
     * acts on each event not acted on before. `processed` counts the events that acted now.
     */
    async receive(provider: string, id: string, call: RelayCall): Promise<{ processed: number }> {
      const webhook = id.length <= 36 ? await store.find(knex, id) : null;
      if (!webhook || webhook.provider !== provider) throw new NotFoundError();
      const events = await eventsOf(webhook, call);
      const seen = await store.seenKeys(knex, webhook.id, [...new Set(events.map((e) => e.key))]);
      const fresh = [...new Map(events.filter((e) => !seen.has(e.key)).map((e) => [e.key, e])).values()];
      const targets = await resolve(webhook.workspace_id, fresh);
      // A relay's time is kept where it gives one, but never later than emk heard of it.
      const changedAt = (t: Target) => Math.min(t.event.changedAt ?? clock(), clock());
      // The unsubscribe goes first, in the contacts' own transaction: a crash before the rest commits leaves
      // the key unclaimed, so the relay's retry does it all (and finds the contact unsubscribed already).
      for (const t of targets) {
        const origin = t.event.kind === 'complaint' ? 'complaint' : t.event.kind === 'unsubscribe' ? webhook.provider : null;
        if (origin === null || t.contactId === null) continue;
        await deps.contacts.changeStatus(webhook.workspace_id, t.contactId, 'unsubscribed', origin, t.messageId, changedAt(t)).catch((error: unknown) => {
          if (!(error instanceof NotFoundError)) throw error;
        });
      }
      let processed = 0;
      await writeTransaction(async (trx) => {
        processed = 0;
        const now = clock();
        for (const t of targets) {
          if (!(await store.claimKey(trx, webhook.id, t.event.key, now))) continue;
          processed++;
          const { kind } = t.event;
          if (t.email !== null && (kind === 'hard_bounce' || kind === 'complaint')) {
            await suppressions.add(trx, webhook.workspace_id, [t.email], kind === 'complaint' ? COMPLAINT : HARD_BOUNCE, now);
          }
          // The relay says the address takes mail again: a bounce emk learned of after that still holds, and a
          // complaint or an unsubscribe is the recipient's word, which only the recipient changes.
          if (t.email !== null && kind === 'reactivation') await suppressions.liftIf(trx, webhook.workspace_id, t.email, HARD_BOUNCE, changedAt(t));
          const report = REPORT[kind];
          if (t.messageId !== null && report) await messages.markRelayed(trx, t.messageId, report, now);
        }
      });
      return { processed };
    },
  };
}

export type RelayWebhookService = ReturnType<typeof createRelayWebhookService>;

