import type { Knex } from 'knex';

/**
 * The split keys of an A/B test's audience while its test group is queued (docs/email.md, A/B tests): the audience
 * is read a page at a time and each recipient's key (SHA-256, computed by the process) written here, so the
 * database orders the audience by key and the process holds one page, whatever the audience's size. Rows live
 * only inside the transaction that starts the test (they are deleted before it commits), so the table is empty
 * between transactions.
 */
export async function up(knex: Knex): Promise<void> {
  await knex.schema.createTable('campaign_split_keys', (t) => {
    t.string('campaign_id', 36).notNullable();
    t.string('contact_id', 36).notNullable();
    t.bigInteger('split_key').notNullable();
    t.primary(['campaign_id', 'contact_id']);
  });
}

export async function down(knex: Knex): Promise<void> {
  await knex.schema.dropTable('campaign_split_keys');
}
