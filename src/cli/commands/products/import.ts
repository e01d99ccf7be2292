import { Command } from 'commander';
import { formatOf, type InputFormat } from '../../input/record-reader.js';
import { describeRowErrors, runChunked, type ChunkOutcome, type RowError } from '../../input/run-chunked.js';
import { inputFile } from '../../options.js';
import { startProgress } from '../../progress.js';
import { runCommand, withGlobalOptions, type GlobalOptions } from '../../run-command.js';

interface ImportOptions extends GlobalOptions {
  file: string;
}

/**
 * `rows` read from the file = `inserted` (new products) + `updated` (stored products that changed) +
 * `unchanged` (identical to what is stored: nothing written) + `errors` (rows refused, with their line).
 */
export interface ProductImportSummary {
  rows: number;
  inserted: number;
  updated: number;
  unchanged: number;
  errors: Array<{ line: number; error: string }>;
}

/** CSV cells are text: `categories` may also be an `a|b` list (a JSON array is parsed by the reader). */
export function fromCsv(record: Record<string, unknown>): Record<string, unknown> {
  const { categories } = record;
  if (typeof categories !== 'string') return record;
  return { ...record, categories: categories.split('|').map((c) => c.trim()).filter(Boolean) };
}

export function productsImportCommand(): Command {
  return withGlobalOptions(
    new Command('import')
      .description('upsert catalog products from a CSV or JSON Lines file (platform manual)')
      .requiredOption('--file <path>', 'the .csv or .jsonl file'),
  ).action((options: ImportOptions) =>
    runCommand(
      options,
      async (context): Promise<ProductImportSummary> => {
        const format: InputFormat = formatOf(inputFile(options.file));
        const services = await context.services();
        const workspace = await context.workspace();
        const progress = startProgress(context.interactive, 'Importing products');
        const summary = await runChunked(options.file, {
          chunkSize: 1000,
          handle: async (rows): Promise<ChunkOutcome> => {
            const errors: RowError[] = [];
            const readable = rows.flatMap((row) => {
              if ('error' in row) {
                errors.push({ line: row.line, error: row.error });
                return [];
              }
              return [{ line: row.line, record: format === 'csv' ? fromCsv(row.record) : row.record }];
            });
            const outcomes = await services.products.upsertManual(
              workspace.id,
              readable.map((r) => r.record),
            );
            const counts = { inserted: 0, updated: 0, unchanged: 0 };
            outcomes.forEach((outcome, i) => {
              if ('error' in outcome) errors.push({ line: readable[i]!.line, error: outcome.error });
              else counts[outcome.status]++;
            });
            return { counts, errors };
          },
          onProgress: (s) => progress.update(`${s.rows} rows, ${s.errors.length} refused`),
        });
        progress.done(`${summary.rows} rows read`);
        return {
          rows: summary.rows,
          inserted: summary.counts.inserted ?? 0,
          updated: summary.counts.updated ?? 0,
          unchanged: summary.counts.unchanged ?? 0,
          errors: summary.errors.map(({ line, error }) => ({ line, error })),
        };
      },
      (result) =>
        [
          `${result.rows} rows: ${result.inserted} inserted, ${result.updated} updated, ${result.unchanged} unchanged, ${result.errors.length} refused`,
          ...describeRowErrors(result.errors),
        ].join('\n'),
    ),
  );
}

