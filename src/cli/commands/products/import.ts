import { Command } from 'commander';
import { shopifyProductsExport } from '../../../domain/shopify/shopify-products-export.js';
import { wooCommerceProductsExport } from '../../../domain/woocommerce/woocommerce-products-export.js';
import { formatOf, readCsvRows, readRecords } from '../../input/record-reader.js';
import { describeRowErrors, runChunked, sortRows, type ChunkOutcome, type ImportRow } from '../../input/run-chunked.js';
import { formatFlag, inputFile, shopDomainFlag, type ExportFormat } from '../../options.js';
import { startProgress } from '../../progress.js';
import { runCommand, withGlobalOptions, type GlobalOptions } from '../../run-command.js';

interface ImportOptions extends GlobalOptions {
  file: string;
  format?: string;
  shopDomain?: string;
  dryRun?: boolean;
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
export function productRows(file: string, shop: { platform: ExportFormat; domain: string } | null): AsyncIterable<ImportRow> {
  if (shop?.platform === 'shopify') return shopifyProductsExport(readCsvRows(file), { shopDomain: shop.domain });
  if (shop?.platform === 'woocommerce') return wooCommerceProductsExport(() => readCsvRows(file), { shopDomain: shop.domain });
  return readRecords(file);
}

export function productsImportCommand(): Command {
  return withGlobalOptions(
    new Command('import')
      .description('upsert catalog products from a CSV or JSON Lines file (platform manual), or from a shop platform\'s product export')
      .requiredOption('--file <path>', 'the .csv or .jsonl file')
      .option('--format <format>', "shopify: Shopify's products export; woocommerce: WooCommerce's product export (with --shop-domain)")
      .option('--shop-domain <domain>', 'the shop the export comes from (with --format): its products are the shop\'s catalog')
      .option('--dry-run', 'write nothing; count what would be inserted, updated and left unchanged'),
  ).action((options: ImportOptions) =>
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
        const progress = startProgress(context.interactive, 'Importing products');
        const summary = await runChunked(productRows(file, shop), {
          chunkSize: 1000,
          handle: async (chunk): Promise<ChunkOutcome> => {
            const { readable, errors, skipped } = sortRows(chunk);
            const records = readable.map((r) => (native ? fromCsv(r.record) : r.record));
            const outcomes = shop
              ? await services.products.upsertForIntegration({ workspaceId: workspace.id, ...shop }, records, { dryRun })
              : await services.products.upsertManual(workspace.id, records, { dryRun });
            const counts = { inserted: 0, updated: 0, unchanged: 0, skipped };
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
          skipped: summary.counts.skipped ?? 0,
          errors: summary.errors.map(({ line, error }) => ({ line, error })),
          dry_run: dryRun,
        };
      },
      (result) => {
        const skipped = result.skipped > 0 ? `${result.skipped} skipped (not published), ` : '';
        return [
          `${result.dry_run ? 'dry run, nothing written: ' : ''}${result.rows} rows: ${result.inserted} inserted, ` +
            `${result.updated} updated, ${result.unchanged} unchanged, ${skipped}${result.errors.length} refused`,
          ...describeRowErrors(result.errors),
        ].join('\n');
      },
    ),
  );
}
