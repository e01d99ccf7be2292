import type { Knex } from 'knex';

/**
 * `settings.event_retention_days` (docs/operations.md, Retention): events older than so many days are pruned by
 * the worker. Null keeps everything. The pruner reads events by the existing (workspace_id, created_at) index.
 */
export async function up(knex: Knex): Promise<void> {
  await knex.schema.alterTable('workspaces', (t) => {
    t.integer('event_retention_days').nullable();
  });
}

export async function down(knex: Knex): Promise<void> {
  await knex.schema.alterTable('workspaces', (t) => {
    t.dropColumn('event_retention_days');
  });
}
