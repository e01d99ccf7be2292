import { Command } from 'commander';
import type { StatusOverview } from '../../domain/status/status-service.js';
import { runCommand, withGlobalOptions, type GlobalOptions } from '../run-command.js';
import { table } from '../table.js';

const LABEL_WIDTH = 14;
const labelled = (label: string, text: string) => `${label.padEnd(LABEL_WIDTH)}${text}`;
const seconds = (value: number) => `${Math.round(value)} s`;

/** The overview as a person reads it: the jobs as a table, then a line each. */
function render(status: StatusOverview): string {
  const jobs = table(
    ['kind', 'ready', 'running', 'failed', 'oldest ready'],
    status.jobs.map((j) => [j.kind, String(j.ready), String(j.running), String(j.failed), j.ready > 0 ? seconds(j.oldest_ready_age_seconds) : '-']),
    [1, 2, 3, 4],
  );
  const [first, ...rest] = jobs.split('\n');
  return [
    labelled('jobs', first!),
    ...rest.map((line) => labelled('', line)),
    labelled('outbox', `${status.outbox.pending} pending, lag ${seconds(status.outbox.lag_seconds)}`),
    labelled('messages', Object.entries(status.messages).map(([state, count]) => `${state} ${count}`).join(', ')),
    ...status.recent.map((r) => labelled(`last ${r.minutes} min`, `${r.events_per_minute} events/min, ${r.messages_per_minute} messages/min`)),
  ].join('\n');
}

/** `emk status [--json]`: the shared queues and the recent rates, from the database (docs/operations.md, Metrics and status). */
export function statusCommand(): Command {
  return withGlobalOptions(
    new Command('status').description('jobs by kind, trigger outbox lag, messages by status and recent rates, from the database'),
  ).action((options: GlobalOptions) => runCommand(options, async (context) => (await context.services()).status.overview(), render));
}
