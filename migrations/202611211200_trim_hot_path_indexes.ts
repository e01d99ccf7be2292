import type { Knex } from 'knex';

/**
 * Fewer index writes per stored event: the dedupe lookup only ever searches events that have a dedupe key,
 * and no query reads the outbox by (workspace, trigger type, time).
 */
export async function up(knex: Knex): Promise<void> {
  await knex.schema.alterTable('events', (t) => {
    t.dropIndex(['contact_id', 'event_name', 'dedupe_key']);
  });
  await knex.schema.alterTable('events', (t) => {
    t.index(['contact_id', 'event_name', 'dedupe_key'], 'events_dedupe_index', { predicate: knex.whereNotNull('dedupe_key') });
  });
  await knex.schema.alterTable('trigger_outbox', (t) => {
    t.dropIndex(['workspace_id', 'trigger_type', 'created_at']);
  });
}

export async function down(knex: Knex): Promise<void> {
  await knex.schema.alterTable('trigger_outbox', (t) => {
    t.index(['workspace_id', 'trigger_type', 'created_at']);
  });
  await knex.schema.alterTable('events', (t) => {
    t.dropIndex(['contact_id', 'event_name', 'dedupe_key'], 'events_dedupe_index');
  });
  await knex.schema.alterTable('events', (t) => {
    t.index(['contact_id', 'event_name', 'dedupe_key']);
  });
}
