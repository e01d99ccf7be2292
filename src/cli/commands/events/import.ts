import { Command } from 'commander';
import { describeRowErrors } from '../../input/run-chunked.js';
import { runCommand, withGlobalOptions, type GlobalOptions } from '../../run-command.js';
import { importLimitsOption, lineErrors, runBatchFile } from '../../input/batch-file.js';
import { plural } from '../../plural.js';

interface ImportOptions extends GlobalOptions {
  file: string;
  errors?: string;
  backfill?: boolean;
  concurrency: string;
  maxErrors?: string;
}

/** `rows` read = `processed` + `skipped` (dedupe_key already stored) + `errors`, unless `interrupted`. */
interface EventImportSummary {
  rows: number;
  processed: number;
  skipped: number;
  errors: Array<{ line: number; error: string }>;
  backfill: boolean;
  interrupted: boolean;
}

/** A `dedupe_key` column (CSV or JSON Lines) is the event's `properties.dedupe_key`. */
function foldDedupeKey(record: Record<string, unknown>): Record<string, unknown> {
  const { dedupe_key: dedupeKey, ...rest } = record;
  if (dedupeKey === undefined) return record;
  const properties = rest.properties && typeof rest.properties === 'object' ? (rest.properties as Record<string, unknown>) : {};
  return { ...rest, properties: { dedupe_key: dedupeKey, ...properties } };
}

/** Batch event import with the semantics of POST /api/v1/events/batch, 1000 rows a committed chunk. */
export function eventsImportCommand(): Command {
  return withGlobalOptions(importLimitsOption(
    new Command('import')
      .description('import events of existing contacts from CSV or JSON Lines (POST /api/v1/events/batch semantics)')
      .requiredOption('--file <path>', 'the .csv or .jsonl file')
      .option('--errors <out.csv>', 'write rejected rows (line, email, event_name, error) to this CSV file')
      .option('--backfill', 'store history without firing flow triggers')
      .option('--concurrency <n>', 'chunks in flight', '4'),
  )).action((options: ImportOptions) =>
    runCommand(
      options,
      async (context): Promise<EventImportSummary> => {
        const services = await context.services();
        const workspace = await context.workspace();
        const backfill = options.backfill === true;
        const { summary, interrupted } = await runBatchFile(context, { ...options, label: 'importing events from' }, async (records) => {
          const result = await services.events.recordBatch(
            workspace.id,
            { events: records.map(foldDedupeKey) },
            { fireTriggers: !backfill },
          );
          return { counts: { processed: result.processed, skipped: result.skipped }, errors: result.errors };
        });
        return {
          rows: summary.rows,
          processed: summary.counts.processed ?? 0,
          skipped: summary.counts.skipped ?? 0,
          errors: lineErrors(summary.errors),
          backfill,
          interrupted,
        };
      },
      (s) =>
        [
          `${s.interrupted ? 'interrupted: ' : ''}${plural(s.rows, 'row')}: ${plural(s.processed, 'event')} stored${s.backfill ? ' (backfill, no triggers)' : ''}, ${s.skipped} already stored, ${s.errors.length} rejected`,
          ...describeRowErrors(s.errors),
        ].join('\n'),
    ),
  );
}
