import { Command } from 'commander';
import { rowField } from '../../../domain/shared/validate.js';
import { shopifyCustomersExport } from '../../../domain/shopify/shopify-customers-export.js';
import { importLimitsOption, runBatchFile } from '../../input/batch-file.js';
import { readCsvRows, type ByteMeter } from '../../input/record-reader.js';
import { describeRowErrors } from '../../input/run-chunked.js';
import { formatFlag, inputFile } from '../../options.js';
import { runCommand, withGlobalOptions, type GlobalOptions } from '../../run-command.js';
import { plural } from '../../plural.js';

interface ImportOptions extends GlobalOptions {
  file: string;
  format?: string;
  dryRun?: boolean;
  concurrency: string;
  maxErrors?: string;
}

/** CONTRACT §2: `created` new contacts, `updated` existing ones whose properties changed, refused rows. */
interface ContactImportSummary {
  created: number;
  updated: number;
  errors: Array<{ line: number; email: string | null; error: string }>;
}

/** Contact list import (docs/cli.md, Contact lists): POST /contacts per row, 1000 rows a committed chunk. */
export function contactsImportCommand(): Command {
  return withGlobalOptions(importLimitsOption(
    new Command('import')
      .description('import a contact list from CSV or JSON Lines (idempotent by email; consent status and suppressions)')
      .requiredOption('--file <path>', 'the .csv or .jsonl file')
      .option('--format <format>', "shopify: Shopify's customers export")
      .option('--dry-run', 'write nothing; count what would be created and updated')
      .option('--concurrency <n>', 'chunks in flight', '4'),
  )).action((options: ImportOptions) =>
    runCommand(
      options,
      async (context): Promise<ContactImportSummary> => {
        const format = formatFlag(options.format, ['shopify']);
        const file = inputFile(options.file, format);
        const rows = format === 'shopify' ? (meter: ByteMeter) => shopifyCustomersExport(readCsvRows(file, meter)) : undefined;
        const services = await context.services();
        const workspace = await context.workspace();
        const dryRun = options.dryRun === true;
        const label = dryRun ? 'checking contacts in' : 'importing contacts from';
        const { summary } = await runBatchFile(context, { ...options, label, rows }, async (records) => {
          const result = await services.contacts.importContacts(workspace.id, records, { dryRun });
          return { counts: { created: result.created, updated: result.updated }, errors: result.errors };
        });
        return {
          created: summary.counts.created ?? 0,
          updated: summary.counts.updated ?? 0,
          errors: summary.errors.map(({ line, error, record }) => ({ line, email: rowField(record, 'email'), error })),
        };
      },
      (s) =>
        [
          `${options.dryRun ? 'dry run, nothing written: ' : ''}${plural(s.created, 'contact')} created, ${s.updated} updated, ${plural(s.errors.length, 'row')} refused`,
          ...describeRowErrors(s.errors),
        ].join('\n'),
    ),
  );
}
