import type { Knex } from 'knex';

export async function up(knex: Knex): Promise<void> {
  await knex.schema.createTable('workspaces', (t) => {
    t.string('id', 36).primary();
    t.string('name', 200).notNullable();
    t.string('site_id', 64).notNullable().unique();
    t.integer('click_window_days').notNullable().defaultTo(5);
    t.integer('open_window_days').notNullable().defaultTo(3);
    t.integer('contact_limit').nullable();
    t.jsonb('sender').nullable();
    t.bigInteger('created_at').notNullable();
  });
  await knex.schema.createTable('api_keys', (t) => {
    t.string('id', 36).primary();
    t.string('workspace_id', 36).notNullable().references('id').inTable('workspaces').onDelete('CASCADE');
    t.string('name', 200).notNullable();
    t.string('prefix', 16).notNullable();
    t.string('key_hash', 64).notNullable().unique();
    t.bigInteger('created_at').notNullable();
    t.bigInteger('revoked_at').nullable();
    t.index(['workspace_id']);
  });
  await knex.schema.createTable('integrations', (t) => {
    t.string('id', 36).primary();
    t.string('workspace_id', 36).notNullable().references('id').inTable('workspaces').onDelete('CASCADE');
    t.string('platform', 64).notNullable();
    t.string('domain', 255).notNullable();
    t.string('api_key_hash', 64).notNullable().unique();
    t.boolean('active').notNullable().defaultTo(true);
    t.bigInteger('created_at').notNullable();
    t.index(['workspace_id']);
  });
}

export async function down(knex: Knex): Promise<void> {
  await knex.schema.dropTable('integrations');
  await knex.schema.dropTable('api_keys');
  await knex.schema.dropTable('workspaces');
}
