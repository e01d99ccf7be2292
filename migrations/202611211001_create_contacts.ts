import type { Knex } from 'knex';

export async function up(knex: Knex): Promise<void> {
  await knex.schema.createTable('contacts', (t) => {
    t.string('id', 36).primary();
    t.string('workspace_id', 36).notNullable().references('id').inTable('workspaces').onDelete('CASCADE');
    t.string('email', 320).notNullable();
    // Lower-cased email: the unique key that makes "one contact per email" hold under concurrency.
    t.string('email_key', 320).notNullable();
    t.jsonb('properties').notNullable();
    t.string('subscription_status', 32).notNullable();
    t.string('source', 255).nullable();
    t.decimal('lifetime_revenue', 18, 4).notNullable().defaultTo(0);
    t.integer('orders_count').notNullable().defaultTo(0);
    t.bigInteger('created_at').notNullable();
    t.bigInteger('updated_at').notNullable();
    t.unique(['workspace_id', 'email_key']);
    t.index(['workspace_id', 'created_at']);
  });
  await knex.schema.createTable('contact_anonymous_ids', (t) => {
    t.string('workspace_id', 36).notNullable().references('id').inTable('workspaces').onDelete('CASCADE');
    t.string('anonymous_id', 255).notNullable();
    t.string('contact_id', 36).notNullable().references('id').inTable('contacts').onDelete('CASCADE');
    t.bigInteger('created_at').notNullable();
    t.primary(['workspace_id', 'anonymous_id']);
    t.index(['contact_id']);
  });
  await knex.schema.createTable('subscription_changes', (t) => {
    t.bigIncrements('id');
    t.string('contact_id', 36).notNullable().references('id').inTable('contacts').onDelete('CASCADE');
    t.string('from_status', 32).nullable();
    t.string('to_status', 32).notNullable();
    t.string('origin', 300).notNullable();
    t.bigInteger('created_at').notNullable();
    t.index(['contact_id']);
  });
}

export async function down(knex: Knex): Promise<void> {
  await knex.schema.dropTable('subscription_changes');
  await knex.schema.dropTable('contact_anonymous_ids');
  await knex.schema.dropTable('contacts');
}
