import type { Knex } from 'knex';

/** Webhook duplicate protection: one row per (workspace, event_type, external_id) ever applied. */
export async function up(knex: Knex): Promise<void> {
  await knex.schema.createTable('webhook_deliveries', (t) => {
    t.string('workspace_id', 36).notNullable().references('id').inTable('workspaces').onDelete('CASCADE');
    t.string('event_type', 255).notNullable();
    t.string('external_id', 255).notNullable();
    t.bigInteger('received_at').notNullable();
    t.primary(['workspace_id', 'event_type', 'external_id']);
  });
}

export async function down(knex: Knex): Promise<void> {
  await knex.schema.dropTable('webhook_deliveries');
}
