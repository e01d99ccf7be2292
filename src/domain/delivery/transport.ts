import type { Transport } from './mail.js';
import { createSmtpTransport } from './smtp-transport.js';

export interface TransportOptions {
  smtpUrl?: string | undefined;
  ratePerSecond?: number | undefined;
  maxConnections?: number | undefined;
  /** The envelope sender of every mail (bounces go there); unset: the From address. */
  returnPath?: string | undefined;
}

const captureTransport: Transport = {
  captures: true,
  deliver: async () => ({ status: 'captured' }),
  close: async () => {},
};

/** Where mail goes: captured in the database (no relay configured), or an SMTP relay. */
export function createTransport(options: TransportOptions): Transport {
  if (!options.smtpUrl) return captureTransport;
  return createSmtpTransport({
    url: options.smtpUrl,
    ratePerSecond: options.ratePerSecond ?? 10,
    maxConnections: options.maxConnections ?? 5,
    returnPath: options.returnPath,
  });
}
