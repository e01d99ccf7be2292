import type { Knex } from 'knex';

/**
 * Batch imports look up a chunk's dedupe keys (1000) among the contacts' events. An index leading with the
 * contact made the databases seek every combination of contact, event name and key in the chunk (2,000,000
 * seeks a chunk); leading with (workspace, dedupe_key) it is one seek per key, the contact and name filtered.
 */
export async function up(knex: Knex): Promise<void> {
  await knex.schema.alterTable('events', (t) => {
    t.dropIndex(['contact_id', 'event_name', 'dedupe_key'], 'events_dedupe_index');
  });
  await knex.schema.alterTable('events', (t) => {
    t.index(['workspace_id', 'dedupe_key'], 'events_workspace_dedupe_index', { predicate: knex.whereNotNull('dedupe_key') });
  });
}

export async function down(knex: Knex): Promise<void> {
  await knex.schema.alterTable('events', (t) => {
    t.dropIndex(['workspace_id', 'dedupe_key'], 'events_workspace_dedupe_index');
  });
  await knex.schema.alterTable('events', (t) => {
    t.index(['contact_id', 'event_name', 'dedupe_key'], 'events_dedupe_index', { predicate: knex.whereNotNull('dedupe_key') });
  });
}
