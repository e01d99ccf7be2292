import { Command } from 'commander';
import { writeCounters } from '../../domain/db/write-batcher.js';
import { startWorker, workerOptionsFor } from '../../worker/worker.js';
import { runCommand, withGlobalOptions, type GlobalOptions } from '../run-command.js';

interface ServeOptions extends GlobalOptions {
  port?: string;
  host?: string;
  worker: boolean;
}

export function serveCommand(): Command {
  return withGlobalOptions(
    new Command('serve')
      .description('run the HTTP server (Collect API, management API, webhook); drains on SIGTERM')
      .option('--port <port>', 'port to listen on, 0 for any free one (default $PORT or 8080)')
      .option('--host <host>', 'address to bind (default $HOST or 0.0.0.0)')
      .option('--no-worker', 'serve the API only; background jobs (sends, retries) are left to `emk worker`'),
  ).action((options: ServeOptions) =>
    runCommand(
      options,
      async (context) => {
        // Loaded here, not at the top: every other command starts without the HTTP server's modules (fastify, routes).
        const { startServer } = await import('../../server/main.js');
        const services = await context.services();
        // The in-process worker yields to this process's saturated request path (docs/worker.md).
        const worker = options.worker
          ? startWorker(workerOptionsFor(services, { yieldTo: () => services.writer.underPressure() }))
          : undefined;
        // A server that cannot listen (its port in use) stops the worker too, so the process exits.
        const server = await startServer(services, context.config, { worker }).catch(async (error: unknown) => {
          await worker?.stop();
          throw error;
        });
        const { host, port } = server.boundTo;
        process.stderr.write(`emk listening on ${server.address} (bound to ${host}:${port})\n`);
        // For operators and the bench: how many writes each group commit carried, and in how many driver calls.
        process.on('SIGUSR2', () => process.stderr.write(`write counters ${JSON.stringify(writeCounters(services.writer, services.db))}\n`));
        if ((await services.workspaces.list()).length === 0) {
          process.stderr.write(
            'no workspace yet: create one with `npx emk init` (it prints the API key and site id), or try a demo shop with data: `npx emk seed`\n',
          );
        }
        await server.stopped;
        return { address: server.address, stopped: true };
      },
      () => 'emk stopped',
      { createsDatabase: true },
    ),
  );
}
