import { Command } from 'commander';
import { backupDatabase, restoreDatabase } from '../../domain/backups/backup.js';
import { runCommand, withGlobalOptions, type GlobalOptions } from '../run-command.js';

/** `emk backup --to FILE [--json]`: a consistent copy of the SQLite database while it is in use (docs/operations.md, Backups). */
export function backupCommand(): Command {
  return withGlobalOptions(new Command('backup').description('write a consistent copy of the SQLite database, even while emk serve writes to it'))
    .requiredOption('--to <file>', 'the new backup file')
    .action((options: GlobalOptions & { to: string }) =>
      runCommand(
        options,
        (context) => backupDatabase(context.config.databaseUrl, options.to),
        (result) => `backed up to ${result.file} (${result.bytes} bytes, integrity ok)`,
      ),
    );
}

/** `emk restore --from FILE [--force]`: a backup in place of the SQLite database, which must not be in use. */
export function restoreCommand(): Command {
  return withGlobalOptions(new Command('restore').description('put a backup file in place of the SQLite database (stop emk first)'))
    .requiredOption('--from <file>', 'the backup file')
    .option('--force', 'replace an existing database')
    .action((options: GlobalOptions & { from: string; force?: boolean }) =>
      runCommand(
        options,
        (context) => restoreDatabase(context.config.databaseUrl, options.from, { force: options.force === true }),
        (result) => `restored ${result.database} from ${result.from}`,
      ),
    );
}
