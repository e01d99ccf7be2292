import { Command } from 'commander';
import { startServer } from '../../server/main.js';
import { runCommand, withGlobalOptions, type GlobalOptions } from '../run-command.js';

interface ServeOptions extends GlobalOptions {
  port?: string;
  host?: string;
}

export function serveCommand(): Command {
  return withGlobalOptions(
    new Command('serve')
      .description('run the HTTP server (Collect API, management API, webhook); drains on SIGTERM')
      .option('--port <port>', 'port to listen on (default $PORT or 8080)')
      .option('--host <host>', 'address to bind (default $HOST or 0.0.0.0)'),
  ).action((options: ServeOptions) =>
    runCommand(
      { ...options, port: options.port === undefined ? undefined : Number(options.port) },
      async (context) => {
        const server = await startServer(await context.services(), context.config);
        process.stderr.write(`emk listening on ${server.address}\n`);
        await server.stopped;
        return { address: server.address, stopped: true };
      },
      () => 'emk stopped',
    ),
  );
}
