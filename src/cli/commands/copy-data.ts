import { Command } from 'commander';
import { copyData, type DataCopyResult } from '../../domain/data-copy/data-copy.js';
import { startProgress } from '../progress.js';
import { runCommand } from '../run-command.js';
import { table } from '../table.js';

function render(result: DataCopyResult): string {
  const rows = table(
    ['table', 'rows'],
    Object.entries(result.tables).map(([name, count]) => [name, String(count)]),
    [1],
  );
  return `${rows}\ncopied ${result.rows} rows in ${Object.keys(result.tables).length} tables; verified (row counts and checksums)`;
}

/** `emk copy-data --from URL --to URL [--json]`: every row of one emk database into an empty other (docs/operations.md). */
export function copyDataCommand(): Command {
  return new Command('copy-data')
    .description('copy every table of one emk database into another, empty one (e.g. SQLite to PostgreSQL), then verify it')
    .requiredOption('--from <url>', 'the database copied: sqlite:<path> or postgres://…')
    .requiredOption('--to <url>', 'the empty database copied into (migrated first)')
    .option('--json', 'machine-readable output on stdout')
    .action((options: { from: string; to: string; json?: boolean }) =>
      runCommand({ json: options.json }, async (context) => {
        const progress = startProgress(context.interactive, 'copying');
        const result = await copyData(options.from, options.to, {
          onProgress: (p) => progress.update(`${p.phase} ${p.table}: ${p.copied}/${p.total} rows (${p.copiedAll}/${p.totalAll} in all)`),
        });
        progress.done(`copied ${result.rows} rows`);
        return result;
      }, render),
    );
}
