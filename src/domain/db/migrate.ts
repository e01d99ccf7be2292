import type { Knex } from 'knex';
import { migrations, type Migration } from '../../../migrations/index.js';

const migrationSource: Knex.MigrationSource<readonly [string, Migration]> = {
  getMigrations: async () => [...migrations],
  getMigrationName: ([name]) => name,
  getMigration: async ([, migration]) => migration,
};

const RETRY_DELAY_MS = 250;
const MAX_ATTEMPTS = 120;

/**
 * Another process starting at the same moment holds knex's migration lock (or is creating its tables):
 * wait for it instead of failing, then find nothing left to do.
 */
function isConcurrentMigration(error: unknown): boolean {
  const message = error instanceof Error ? `${error.name} ${error.message}` : '';
  return /MigrationLocked|already exists|duplicate key|SQLITE_BUSY/.test(message);
}

/** Applies pending migrations; returns the names applied. Safe to run from several processes at once. */
export async function migrateToLatest(knex: Knex): Promise<string[]> {
  for (let attempt = 1; ; attempt++) {
    try {
      const [, applied] = (await knex.migrate.latest({ migrationSource })) as [number, string[]];
      return applied;
    } catch (error) {
      if (attempt >= MAX_ATTEMPTS || !isConcurrentMigration(error)) throw error;
      await new Promise((resolve) => setTimeout(resolve, RETRY_DELAY_MS));
    }
  }
}

export async function rollbackAll(knex: Knex): Promise<void> {
  await knex.migrate.rollback({ migrationSource }, true);
}

/**
 * Whether the database answers and holds every migration (`GET /readyz`): the names still to apply, or the
 * reason it cannot be asked. Never throws.
 */
export async function readiness(knex: Knex): Promise<{ ready: true } | { ready: false; reason: string }> {
  try {
    const [, pending] = (await knex.migrate.list({ migrationSource })) as [unknown[], Array<readonly [string, Migration]>];
    if (pending.length === 0) return { ready: true };
    return { ready: false, reason: `${pending.length} migrations not applied (run \`npx emk migrate\`)` };
  } catch {
    return { ready: false, reason: 'database unreachable' };
  }
}
