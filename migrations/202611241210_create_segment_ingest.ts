import type { Knex } from 'knex';

/**
 * Segment-compatible ingest (docs/api/segment.md): the message ids already stored (a retried message is
 * stored once) and the Segment `userId`s that name a contact, so a call carrying only a `userId` finds its
 * contact through the primary key instead of reading contacts' JSON properties.
 */
export async function up(knex: Knex): Promise<void> {
  await knex.schema.createTable('segment_messages', (t) => {
    t.string('workspace_id', 36).notNullable().references('id').inTable('workspaces').onDelete('CASCADE');
    t.string('message_id', 255).notNullable();
    t.bigInteger('received_at').notNullable();
    t.primary(['workspace_id', 'message_id']);
  });
  await knex.schema.createTable('contact_user_ids', (t) => {
    t.string('workspace_id', 36).notNullable().references('id').inTable('workspaces').onDelete('CASCADE');
    t.string('user_id', 255).notNullable();
    t.string('contact_id', 36).notNullable().references('id').inTable('contacts').onDelete('CASCADE');
    t.bigInteger('created_at').notNullable();
    t.primary(['workspace_id', 'user_id']);
    t.index(['contact_id']);
  });
}

export async function down(knex: Knex): Promise<void> {
  await knex.schema.dropTable('contact_user_ids');
  await knex.schema.dropTable('segment_messages');
}
