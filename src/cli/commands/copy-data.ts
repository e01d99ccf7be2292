import { Command } from 'commander';
import { copyData, type DataCopyProgress, type DataCopyResult } from '../../domain/data-copy/data-copy.js';
import { startProgress } from '../progress.js';
import { runCommand } from '../run-command.js';
import { table } from '../table.js';
import { plural } from '../plural.js';

function render(result: DataCopyResult): string {
  const rows = table(
    ['table', 'rows'],
    Object.entries(result.tables).map(([name, count]) => [name, String(count)]),
    [1],
  );
  return `${rows}\ncopied ${plural(result.rows, 'row')} in ${plural(Object.keys(result.tables).length, 'table')}; verified (row counts and checksums)`;
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
        // One progress line a phase (copying, then verifying: reading both sides back), each with its own rate.
        let phase: DataCopyProgress['phase'] | null = null;
        let progress = startProgress(false, '');
        const result = await copyData(options.from, options.to, {
          onProgress: (p) => {
            if (p.phase !== phase) {
              if (phase) progress.done(`${phase} done`);
              phase = p.phase;
              progress = startProgress(context.interactive, p.phase);
            }
            progress.update({ rows: p.copiedAll, totalRows: p.totalAll, note: `${p.table} (${p.copied} of ${p.total})` });
          },
        });
        progress.done('copied and verified', { rows: result.rows, totalRows: result.rows });
        return result;
      }, render),
    );
}
