import type { DeliveryResult, OutgoingMail } from './mail.js';
import { createSmtpTransport } from './smtp-transport.js';

/** Where mail goes: captured in the database (no relay configured), or an SMTP relay. */
export interface Transport {
  /** True when nothing leaves: messages are kept as `captured`. */
  readonly captures: boolean;
  deliver(mail: OutgoingMail): Promise<DeliveryResult>;
  close(): Promise<void>;
}

export interface TransportOptions {
  smtpUrl?: string | undefined;
  ratePerSecond?: number | undefined;
  maxConnections?: number | undefined;
}

const captureTransport: Transport = {
  captures: true,
  deliver: async () => ({ status: 'captured' }),
  close: async () => {},
};

export function createTransport(options: TransportOptions): Transport {
  if (!options.smtpUrl) return captureTransport;
  return createSmtpTransport({ url: options.smtpUrl, ratePerSecond: options.ratePerSecond ?? 10, maxConnections: options.maxConnections ?? 5 });
}
