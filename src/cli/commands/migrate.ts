import { Command } from 'commander';
import { migrateToLatest } from '../../domain/db/migrate.js';
import { runCommand, withGlobalOptions, type GlobalOptions } from '../run-command.js';
import { plural } from '../plural.js';

export function migrateCommand(): Command {
  return withGlobalOptions(new Command('migrate').description('apply pending database migrations')).action(
    (options: GlobalOptions) =>
      runCommand(
        { ...options, migrate: false },
        async (context) => ({ applied: await migrateToLatest((await context.services()).db.knex) }),
        ({ applied }) => (applied.length ? `applied ${plural(applied.length, 'migration')}:\n  ${applied.join('\n  ')}` : 'database is up to date'),
        { createsDatabase: true },
      ),
  );
}
