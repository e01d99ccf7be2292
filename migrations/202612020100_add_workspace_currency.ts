import type { Knex } from 'knex';

/**
 * The shop's currency (docs/api/settings-and-integrations.md, Currency): `workspaces.currency` is the ISO 4217 code
 * prices and orders arriving without one are in (null: never set, read as USD, the spec's product default), and
 * `currency_origin` who set it (`settings`, or the platform it was learnt from). `products.currency_defaulted`
 * marks a product whose write named no currency, so it follows the workspace's when that changes. Shopify and
 * WooCommerce products never name one, so theirs are marked. Orders keep what the buyer paid in
 * (`presentment_currency`, `presentment_total_amount`) beside their total in the shop's currency, and a refund
 * the currency it was made in (`order_refunds.currency`), converted at the order's own rate when summed.
 */
export async function up(knex: Knex): Promise<void> {
  await knex.schema.alterTable('workspaces', (t) => {
    t.string('currency', 3).nullable();
    t.string('currency_origin', 16).nullable();
  });
  await knex.schema.alterTable('products', (t) => {
    t.boolean('currency_defaulted').notNullable().defaultTo(false);
  });
  await knex('products').whereIn('platform', ['shopify', 'woocommerce']).update({ currency_defaulted: true });
  await knex.schema.alterTable('orders', (t) => {
    t.string('presentment_currency', 8).nullable();
    t.decimal('presentment_total_amount', 18, 4).nullable();
  });
  // A platform's refund is in the currency paid; null is the order's own.
  await knex.schema.alterTable('order_refunds', (t) => {
    t.string('currency', 8).nullable();
  });
}

export async function down(knex: Knex): Promise<void> {
  await knex.schema.alterTable('order_refunds', (t) => {
    t.dropColumn('currency');
  });
  await knex.schema.alterTable('orders', (t) => {
    t.dropColumn('presentment_currency');
    t.dropColumn('presentment_total_amount');
  });
  await knex.schema.alterTable('products', (t) => {
    t.dropColumn('currency_defaulted');
  });
  await knex.schema.alterTable('workspaces', (t) => {
    t.dropColumn('currency');
    t.dropColumn('currency_origin');
  });
}
