import type { Knex } from 'knex';

/**
 * Deliverability in the reports (docs/email.md, Deliverability → Reports): a consent change made through a
 * message's unsubscribe or preferences link, or by a relay's complaint about a message, names that message, so a
 * campaign's or flow's report counts the unsubscribes its messages caused. Null for changes made any other way
 * (the API, an import, a flow step) and for those recorded before this column.
 */
export async function up(knex: Knex): Promise<void> {
  await knex.schema.alterTable('subscription_changes', (t) => {
    t.string('message_id', 36).nullable();
    t.index(['message_id'], 'subscription_changes_message_index');
  });
}

export async function down(knex: Knex): Promise<void> {
  await knex.schema.alterTable('subscription_changes', (t) => {
    t.dropIndex(['message_id'], 'subscription_changes_message_index');
    t.dropColumn('message_id');
  });
}
