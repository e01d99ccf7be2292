import { createObservations } from '../shared/observations.js';
import { TemporaryDeliveryError, type HandOver, type HandOverOutcome, type Transport } from './mail.js';
import { createSmtpTransport } from './smtp-transport.js';

export interface TransportOptions {
  smtpUrl?: string | undefined;
  ratePerSecond?: number | undefined;
  maxConnections?: number | undefined;
  /** The envelope sender of every mail (bounces go there); unset: the From address. */
  returnPath?: string | undefined;
}

/** Nothing leaves, so nothing is handed over. */
const captureTransport = (): Transport => ({
  captures: true,
  deliver: async () => ({ status: 'captured' }),
  handOvers: createObservations(),
  close: async () => {},
});

/** Where mail goes: captured in the database (no relay configured), or an SMTP relay. */
export function createTransport(options: TransportOptions): Transport {
  if (!options.smtpUrl) return captureTransport();
  return timedHandOvers(
    createSmtpTransport({
      url: options.smtpUrl,
      ratePerSecond: options.ratePerSecond ?? 10,
      maxConnections: options.maxConnections ?? 5,
      returnPath: options.returnPath,
    }),
  );
}

/** A relay whose every hand-over reports how it ended and how long it took (the relay's pool and rate waits included). */
function timedHandOvers(relay: Omit<Transport, 'handOvers'>): Transport {
  const handOvers = createObservations<HandOver>();
  return {
    ...relay,
    handOvers,
    async deliver(mail) {
      const startedAt = performance.now();
      const ended = (outcome: HandOverOutcome) => handOvers.report({ outcome, seconds: (performance.now() - startedAt) / 1000 });
      try {
        const result = await relay.deliver(mail);
        ended(result.status === 'failed' ? 'rejected' : 'sent');
        return result;
      } catch (error) {
        ended(error instanceof TemporaryDeliveryError ? 'temporary' : 'error');
        throw error;
      }
    },
  };
}
