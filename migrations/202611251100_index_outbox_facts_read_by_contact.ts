import type { Knex } from 'knex';

/**
 * The outbox's contact index holds only the facts read by contact (an abandoned-cart check reads a contact's
 * cart activity and orders): every event fact and contact change went to its contact's page, about 40 of the
 * 123 pages SQLite wrote and synced per 50-event group commit (issue 16). The erasure finds the facts left out
 * through their subject, the contact's events or the contact itself: subject ids are time-ordered, so their
 * index grows at its end.
 *
 * The predicate is repeated word for word by the queries (src/domain/triggers/trigger-outbox.ts): SQLite uses a
 * partial index only for a query that carries its condition as a term.
 */
const READ_BY_CONTACT =
  "(trigger_type NOT IN ('event', 'shipping_information', 'contact_changed') OR event_name IN ('added_to_cart', 'started_checkout'))";

export async function up(knex: Knex): Promise<void> {
  await knex.schema.alterTable('trigger_outbox', (t) => {
    t.dropIndex(['contact_id']);
    t.index(['subject_id'], 'trigger_outbox_subject_index');
  });
  await knex.raw(`CREATE INDEX trigger_outbox_contact_history_index ON trigger_outbox (contact_id, id) WHERE ${READ_BY_CONTACT}`);
}

export async function down(knex: Knex): Promise<void> {
  await knex.raw('DROP INDEX trigger_outbox_contact_history_index');
  await knex.schema.alterTable('trigger_outbox', (t) => {
    t.dropIndex(['subject_id'], 'trigger_outbox_subject_index');
    t.index(['contact_id']);
  });
}
