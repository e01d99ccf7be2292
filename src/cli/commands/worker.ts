import { Command } from 'commander';
import { UsageError } from '../../domain/errors.js';
import { runDueJobs, startWorker, workerOptionsFor } from '../../worker/worker.js';
import { concurrencyFlag, metricsPortFlag } from '../options.js';
import { runCommand, withGlobalOptions, type GlobalOptions } from '../run-command.js';

interface WorkerCommandOptions extends GlobalOptions {
  once?: boolean;
  concurrency?: string;
  metricsPort?: string;
}

/** Resolves on the first SIGTERM or SIGINT. */
const untilSignalled = () =>
  new Promise<void>((resolve) => {
    const done = () => {
      process.off('SIGTERM', done);
      process.off('SIGINT', done);
      resolve();
    };
    process.once('SIGTERM', done);
    process.once('SIGINT', done);
  });

/** `emk worker [--once]`: background jobs without the HTTP server (docs/worker.md). */
export function workerCommand(): Command {
  return withGlobalOptions(
    new Command('worker')
      .description('run background jobs (campaign sends, scheduled sends, retries); SIGTERM finishes the current job and exits 0')
      .option('--once', 'run every job due now, then exit (for cron and CI)')
      .option('--concurrency <n>', 'jobs run at once by this process (1-64, default 4)')
      .option('--metrics-port <port>', 'serve GET /metrics on this port (at $HOST), as `emk serve` does'),
  ).action((options: WorkerCommandOptions) =>
    runCommand(
      options,
      async (context) => {
        // Listening before the database is opened: a SIGTERM while the worker is still starting ends it cleanly too.
        let signalledEarly = false;
        const signalled = options.once ? null : untilSignalled().then(() => void (signalledEarly = true));
        const metricsPort = options.metricsPort === undefined ? undefined : metricsPortFlag(options.metricsPort);
        if (metricsPort !== undefined && options.once) throw new UsageError('--metrics-port is for a running worker: --once ends before anyone scrapes it');
        const services = await context.services();
        const concurrency = options.concurrency === undefined ? undefined : concurrencyFlag(options.concurrency);
        const workerOptions = workerOptionsFor(services, concurrency === undefined ? {} : { concurrency });
        if (!signalled) return { once: true, ...(await runDueJobs(workerOptions)) };
        if (signalledEarly) return { once: false, stopped: true };
        // Listening first: a port already taken fails the command before any job is claimed.
        // Loaded only when asked for (as `emk serve` loads its server): other commands start without fastify.
        const metrics =
          metricsPort === undefined
            ? undefined
            : await (await import('../../server/metrics/metrics-server.js')).startMetricsServer(services, context.config, metricsPort);
        // Said always, not only to a person: whoever scrapes it (a test) needs the port that `0` became.
        if (metrics) process.stderr.write(`emk worker metrics on ${metrics.address}/metrics\n`);
        const worker = startWorker(workerOptions);
        context.log('emk worker running; Ctrl-C stops it after the jobs in hand');
        await signalled;
        await worker.stop();
        await metrics?.close();
        return { once: false, stopped: true };
      },
      (result) => ('ran' in result ? `ran ${result.ran} job(s), ${result.failed} failed` : 'emk worker stopped'),
    ),
  );
}
