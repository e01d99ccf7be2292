import type { Knex } from 'knex';

/**
 * Segments and their current members (docs/segments.md). A membership row is written when a contact enters
 * and deleted when it leaves, so `entered_at` is the start of the current stay. Event leaves count a
 * contact's events of one name, index-only through (workspace_id, contact_id, event_name, created_at).
 */
export async function up(knex: Knex): Promise<void> {
  await knex.schema.createTable('segments', (t) => {
    t.string('id', 36).primary();
    t.string('workspace_id', 36).notNullable().references('id').inTable('workspaces').onDelete('CASCADE');
    t.string('name', 255).notNullable();
    t.jsonb('conditions').notNullable();
    // Some leaf counts within days before now: the hourly refresh re-evaluates these for everyone.
    t.boolean('has_time_window').notNullable().defaultTo(false);
    t.bigInteger('created_at').notNullable();
    t.bigInteger('updated_at').notNullable();
    t.index(['workspace_id', 'created_at']);
    t.index(['has_time_window']);
  });
  await knex.schema.createTable('segment_members', (t) => {
    t.string('segment_id', 36).notNullable().references('id').inTable('segments').onDelete('CASCADE');
    t.string('contact_id', 36).notNullable().references('id').inTable('contacts').onDelete('CASCADE');
    t.string('workspace_id', 36).notNullable();
    t.bigInteger('entered_at').notNullable();
    t.primary(['segment_id', 'contact_id']);
    // The members list pages newest entry first.
    t.index(['segment_id', 'entered_at', 'contact_id']);
    // A contact's segments (campaign recipients join on it; erasing a contact removes its rows).
    t.index(['contact_id']);
  });
  await knex.schema.alterTable('events', (t) => {
    t.index(['workspace_id', 'contact_id', 'event_name', 'created_at'], 'events_contact_name_index');
  });
}

export async function down(knex: Knex): Promise<void> {
  await knex.schema.alterTable('events', (t) => {
    t.dropIndex(['workspace_id', 'contact_id', 'event_name', 'created_at'], 'events_contact_name_index');
  });
  await knex.schema.dropTable('segment_members');
  await knex.schema.dropTable('segments');
}
