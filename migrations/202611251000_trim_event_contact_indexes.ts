import type { Knex } from 'knex';

/**
 * One index of a contact's events, not two. (workspace_id, contact_id, created_at) and (workspace_id, contact_id,
 * event_name, created_at) both scatter every stored event to its contact's page: each group commit dirtied one
 * page of each per contact in it, and those pages were a third of the bytes SQLite wrote and synced per commit
 * (63 of 211 WAL frames a 50-event commit; issue 16). The wider index serves both: a contact's events of one
 * name are a range of it, and all of a contact's events are its (workspace_id, contact_id) prefix, sorted by
 * time after the seek (a contact's own events, not the workspace's).
 */
export async function up(knex: Knex): Promise<void> {
  await knex.schema.alterTable('events', (t) => {
    t.dropIndex(['workspace_id', 'contact_id', 'created_at']);
  });
}

export async function down(knex: Knex): Promise<void> {
  await knex.schema.alterTable('events', (t) => {
    t.index(['workspace_id', 'contact_id', 'created_at']);
  });
}
