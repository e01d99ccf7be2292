import type { Knex } from 'knex';

/**
 * The operator's view of sending (`GET /metrics`, `emk status`): every workspace's messages counted by status at
 * each scrape, and those handed over in the last minutes. A message row carries its rendered mail, so neither may
 * read the table: the count reads an index alone (this one; PostgreSQL may take `(campaign_id, status)`, as
 * small), and `(status, sent_at)` makes the recent hand-overs a short range per status. A message changes status
 * once or twice, and `(campaign_id, status)` already changes with it.
 */
export async function up(knex: Knex): Promise<void> {
  await knex.schema.alterTable('messages', (t) => {
    t.index(['status', 'sent_at'], 'messages_status_index');
  });
}

export async function down(knex: Knex): Promise<void> {
  await knex.schema.alterTable('messages', (t) => {
    t.dropIndex(['status', 'sent_at'], 'messages_status_index');
  });
}
