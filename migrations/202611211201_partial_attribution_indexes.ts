import type { Knex } from 'knex';

/** Most orders are attributed to nothing: index only those credited to a campaign or a flow. */
export async function up(knex: Knex): Promise<void> {
  await knex.schema.alterTable('orders', (t) => {
    t.dropIndex(['attributed_campaign_id']);
    t.dropIndex(['attributed_flow_id']);
  });
  await knex.schema.alterTable('orders', (t) => {
    t.index(['attributed_campaign_id'], 'orders_attributed_campaign_index', {
      predicate: knex.whereNotNull('attributed_campaign_id'),
    });
    t.index(['attributed_flow_id'], 'orders_attributed_flow_index', { predicate: knex.whereNotNull('attributed_flow_id') });
  });
}

export async function down(knex: Knex): Promise<void> {
  await knex.schema.alterTable('orders', (t) => {
    t.dropIndex(['attributed_campaign_id'], 'orders_attributed_campaign_index');
    t.dropIndex(['attributed_flow_id'], 'orders_attributed_flow_index');
  });
  await knex.schema.alterTable('orders', (t) => {
    t.index(['attributed_campaign_id']);
    t.index(['attributed_flow_id']);
  });
}
