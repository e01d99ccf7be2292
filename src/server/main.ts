import type { EmkConfig } from '../domain/config.js';
import type { Services } from '../domain/create-services.js';
import { buildApp } from './app.js';
import { DrainGate } from './plugins/drain.js';

export interface RunningServer {
  address: string;
  /** Drains (503 for new requests, in-flight ones finish), closes the listener, flushes writes. */
  stop(): Promise<void>;
}

/** Listens and drains on SIGTERM/SIGINT (CONTRACT §1); resolves `stopped` once everything is closed. */
export async function startServer(
  services: Services,
  config: EmkConfig,
): Promise<RunningServer & { stopped: Promise<void> }> {
  const drain = new DrainGate();
  const app = await buildApp({ services, config, drain });
  const address = await app.listen({ port: config.port, host: config.host });

  let stopping: Promise<void> | null = null;
  const stop = () => {
    stopping ??= (async () => {
      drain.start();
      await drain.idle();
      await app.close();
      await services.close();
    })();
    return stopping;
  };
  let onStopped!: () => void;
  const stopped = new Promise<void>((resolve) => (onStopped = resolve));
  const onSignal = () => void stop().then(onStopped, onStopped);
  process.once('SIGTERM', onSignal);
  process.once('SIGINT', onSignal);
  return {
    address,
    stop: async () => {
      await stop();
      process.off('SIGTERM', onSignal);
      process.off('SIGINT', onSignal);
      onStopped();
    },
    stopped,
  };
}
