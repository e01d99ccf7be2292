import type { AddressInfo } from 'node:net';
import type { EmkConfig } from '../domain/config.js';
import type { Services } from '../domain/create-services.js';
import { buildApp } from './app.js';
import { DrainGate } from './plugins/drain.js';

export interface RunningServer {
  /** A URL to reach the server from this machine (`http://localhost:8080` when it listens on every address). */
  address: string;
  /** What it is bound to, as the operating system reports it. */
  boundTo: { host: string; port: number };
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
  await app.listen({ port: config.port, host: config.host });
  const bound = app.server.address() as AddressInfo;
  const boundTo = { host: bound.address, port: bound.port };
  const everyAddress = bound.address === '0.0.0.0' || bound.address === '::';
  const host = everyAddress ? 'localhost' : bound.family === 'IPv6' ? `[${bound.address}]` : bound.address;
  const address = `http://${host}:${bound.port}`;

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
    boundTo,
    stop: async () => {
      await stop();
      process.off('SIGTERM', onSignal);
      process.off('SIGINT', onSignal);
      onStopped();
    },
    stopped,
  };
}
