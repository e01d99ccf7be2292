import { createHash } from 'node:crypto';

/**
 * What each relay's webhook payload says, in one shape: an event with its provider's id (the key that makes a
 * redelivery change nothing more), its kind, the address it is about and how it names the message. The
 * payloads are the relays' documented ones (fixtures/relays/ holds samples); fields emk does not read are left.
 */

/**
 * `unsubscribe`: the recipient left through the relay's own link (or Postmark suppressed the address by hand);
 * `reactivation`: Postmark lifted its suppression of the address.
 */
export type RelayEventKind = 'hard_bounce' | 'soft_bounce' | 'complaint' | 'delivery' | 'unsubscribe' | 'reactivation';

export interface RelayEvent {
  key: string;
  kind: RelayEventKind;
  email: string | null;
  /** The message: emk's id as the relay echoed it, or the `Message-ID` header. */
  emkMessageId: string | null;
  messageIdHeader: string | null;
  /** When the relay says an unsubscribe or reactivation happened (ms); null for other kinds or when it does not say. */
  changedAt: number | null;
}

type Json = Record<string, unknown>;

const asObject = (value: unknown): Json => (value !== null && typeof value === 'object' && !Array.isArray(value) ? (value as Json) : {});
const asString = (value: unknown): string | null => (typeof value === 'string' && value !== '' ? value : typeof value === 'number' ? String(value) : null);
const asArray = (value: unknown): unknown[] => (Array.isArray(value) ? value : []);
/** An ISO 8601 time (Postmark's, with microseconds) in ms; null when absent or unreadable. */
const isoTime = (value: unknown): number | null => {
  const at = typeof value === 'string' ? Date.parse(value) : NaN;
  return Number.isFinite(at) ? at : null;
};
/** Unix seconds (SendGrid's whole, Mailgun's with a fraction) in ms; null when absent. */
const unixSeconds = (value: unknown): number | null => (typeof value === 'number' && Number.isFinite(value) ? Math.round(value * 1000) : null);

/** Amazon SES notifications (the `Message` of an SNS Notification): Bounce, Complaint, Delivery. */
export function sesEvents(snsMessageId: string, message: Json): RelayEvent[] {
  const type = asString(message.notificationType) ?? asString(message.eventType);
  const mail = asObject(message.mail);
  const messageIdHeader = asString(asObject(mail.commonHeaders).messageId);
  const event = (kind: RelayEventKind, recipient: unknown): RelayEvent => {
    const email = asString(typeof recipient === 'string' ? recipient : asObject(recipient).emailAddress);
    return { key: `${snsMessageId}:${email ?? ''}`, kind, email, emkMessageId: null, messageIdHeader, changedAt: null };
  };
  if (type === 'Bounce') {
    const bounce = asObject(message.bounce);
    // `Permanent` only: `Transient` and `Undetermined` may still reach the mailbox later.
    const kind = bounce.bounceType === 'Permanent' ? 'hard_bounce' : 'soft_bounce';
    return asArray(bounce.bouncedRecipients).map((r) => event(kind, r));
  }
  if (type === 'Complaint') return asArray(asObject(message.complaint).complainedRecipients).map((r) => event('complaint', r));
  if (type === 'Delivery') return asArray(asObject(message.delivery).recipients).map((r) => event('delivery', r));
  return [];
}

/** Postmark bounce types that say the address will never take mail; those that may pass are soft. */
const POSTMARK_HARD = new Set(['HardBounce', 'BadEmailAddress', 'ManuallyDeactivated']);
const POSTMARK_SOFT = new Set(['SoftBounce', 'Transient', 'DnsError', 'Blocked']);

/**
 * Postmark's SubscriptionChange reasons: its hard bounces and spam complaints act as its Bounce and SpamComplaint
 * records do; a ManualSuppression is how Postmark records an unsubscribe through its link (and a suppression made
 * by hand in Postmark, which leaves the address as unreachable for marketing).
 */
const POSTMARK_SUPPRESSION = new Map<string, RelayEventKind>([
  ['HardBounce', 'hard_bounce'],
  ['SpamComplaint', 'complaint'],
  ['ManualSuppression', 'unsubscribe'],
]);

