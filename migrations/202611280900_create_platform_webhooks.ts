import type { Knex } from 'knex';

/**
 * Shopify and WooCommerce webhooks (docs/platforms/README.md):
 * - `integrations.secret`: the platform's webhook secret (it signs every delivery, so it is kept, not hashed);
 *   `api_key_hash` becomes nullable, since a platform integration has no bearer key.
 * - `integration_ignored_topics`: how many deliveries of each topic emk does not use an integration received.
 * - `orders.platform_updated_at`: the platform's last-modified time of the stored snapshot (an older one changes
 *   no field); `order_refunds`: refunds by the platform's id, so a refund seen twice (its own topic and a later
 *   snapshot) counts once, also when it arrives before its order.
 * - `carts.integration_id` (what `shop/redact` deletes) and `carts.converted_at` (a completed checkout starts
 *   no abandoned-cart flow).
 * - `data_requests`: the platforms' `customers/data_request`, for the operator to fulfil.
 */
export async function up(knex: Knex): Promise<void> {
  await knex.schema.alterTable('integrations', (t) => {
    t.string('api_key_hash', 64).nullable().alter();
    t.text('secret').nullable();
  });
  await knex.schema.createTable('integration_ignored_topics', (t) => {
    t.string('integration_id', 36).notNullable().references('id').inTable('integrations').onDelete('CASCADE');
    t.string('topic', 255).notNullable();
    t.bigInteger('count').notNullable();
    t.primary(['integration_id', 'topic']);
  });
  await knex.schema.alterTable('orders', (t) => {
    t.bigInteger('platform_updated_at').nullable();
  });
  await knex.schema.createTable('order_refunds', (t) => {
    t.string('workspace_id', 36).notNullable().references('id').inTable('workspaces').onDelete('CASCADE');
    // The order's upsert key (its external id): refunds may arrive before the order itself.
    t.string('order_key', 255).notNullable();
    t.string('refund_id', 255).notNullable();
    t.decimal('amount', 18, 4).notNullable();
    t.bigInteger('created_at').notNullable();
    t.primary(['workspace_id', 'order_key', 'refund_id']);
  });
  await knex.schema.alterTable('carts', (t) => {
    t.string('integration_id', 36).nullable();
    t.bigInteger('converted_at').nullable();
    t.index(['integration_id']);
  });
  await knex.schema.createTable('data_requests', (t) => {
    t.string('id', 36).primary();
    t.string('workspace_id', 36).notNullable().references('id').inTable('workspaces').onDelete('CASCADE');
    t.string('integration_id', 36).notNullable();
    t.string('email', 320).notNullable();
    t.string('contact_id', 36).nullable();
    t.string('request_id', 255).nullable();
    t.bigInteger('received_at').notNullable();
    t.index(['workspace_id', 'received_at']);
  });
}

export async function down(knex: Knex): Promise<void> {
  await knex.schema.dropTable('data_requests');
  await knex.schema.alterTable('carts', (t) => {
    t.dropIndex(['integration_id']);
    t.dropColumn('converted_at');
    t.dropColumn('integration_id');
  });
  await knex.schema.dropTable('order_refunds');
  await knex.schema.alterTable('orders', (t) => {
    t.dropColumn('platform_updated_at');
  });
  await knex.schema.dropTable('integration_ignored_topics');
  // Platform integrations have no key: they cannot outlive the column that allows it.
  await knex('integrations').whereNull('api_key_hash').delete();
  await knex.schema.alterTable('integrations', (t) => {
    t.dropColumn('secret');
    t.string('api_key_hash', 64).notNullable().alter();
  });
}
