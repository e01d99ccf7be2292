import { Command } from 'commander';
import { describeRowErrors } from '../../input/run-chunked.js';
import { runCommand, withGlobalOptions, type GlobalOptions } from '../../run-command.js';
import { importLimitsOption, lineErrors, runBatchFile } from '../../input/batch-file.js';
import { plural } from '../../plural.js';

interface CorrectOptions extends GlobalOptions {
  file: string;
  upsert?: boolean;
  errors?: string;
  concurrency: string;
  maxErrors?: string;
}

/** `rows` read = `updated` + `inserted` + `skipped` (already correct) + `errors`, unless `interrupted`. */
interface EventCorrectSummary {
  rows: number;
  updated: number;
  inserted: number;
  skipped: number;
  errors: Array<{ line: number; error: string }>;
  interrupted: boolean;
}

/** Batch correction with the semantics of PUT /api/v1/events/batch; re-running it changes nothing. */
export function eventsCorrectCommand(): Command {
  return withGlobalOptions(importLimitsOption(
    new Command('correct')
      .description('correct stored events matched by email + event_name + dedupe_key (PUT /api/v1/events/batch semantics)')
      .requiredOption('--file <path>', 'the .csv or .jsonl file')
      .option('--upsert', 'insert rows that match no stored event')
      .option('--errors <out.csv>', 'write rejected rows (line, email, event_name, error) to this CSV file')
      .option('--concurrency <n>', 'chunks in flight', '4'),
  )).action((options: CorrectOptions) =>
    runCommand(
      options,
      async (context): Promise<EventCorrectSummary> => {
        const services = await context.services();
        const workspace = await context.workspace();
        const { summary, interrupted } = await runBatchFile(context, { ...options, label: 'correcting events from' }, async (records) => {
          const result = await services.events.correctBatch(workspace.id, { events: records, upsert: options.upsert === true });
          const { updated, inserted, skipped } = result;
          return { counts: { updated, inserted, skipped }, errors: result.errors };
        });
        return {
          rows: summary.rows,
          updated: summary.counts.updated ?? 0,
          inserted: summary.counts.inserted ?? 0,
          skipped: summary.counts.skipped ?? 0,
          errors: lineErrors(summary.errors),
          interrupted,
        };
      },
      (s) =>
        [
          `${s.interrupted ? 'interrupted: ' : ''}${plural(s.rows, 'row')}: ${s.updated} corrected, ${s.inserted} inserted, ${s.skipped} already correct, ${s.errors.length} rejected`,
          ...describeRowErrors(s.errors),
        ].join('\n'),
    ),
  );
}