/** A Postmark webhook call: one record (Bounce, SpamComplaint, Delivery, SubscriptionChange); other record types are ignored. */
export function postmarkEvents(record: Json): RelayEvent[] {
  const recordType = asString(record.RecordType);
  const emkMessageId = asString(asObject(record.Metadata).emk_message_id);
  const messageIdHeader = asString(record.MessageID);
  const base = { emkMessageId, messageIdHeader, changedAt: null };
  if (recordType === 'Bounce' || recordType === 'SpamComplaint') {
    const type = asString(record.Type);
    const kind: RelayEventKind | null =
      recordType === 'SpamComplaint' || type === 'SpamComplaint' ? 'complaint' : POSTMARK_HARD.has(type ?? '') ? 'hard_bounce' : POSTMARK_SOFT.has(type ?? '') ? 'soft_bounce' : null;
    const id = asString(record.ID);
    return kind && id ? [{ key: `${recordType}:${id}`, kind, email: asString(record.Email), ...base }] : [];
  }
  if (recordType === 'Delivery') {
    const email = asString(record.Recipient);
    return [{ key: `Delivery:${messageIdHeader ?? ''}:${email ?? ''}`, kind: 'delivery', email, ...base }];
  }
  if (recordType === 'SubscriptionChange') {
    // A reactivation (SuppressSending false) names no reason; a suppression of a reason emk does not know is left.
    const suppress = record.SuppressSending;
    const kind = suppress === false ? 'reactivation' : suppress === true ? (POSTMARK_SUPPRESSION.get(asString(record.SuppressionReason) ?? '') ?? null) : null;
    const changedAt = asString(record.ChangedAt);
    if (!kind || changedAt === null) return [];
    // The record has no id of its own: the change is its stream, address, time, direction and reason (hashed,
    // as the address alone may be longer than a key).
    const email = asString(record.Recipient);
    const change = createHash('sha256')
      .update(JSON.stringify([record.MessageStream ?? null, email, changedAt, suppress, record.SuppressionReason ?? null]))
      .digest('base64url');
    return [{ key: `SubscriptionChange:${change}`, kind, email, ...base, changedAt: isoTime(changedAt) }];
  }
  return [];
}

/** SendGrid drop reasons that mean a bad address or a complaint; other drops (unsubscribed, duplicate…) change nothing. */
const SENDGRID_DROPPED: Record<string, RelayEventKind> = { 'Bounced Address': 'hard_bounce', Invalid: 'hard_bounce', 'Spam Reporting Address': 'complaint' };

/**
 * SendGrid's Event Webhook: an array of events (bounce, blocked, deferred, dropped, spamreport, delivered,
 * unsubscribe, group_unsubscribe). `group_resubscribe` is left: a relay's resubscribe never subscribes anyone.
 */
export function sendGridEvents(events: unknown): RelayEvent[] {
  const out: RelayEvent[] = [];
  for (const raw of asArray(events)) {
    const e = asObject(raw);
    const name = asString(e.event);
    // `bounce` with `type: blocked` is a temporary refusal (SendGrid's own classification); `blocked` alike.
    let kind: RelayEventKind | null = null;
    if (name === 'bounce') kind = e.type === 'blocked' ? 'soft_bounce' : 'hard_bounce';
    else if (name === 'blocked' || name === 'deferred') kind = 'soft_bounce';
    else if (name === 'dropped') kind = SENDGRID_DROPPED[asString(e.reason) ?? ''] ?? null;
    else if (name === 'spamreport') kind = 'complaint';
    else if (name === 'delivered') kind = 'delivery';
    // A global unsubscribe and one from an unsubscribe group alike: emk has one marketing consent.
    else if (name === 'unsubscribe' || name === 'group_unsubscribe') kind = 'unsubscribe';
    const key = asString(e.sg_event_id);
    if (!kind || !key) continue;
    out.push({
      key,
      kind,
      email: asString(e.email),
      emkMessageId: asString(e.emk_message_id),
      messageIdHeader: asString(e['smtp-id']),
      changedAt: kind === 'unsubscribe' ? unixSeconds(e.timestamp) : null,
    });
  }
  return out;
}

/** Mailgun events other than `failed` that emk reads. */
const MAILGUN_KINDS = new Map<string, RelayEventKind>([
  ['complained', 'complaint'],
  ['delivered', 'delivery'],
  ['unsubscribed', 'unsubscribe'],
]);

/** Mailgun: one `event-data` per call; `failed` (permanent or temporary), `complained`, `delivered`, `unsubscribed`. */
export function mailgunEvents(eventData: Json): RelayEvent[] {
  const name = asString(eventData.event) ?? '';
  const kind = name === 'failed' ? (eventData.severity === 'permanent' ? 'hard_bounce' : 'soft_bounce') : (MAILGUN_KINDS.get(name) ?? null);
  const key = asString(eventData.id);
  if (!kind || !key) return [];
  const headers = asObject(asObject(eventData.message).headers);
  return [
    {
      key,
      kind,
      email: asString(eventData.recipient),
      emkMessageId: asString(asObject(eventData['user-variables']).emk_message_id),
      messageIdHeader: asString(headers['message-id']),
      changedAt: kind === 'unsubscribe' ? unixSeconds(eventData.timestamp) : null,
    },
  ];
}

/**
 * emk's message id from a `Message-ID` (`<{id}@{host}>`, brackets optional as Mailgun shows it): null when the
 * host is not emk's, so a relay's own id never matches a message.
 */
export function messageIdFromHeader(header: string | null, host: string): string | null {
  if (header === null) return null;
  const bare = header.trim().replace(/^<(.*)>$/, '$1');
  const at = bare.lastIndexOf('@');
  if (at <= 0 || bare.slice(at + 1).toLowerCase() !== host.toLowerCase()) return null;
  return bare.slice(0, at);
}
