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
  return /MigrationLocked|StaleMigrationBatch|already exists|duplicate key|SQLITE_BUSY/.test(message);
}

/** The batch a process listed before it took the lock was (partly) applied by another process meanwhile. */
class StaleMigrationBatch extends Error {
  override name = 'StaleMigrationBatch';
}

/**
 * Runs once the lock is taken, before the batch. knex lists the pending migrations before it takes the lock, and
 * lists them again under it only when the whole batch runs in one transaction; a batch holding a migration that
 * runs outside one (202612020210) is not listed again, so a process that waited for another would apply what that
 * one applied. Such a batch is given up (knex frees the lock) and listed afresh.
 */
async function checkBatchIsPending(db: Knex, batch: unknown[]): Promise<void> {
  const applied = new Set((await db('knex_migrations').select('name')).map((row: { name: string }) => row.name));
  if ((batch as Array<readonly [string, Migration]>).some(([name]) => applied.has(name))) throw new StaleMigrationBatch('another process applied these migrations meanwhile');
}

/** Applies pending migrations; returns the names applied. Safe to run from several processes at once. */
export async function migrateToLatest(knex: Knex): Promise<string[]> {
  for (let attempt = 1; ; attempt++) {
    try {
      const [, applied] = (await knex.migrate.latest({ migrationSource, beforeAll: checkBatchIsPending })) as [number, string[]];
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
