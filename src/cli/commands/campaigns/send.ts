import { Command } from 'commander';
import type { SendReport } from '../../../domain/shared/send-report.js';
import { startWorker, workerOptionsFor } from '../../../worker/worker.js';
import { namingNotFound } from '../../not-found.js';
import { runCommand, withGlobalOptions, type GlobalOptions } from '../../run-command.js';
import { plural } from '../../plural.js';

interface SendOptions extends GlobalOptions {
  at?: string;
  detach?: boolean;
}

const PROGRESS_EVERY_MS = 500;

/**
 * `emk campaigns send ID [--at TIME]`: the send of POST /campaigns/{id}/send; a send that starts now is then
 * worked through in this process (with any other workers on the database) until every message reached an end,
 * with progress on stderr (an A/B campaign: its test group). `--detach` only starts it and leaves the batches to
 * running workers.
 */
export function campaignsSendCommand(): Command {
  return withGlobalOptions(
    new Command('send')
      .argument('<id>', 'campaign id')
      .description('send a draft campaign now (or at --at) and wait until it is sent')
      .option('--at <time>', 'schedule the send (RFC 3339)')
      .option('--detach', 'start the send and return; running workers send the batches'),
  ).action((id: string, options: SendOptions) =>
    runCommand(
      options,
      async (context) => {
        const services = await context.services();
        const workspace = await context.workspace();
        const body = options.at === undefined ? {} : { send_at: options.at };
        const started = await namingNotFound('campaign', id, () => services.campaigns.send(workspace.id, id, body));
        // An A/B test's group is worked through here too; its winner goes after the wait, from a running worker.
        if ((started.status !== 'sending' && started.status !== 'testing') || options.detach) return { ...started, report: null };
        const worker = startWorker(workerOptionsFor(services));
        let report: SendReport;
        try {
          for (;;) {
            report = await services.campaigns.report(workspace.id, id);
            const done = report.sent + report.failed + report.skipped;
            context.log(`sent ${report.sent}, failed ${report.failed}, skipped ${report.skipped} of ${started.recipients}`);
            if ((await services.campaigns.get(workspace.id, id)).status === 'sent' || done >= (started.recipients ?? 0)) break;
            await new Promise((resolve) => setTimeout(resolve, PROGRESS_EVERY_MS));
          }
        } finally {
          await worker.stop();
        }
        return { ...(await services.campaigns.get(workspace.id, id)), report };
      },
      (result) =>
        result.report === null
          ? `campaign ${result.id} ${result.status}${result.recipients === null ? '' : ` to ${plural(result.recipients, 'recipient')}`}`
          : `campaign ${result.id} ${result.status}: ${result.report.sent} sent, ${result.report.failed} failed, ${result.report.skipped} skipped`,
    ),
  );
}
