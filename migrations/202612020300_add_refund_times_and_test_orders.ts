import type { Knex } from 'knex';

/**
 * The platforms' own times and test data (docs/platforms/README.md, Times; Test orders and test notifications):
 * - `order_refunds.refunded_at`: when the refund was made, as the platform says (Shopify's `processed_at`), else
 *   when emk first saw it. Rows stored before it had only `created_at` (when emk recorded them), which fills it.
 * - `platform_test_orders`: the ids of the test orders a shop sent (Shopify's `test: true`, WooPayments' test
 *   mode). Nothing else of them is stored; a refund or fulfillment that names one is dropped.
 */
export async function up(knex: Knex): Promise<void> {
  await knex.schema.alterTable('order_refunds', (t) => {
    t.bigInteger('refunded_at').nullable();
  });
  await knex('order_refunds').update({ refunded_at: knex.ref('created_at') });
  await knex.schema.createTable('platform_test_orders', (t) => {
    t.string('workspace_id', 36).notNullable().references('id').inTable('workspaces').onDelete('CASCADE');
    // The order's upsert key (its external id), as `order_refunds.order_key`.
    t.string('order_key', 255).notNullable();
    t.bigInteger('received_at').notNullable();
    t.primary(['workspace_id', 'order_key']);
  });
}

export async function down(knex: Knex): Promise<void> {
  await knex.schema.dropTable('platform_test_orders');
  await knex.schema.alterTable('order_refunds', (t) => {
    t.dropColumn('refunded_at');
  });
}
