import type { KeyObject } from 'node:crypto';
import { createRequire } from 'node:module';
import type { convert as Convert } from 'html-to-text';
import type { Observations } from '../shared/observations.js';

/** A message as the relay gets it. */
export interface OutgoingMail {
  /** The message row's id: the Message-ID is made from it, so a mail handed over again is the same mail. */
  messageId: string;
  from: { email: string; name: string | null };
  to: string;
  subject: string;
  html: string;
  /** The text part; derived from the HTML when null. */
  text: string | null;
  /** Marketing mail only: `List-Unsubscribe` and one-click `List-Unsubscribe-Post` (RFC 8058). */
  listUnsubscribeUrl: string | null;
  /** The host part of the Message-ID. */
  messageIdDomain: string;
  /** The sender domain's key (docs/email.md, DKIM): the SMTP transport signs with it. Unset or null: unsigned. */
  dkim?: DkimKey | null;
}

/** A DKIM signing key as nodemailer takes it: `d=` domainName, `s=` keySelector, the parsed private key. */
export interface DkimKey {
  domainName: string;
  keySelector: string;
  privateKey: KeyObject;
}

export type DeliveryResult = { status: 'captured' } | { status: 'sent' } | { status: 'failed'; error: string; permanent: true };

/**
 * Where mail goes (transport.ts picks one: capture, or smtp-transport.ts). Declared here, beside the mail it
 * carries, so the transports and the code that picks them import it from below instead of from each other.
 */
export interface Transport {
  /** True when nothing leaves: messages are kept as `captured`. */
  readonly captures: boolean;
  deliver(mail: OutgoingMail): Promise<DeliveryResult>;
  /** Every hand-over to a relay as it ends: how it ended and how long it took (the server's metrics watch it). */
  readonly handOvers: Observations<HandOver>;
  close(): Promise<void>;
}

/**
 * How a hand-over ended: the relay took the mail, refused the recipient for good (5xx), failed for now (4xx, a
 * connection refused, reset or timed out: the job retries), or failed in a way we do not know.
 */
export type HandOverOutcome = 'sent' | 'rejected' | 'temporary' | 'error';

export interface HandOver {
  outcome: HandOverOutcome;
  seconds: number;
}

/** A failure worth trying again: a 4xx reply, a connection refused, reset or timed out. */
export class TemporaryDeliveryError extends Error {
  constructor(
    message: string,
    readonly retryAfterMs?: number,
  ) {
    super(message);
  }
}

const TEXT_OPTIONS = {
  wordwrap: 78,
  selectors: [
    { selector: 'img', format: 'skip' },
    { selector: 'a', options: { hideLinkHrefIfSameAsText: true } },
  ],
};

// Loaded by the first text part made, not at import: most `emk` commands never make one.
let convert: typeof Convert | null = null;

/** The text alternative of an HTML body: links kept as `text [url]`, images dropped. */
export function textFromHtml(html: string): string {
  convert ??= (createRequire(import.meta.url)('html-to-text') as { convert: typeof Convert }).convert;
  return convert(html, TEXT_OPTIONS);
}

export const messageIdHeader = (mail: Pick<OutgoingMail, 'messageId' | 'messageIdDomain'>) => `<${mail.messageId}@${mail.messageIdDomain}>`;
