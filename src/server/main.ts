import type { AddressInfo } from 'node:net';
import type { FastifyInstance } from 'fastify';
import { EmkError } from '../domain/errors.js';
import type { EmkConfig } from '../domain/config.js';
import type { Services } from '../domain/create-services.js';
import { buildApp } from './app.js';
import { DrainGate } from './plugins/drain.js';
import type { RunningWorker } from '../worker/worker.js';

export interface RunningServer {
  /** A URL to reach the server from this machine (`http://localhost:8080` when it listens on every address). */
  address: string;
  /** What it is bound to, as the operating system reports it. */
  boundTo: { host: string; port: number };
  /** Drains (503 for new requests, in-flight ones finish), closes the listener, flushes writes. */
  stop(options?: { graceMs?: number }): Promise<void>;
}

/** The port is another process's: exit 2, as for a wrong flag (docs/cli.md), after closing what was opened. */
export class PortInUseError extends EmkError {
  constructor(port: number) {
    super(`port ${port} is in use`, 'port_in_use', 500, 2);
  }
}

async function listenOn(app: FastifyInstance, config: EmkConfig): Promise<void> {
  try {
    await app.listen({ port: config.port, host: config.host });
  } catch (error) {
    await app.close();
    if ((error as { code?: unknown }).code === 'EADDRINUSE') throw new PortInUseError(config.port);
    throw error;
  }
}

const waitFor = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

/**
 * Listens, and drains on SIGTERM (a deploy) and SIGINT (Ctrl-C); resolves `stopped` once everything is closed.
 * The order makes every request get an answer (docs/operations.md, Draining):
 * 1. from the signal on, new requests are answered 503 `server draining` with Retry-After and
 *    `Connection: close` (so is every reply still in flight): a client knows nothing was stored, and retries;
 * 2. the listener stays open for the grace (`EMK_DRAIN_GRACE_MS`, SIGTERM only): a load balancer takes a few
 *    seconds to stop sending to a pod, and a connection refused before it notices would fail a request;
 * 3. the requests in flight finish; 4. the listener closes, and with it the keep-alive sockets that are idle
 *    (between requests: never one with a request on it); a connection refused from then on is safe, the
 *    client knows nothing was sent; 5. pending writes are flushed and the database closed.
 */
export async function startServer(
  services: Services,
  config: EmkConfig,
  options: { worker?: RunningWorker } = {},
): Promise<RunningServer & { stopped: Promise<void> }> {
  const drain = new DrainGate();
  const app = await buildApp({ services, config, drain });
  await listenOn(app, config);
  const bound = app.server.address() as AddressInfo;
  const boundTo = { host: bound.address, port: bound.port };
  const everyAddress = bound.address === '0.0.0.0' || bound.address === '::';
  const host = everyAddress ? 'localhost' : bound.family === 'IPv6' ? `[${bound.address}]` : bound.address;
  const address = `http://${host}:${bound.port}`;

  let stopping: Promise<void> | null = null;
  const stop = (graceMs: number) => {
    stopping ??= (async () => {
      drain.start();
      // The in-process worker takes no new job from now on and finishes the ones in hand meanwhile.
      const workerStopped = options.worker?.stop();
      if (graceMs > 0) await waitFor(graceMs);
      await drain.idle();
      await app.close();
      await workerStopped;
      await services.close();
    })();
    return stopping;
  };
  let onStopped!: () => void;
  const stopped = new Promise<void>((resolve) => (onStopped = resolve));
  // A deploy (SIGTERM) waits for the load balancer; a person at the terminal (SIGINT) does not.
  const onTerm = () => void stop(config.drainGraceMs).then(onStopped, onStopped);
  const onInterrupt = () => void stop(0).then(onStopped, onStopped);
  process.once('SIGTERM', onTerm);
  process.once('SIGINT', onInterrupt);
  return {
    address,
    boundTo,
    stop: async (options = {}) => {
      await stop(options.graceMs ?? 0);
      process.off('SIGTERM', onTerm);
      process.off('SIGINT', onInterrupt);
      onStopped();
    },
    stopped,
  };
}
