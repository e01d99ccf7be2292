import { Command } from 'commander';
import { shopifyOrdersExport } from '../../../domain/shopify/shopify-orders-export.js';
import { readCsvRows, readRecords } from '../../input/record-reader.js';
import { describeRowErrors, runChunked, sortRows, type RowError } from '../../input/run-chunked.js';
import { concurrencyFlag, formatFlag, inputFile } from '../../options.js';
import { startProgress } from '../../progress.js';
import { runCommand, withGlobalOptions, type GlobalOptions } from '../../run-command.js';

interface SyncOrdersOptions extends GlobalOptions {
  file: string;
  format?: string;
  dryRun?: boolean;
  concurrency: string;
}

interface SyncOrdersSummary {
  rows: number;
  inserted: number;
  updated: number;
  skipped: number;
  errors: RowError[];
  dry_run: boolean;
}

/**
 * Historical order sync from a file: the same domain function and counts as
 * POST /api/v1/ecommerce/sync-historical-orders, 1000 orders a chunk, each chunk committed on its own.
 */
export function syncOrdersCommand(): Command {
  return withGlobalOptions(
    new Command('sync-orders')
      .description('historical order sync from CSV or JSON Lines (upsert by external_id; re-running never double counts)')
      .requiredOption('--file <path>', 'orders file (.csv or .jsonl)')
      .option('--format <format>', "shopify: Shopify's orders export (one row per line item)")
      .option('--dry-run', 'write nothing; count what would be inserted, updated and left unchanged')
      .option('--concurrency <n>', 'chunks in flight', '4'),
  ).action((options: SyncOrdersOptions) =>
    runCommand(
      options,
      async (context): Promise<SyncOrdersSummary> => {
        const format = formatFlag(options.format, ['shopify']);
        const file = inputFile(options.file, format);
        const concurrency = concurrencyFlag(options.concurrency);
        const services = await context.services();
        const workspace = await context.workspace();
        const dryRun = options.dryRun === true;
        const progress = startProgress(context.interactive, `syncing orders from ${options.file}`);
        const rows = format === 'shopify' ? shopifyOrdersExport(readCsvRows(file)) : readRecords(file);
        const summary = await runChunked(rows, {
          concurrency,
          handle: async (chunk) => {
            const { readable, errors } = sortRows(chunk);
            const result = await services.orders.sync(workspace.id, { orders: readable.map((r) => r.record) }, { dryRun });
            for (const e of result.errors) errors.push({ line: readable[e.index]!.line, error: e.error });
            return { counts: { inserted: result.inserted, updated: result.updated, skipped: result.skipped }, errors };
          },
          onProgress: (s) =>
            progress.update(`${s.rows} orders: ${s.counts.inserted ?? 0} new, ${s.counts.updated ?? 0} updated, ${s.errors.length} errors`),
        });
        progress.done(`${summary.rows} orders read`);
        return {
          rows: summary.rows,
          inserted: summary.counts.inserted ?? 0,
          updated: summary.counts.updated ?? 0,
          skipped: summary.counts.skipped ?? 0,
          errors: summary.errors,
          dry_run: dryRun,
        };
      },
      (s) =>
        [
          s.dry_run
            ? `dry run, nothing written: of ${s.rows} orders ${s.inserted} would be inserted, ${s.updated} updated, ${s.skipped} left unchanged, ${s.errors.length} rejected`
            : `synced ${s.rows} orders: ${s.inserted} inserted, ${s.updated} updated, ${s.skipped} unchanged, ${s.errors.length} rejected`,
          ...describeRowErrors(s.errors),
        ].join('\n'),
    ),
  );
}
