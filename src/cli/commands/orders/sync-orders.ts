import { Command } from 'commander';
import { shopifyOrdersExport } from '../../../domain/shopify/shopify-orders-export.js';
import { lineErrors, importLimitsOption, runBatchFile } from '../../input/batch-file.js';
import { readCsvRows, readRecords, type ByteMeter } from '../../input/record-reader.js';
import { describeRowErrors, type RowError } from '../../input/run-chunked.js';
import { formatFlag, inputFile } from '../../options.js';
import { runCommand, withGlobalOptions, type GlobalOptions } from '../../run-command.js';
import { plural } from '../../plural.js';

interface SyncOrdersOptions extends GlobalOptions {
  file: string;
  format?: string;
  dryRun?: boolean;
  concurrency: string;
  maxErrors?: string;
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
  return withGlobalOptions(importLimitsOption(
    new Command('sync-orders')
      .description('historical order sync from CSV or JSON Lines (upsert by external_id; re-running never double counts)')
      .requiredOption('--file <path>', 'orders file (.csv or .jsonl)')
      .option('--format <format>', "shopify: Shopify's orders export (one row per line item)")
      .option('--dry-run', 'write nothing; count what would be inserted, updated and left unchanged')
      .option('--concurrency <n>', 'chunks in flight', '4'),
  )).action((options: SyncOrdersOptions) =>
    runCommand(
      options,
      async (context): Promise<SyncOrdersSummary> => {
        const format = formatFlag(options.format, ['shopify']);
        const file = inputFile(options.file, format);
        const services = await context.services();
        const workspace = await context.workspace();
        const dryRun = options.dryRun === true;
        const rows = (meter: ByteMeter) => (format === 'shopify' ? shopifyOrdersExport(readCsvRows(file, meter)) : readRecords(file, meter));
        const label = dryRun ? 'checking orders in' : 'syncing orders from';
        const { summary } = await runBatchFile(context, { ...options, label, rows }, async (records) => {
          const result = await services.orders.sync(workspace.id, { orders: records }, { dryRun, platformExport: format === 'shopify' });
          return { counts: { inserted: result.inserted, updated: result.updated, skipped: result.skipped }, errors: result.errors };
        });
        return {
          rows: summary.rows,
          inserted: summary.counts.inserted ?? 0,
          updated: summary.counts.updated ?? 0,
          skipped: summary.counts.skipped ?? 0,
          errors: lineErrors(summary.errors),
          dry_run: dryRun,
        };
      },
      (s) =>
        [
          s.dry_run
            ? `dry run, nothing written: of ${plural(s.rows, 'order')} ${s.inserted} would be inserted, ${s.updated} updated, ${s.skipped} left unchanged, ${s.errors.length} rejected`
            : `synced ${plural(s.rows, 'order')}: ${s.inserted} inserted, ${s.updated} updated, ${s.skipped} unchanged, ${s.errors.length} rejected`,
          ...describeRowErrors(s.errors),
        ].join('\n'),
    ),
  );
}
