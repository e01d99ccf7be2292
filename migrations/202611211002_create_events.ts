import type { Knex } from 'knex';

export async function up(knex: Knex): Promise<void> {
  await knex.schema.createTable('events', (t) => {
    t.string('id', 36).primary();
    t.string('workspace_id', 36).notNullable().references('id').inTable('workspaces').onDelete('CASCADE');
    // Null while the visitor is anonymous; set when the anonymous_id is identified.
    t.string('contact_id', 36).nullable().references('id').inTable('contacts').onDelete('CASCADE');
    t.string('anonymous_id', 255).nullable();
    t.string('event_name', 255).notNullable();
    t.jsonb('properties').notNullable();
    t.string('source', 255).nullable();
    // properties.dedupe_key, copied out so batch corrections find the event through an index.
    t.string('dedupe_key', 255).nullable();
    t.bigInteger('created_at').notNullable();
    t.bigInteger('received_at').notNullable();
    t.index(['workspace_id', 'created_at']);
    t.index(['workspace_id', 'contact_id', 'created_at']);
    t.index(['workspace_id', 'event_name', 'created_at']);
    t.index(['contact_id', 'event_name', 'dedupe_key']);
  });
  await knex.schema.alterTable('events', (t) => {
    t.index(['workspace_id', 'anonymous_id'], 'events_unattached_anonymous_index', {
      predicate: knex.whereNull('contact_id'),
    });
  });
  // The durable trigger outbox: written in the same transaction as the fact that fires the trigger.
  await knex.schema.createTable('trigger_outbox', (t) => {
    t.bigIncrements('id');
    t.string('workspace_id', 36).notNullable().references('id').inTable('workspaces').onDelete('CASCADE');
    t.string('trigger_type', 64).notNullable();
    t.string('event_name', 255).nullable();
    t.string('contact_id', 36).nullable().references('id').inTable('contacts').onDelete('CASCADE');
    t.string('subject_type', 32).notNullable();
    t.string('subject_id', 64).notNullable();
    t.string('source', 255).nullable();
    t.jsonb('payload').notNullable();
    t.bigInteger('created_at').notNullable();
    t.bigInteger('processed_at').nullable();
    t.index(['workspace_id', 'trigger_type', 'created_at']);
    t.index(['contact_id']);
  });
  await knex.schema.alterTable('trigger_outbox', (t) => {
    t.index(['id'], 'trigger_outbox_pending_index', { predicate: knex.whereNull('processed_at') });
  });
}

export async function down(knex: Knex): Promise<void> {
  await knex.schema.dropTable('trigger_outbox');
  await knex.schema.dropTable('events');
}
