import { Command } from 'commander';
import { shopifyProductsExport } from '../../../domain/shopify/shopify-products-export.js';
import { wooCommerceProductsExport } from '../../../domain/woocommerce/woocommerce-products-export.js';
import { formatOf, readCsvRows, readRecords, type ByteMeter } from '../../input/record-reader.js';
import { importLimitsOption, runBatchFile } from '../../input/batch-file.js';
import { describeRowErrors, type ImportRow } from '../../input/run-chunked.js';
import { formatFlag, inputFile, shopDomainFlag, type ExportFormat } from '../../options.js';
import { runCommand, withGlobalOptions, type GlobalOptions } from '../../run-command.js';
import { plural } from '../../plural.js';

interface ImportOptions extends GlobalOptions {
  file: string;
  format?: string;
  shopDomain?: string;
  dryRun?: boolean;
  maxErrors?: string;
}

/**
 * `rows` read from the file (with `--format`: products, each of one or several rows) = `inserted` (new products)
 * + `updated` (stored products that changed) + `unchanged` (identical to what is stored: nothing written) +
 * `skipped` (left out by the export format: drafts) + `errors` (refused, with their line).
 */
export interface ProductImportSummary {
  rows: number;
  inserted: number;
  updated: number;
  unchanged: number;
  skipped: number;
  errors: Array<{ line: number; error: string }>;
  dry_run: boolean;
}

/** CSV cells are text: `categories` may also be an `a|b` list (a JSON array is parsed by the reader). */
export function fromCsv(record: Record<string, unknown>): Record<string, unknown> {
  const { categories } = record;
  if (typeof categories !== 'string') return record;
  return { ...record, categories: categories.split('|').map((c) => c.trim()).filter(Boolean) };
}

/** The file's products: a platform's export (the shop's catalog), or emk's own CSV or JSON Lines (platform manual). */
export function productRows(file: string, shop: { platform: ExportFormat; domain: string } | null, meter?: ByteMeter): AsyncIterable<ImportRow> {
  if (shop?.platform === 'shopify') return shopifyProductsExport(readCsvRows(file, meter), { shopDomain: shop.domain });
  if (shop?.platform === 'woocommerce') return wooCommerceProductsExport(() => readCsvRows(file, meter), { shopDomain: shop.domain });
  return readRecords(file, meter);
}

export function productsImportCommand(): Command {
  return withGlobalOptions(importLimitsOption(
    new Command('import')
      .description('upsert catalog products from a CSV or JSON Lines file (platform manual), or from a shop platform\'s product export')
      .requiredOption('--file <path>', 'the .csv or .jsonl file')
      .option('--format <format>', "shopify: Shopify's products export; woocommerce: WooCommerce's product export (with --shop-domain)")
      .option('--shop-domain <domain>', 'the shop the export comes from (with --format): its products are the shop\'s catalog')
      .option('--dry-run', 'write nothing; count what would be inserted, updated and left unchanged'),
  )).action((options: ImportOptions) =>
    runCommand(
      options,
      async (context): Promise<ProductImportSummary> => {
        const format = formatFlag(options.format, ['shopify', 'woocommerce']);
        const shop = format === null ? null : { platform: format, domain: shopDomainFlag(options.shopDomain, format) };
        const file = inputFile(options.file, format);
        const native = format === null && formatOf(file) === 'csv';
        const dryRun = options.dryRun === true;
        const services = await context.services();
        const workspace = await context.workspace();
        const label = dryRun ? 'checking products in' : 'importing products from';
        const { summary } = await runBatchFile(context, { ...options, label, rows: (meter) => productRows(file, shop, meter) }, async (records) => {
          const products = native ? records.map(fromCsv) : records;
          const outcomes = shop
            ? await services.products.upsertForIntegration({ workspaceId: workspace.id, ...shop }, products, { dryRun })
            : await services.products.upsertManual(workspace.id, products, { dryRun });
          const counts = { inserted: 0, updated: 0, unchanged: 0 };
          const errors: Array<{ index: number; error: string }> = [];
          outcomes.forEach((outcome, index) => {
            if ('error' in outcome) errors.push({ index, error: outcome.error });
            else counts[outcome.status]++;
          });
          return { counts, errors };
        });
        return {
          rows: summary.rows,
          inserted: summary.counts.inserted ?? 0,
          updated: summary.counts.updated ?? 0,
          unchanged: summary.counts.unchanged ?? 0,
          skipped: summary.counts.left_out ?? 0,
          errors: summary.errors.map(({ line, error }) => ({ line, error })),
          dry_run: dryRun,
        };
      },
      (result) => {
        const skipped = result.skipped > 0 ? `${result.skipped} skipped (not published), ` : '';
        return [
          `${result.dry_run ? 'dry run, nothing written: ' : ''}${plural(result.rows, 'row')}: ${result.inserted} inserted, ` +
            `${result.updated} updated, ${result.unchanged} unchanged, ${skipped}${result.errors.length} refused`,
          ...describeRowErrors(result.errors),
        ].join('\n');
      },
    ),
  );
}
