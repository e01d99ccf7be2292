import { createRequire } from 'node:module';
import type nodemailer from 'nodemailer';
import { messageIdHeader, TemporaryDeliveryError, textFromHtml, type DeliveryResult, type OutgoingMail, type Transport } from './mail.js';

const RECIPIENT_COMMANDS = new Set(['RCPT TO', 'DATA']);

/** Connection-level failures: the relay was not reached or dropped us; the mail may go later. */
const TEMPORARY_CODES = new Set(['ECONNECTION', 'ETIMEDOUT', 'ESOCKET', 'EDNS', 'ECONNREFUSED', 'ECONNRESET', 'EPROTOCOL', 'ETLS', 'EAUTH']);

/**
 * Delivery through an SMTP relay with nodemailer: pooled connections and a send rate (relays cap both). A 5xx
 * reply is a permanent rejection (the caller fails the message and suppresses the address); 4xx replies and
 * connection failures are temporary (retried later by the job).
 */
export function createSmtpTransport(options: {
  url: string;
  ratePerSecond: number;
  maxConnections: number;
  /** The envelope sender (MAIL FROM, the Return-Path receivers record) for every mail; unset: the From address. */
  returnPath?: string | undefined;
}): Omit<Transport, 'handOvers'> {
  // Loaded here, not at import: a process that captures (the default) never loads nodemailer.
  const { createTransport } = createRequire(import.meta.url)('nodemailer') as typeof nodemailer;
  const smtp = createTransport({
    url: options.url,
    pool: true,
    maxConnections: options.maxConnections,
    ...(options.ratePerSecond > 0 ? { rateDelta: 1000, rateLimit: options.ratePerSecond } : {}),
    connectionTimeout: 10_000,
    greetingTimeout: 10_000,
    socketTimeout: 60_000,
  } as Parameters<typeof createTransport>[0]);

  return {
    captures: false,
    async deliver(mail: OutgoingMail): Promise<DeliveryResult> {
      try {
        await smtp.sendMail({
          from: mail.from.name ? { name: mail.from.name, address: mail.from.email } : mail.from.email,
          to: mail.to,
          subject: mail.subject,
          html: mail.html,
          text: mail.text ?? textFromHtml(mail.html),
          messageId: messageIdHeader(mail),
          headers: {
            ...(mail.listUnsubscribeUrl ? { 'List-Unsubscribe': `<${mail.listUnsubscribeUrl}>`, 'List-Unsubscribe-Post': 'List-Unsubscribe=One-Click' } : {}),
            // Where Postmark and SendGrid echo the message's id in their bounce and complaint webhooks (relay-webhooks/).
            'X-PM-Metadata-emk_message_id': mail.messageId,
            // Prepared: as written, not MIME-encoded (SendGrid reads the JSON itself).
            'X-SMTPAPI': { prepared: true, value: JSON.stringify({ unique_args: { emk_message_id: mail.messageId } }) },
          },
          // Signed per message with the key of its From's sender domain (nodemailer's DKIM signer, relaxed/relaxed).
          ...(mail.dkim ? { dkim: mail.dkim } : {}),
          ...(options.returnPath ? { envelope: { from: options.returnPath, to: mail.to } } : {}),
        });
        return { status: 'sent' };
      } catch (error) {
        const { responseCode, response, code, message, command } = error as {
          responseCode?: number;
          response?: string;
          code?: string;
          message?: string;
          command?: string;
        };
        // Only a 5xx to RCPT TO or DATA refuses this recipient. A 5xx to the greeting, AUTH or MAIL FROM is about our
        // relay settings or sender and must not suppress the address; 503 only says the session was out of step.
        if (typeof responseCode === 'number' && responseCode >= 500 && responseCode !== 503 && RECIPIENT_COMMANDS.has(command ?? '')) {
          return { status: 'failed', permanent: true, error: `${responseCode} ${(response ?? message ?? '').trim()}`.slice(0, 300) };
        }
        if ((typeof responseCode === 'number' && responseCode >= 400) || (code !== undefined && TEMPORARY_CODES.has(code))) {
          throw new TemporaryDeliveryError(`${responseCode ?? code} ${(response ?? message ?? '').trim()}`.slice(0, 300));
        }
        throw error;
      }
    },
    async close() {
      smtp.close();
    },
  };
}
