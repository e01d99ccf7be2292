/**
 * What each relay's webhook payload says, in one shape: an event with its provider's id (the key that makes a
 * redelivery change nothing more), its kind, the address it is about and how it names the message. The
 * payloads are the relays' documented ones (fixtures/relays/ holds samples); fields emk does not read are left.
 */

export type RelayEventKind = 'hard_bounce' | 'soft_bounce' | 'complaint' | 'delivery';

export interface RelayEvent {
  key: string;
  kind: RelayEventKind;
  email: string | null;
  /** The message: emk's id as the relay echoed it, or the `Message-ID` header. */
  emkMessageId: string | null;
  messageIdHeader: string | null;
}

type Json = Record<string, unknown>;

const asObject = (value: unknown): Json => (value !== null && typeof value === 'object' && !Array.isArray(value) ? (value as Json) : {});
const asString = (value: unknown): string | null => (typeof value === 'string' && value !== '' ? value : typeof value === 'number' ? String(value) : null);
const asArray = (value: unknown): unknown[] => (Array.isArray(value) ? value : []);

/** Amazon SES notifications (the `Message` of an SNS Notification): Bounce, Complaint, Delivery. */
export function sesEvents(snsMessageId: string, message: Json): RelayEvent[] {
  const type = asString(message.notificationType) ?? asString(message.eventType);
  const mail = asObject(message.mail);
  const messageIdHeader = asString(asObject(mail.commonHeaders).messageId);
  const event = (kind: RelayEventKind, recipient: unknown): RelayEvent => {
    const email = asString(typeof recipient === 'string' ? recipient : asObject(recipient).emailAddress);
    return { key: `${snsMessageId}:${email ?? ''}`, kind, email, emkMessageId: null, messageIdHeader };
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

/** A Postmark webhook call: one record (Bounce, SpamComplaint, Delivery); other record types are ignored. */
export function postmarkEvents(record: Json): RelayEvent[] {
  const recordType = asString(record.RecordType);
  const emkMessageId = asString(asObject(record.Metadata).emk_message_id);
  const messageIdHeader = asString(record.MessageID);
  const base = { emkMessageId, messageIdHeader };
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
  return [];
}

/** SendGrid drop reasons that mean a bad address or a complaint; other drops (unsubscribed, duplicate…) change nothing. */
const SENDGRID_DROPPED: Record<string, RelayEventKind> = { 'Bounced Address': 'hard_bounce', Invalid: 'hard_bounce', 'Spam Reporting Address': 'complaint' };

/** SendGrid's Event Webhook: an array of events (bounce, blocked, deferred, dropped, spamreport, delivered). */
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
    const key = asString(e.sg_event_id);
    if (!kind || !key) continue;
    out.push({ key, kind, email: asString(e.email), emkMessageId: asString(e.emk_message_id), messageIdHeader: asString(e['smtp-id']) });
  }
  return out;
}

/** Mailgun: one `event-data` per call; `failed` (permanent or temporary), `complained`, `delivered`. */
export function mailgunEvents(eventData: Json): RelayEvent[] {
  const name = asString(eventData.event);
  const kind: RelayEventKind | null =
    name === 'failed' ? (eventData.severity === 'permanent' ? 'hard_bounce' : 'soft_bounce') : name === 'complained' ? 'complaint' : name === 'delivered' ? 'delivery' : null;
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
