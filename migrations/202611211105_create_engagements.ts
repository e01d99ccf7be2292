import type { Knex } from 'knex';

/** Clicks and opens of sent messages: what last-touch attribution reads. */
export async function up(knex: Knex): Promise<void> {
  await knex.schema.createTable('engagements', (t) => {
    t.string('id', 36).primary();
    t.string('workspace_id', 36).notNullable().references('id').inTable('workspaces').onDelete('CASCADE');
    t.string('contact_id', 36).notNullable().references('id').inTable('contacts').onDelete('CASCADE');
    t.string('kind', 8).notNullable();
    t.string('campaign_id', 36).nullable();
    t.string('flow_id', 36).nullable();
    t.string('message_id', 36).nullable();
    t.bigInteger('occurred_at').notNullable();
    t.index(['workspace_id', 'contact_id', 'kind', 'occurred_at']);
  });
}

export async function down(knex: Knex): Promise<void> {
  await knex.schema.dropTable('engagements');
}
