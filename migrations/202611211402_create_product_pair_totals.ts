import type { Knex } from 'knex';

/**
 * Co-occurrence over the whole look-back window per product pair, kept beside the daily rows like the product
 * totals: may_also_like reads each seed product's most frequent partners from the top of an index instead of
 * summing every daily pair row of popular products.
 */
export async function up(knex: Knex): Promise<void> {
  await knex.schema.createTable('product_pair_totals', (t) => {
    t.string('workspace_id', 36).notNullable().references('id').inTable('workspaces').onDelete('CASCADE');
    t.string('product_key', 255).notNullable();
    t.string('other_key', 255).notNullable();
    t.bigInteger('orders').notNullable();
    t.primary(['workspace_id', 'product_key', 'other_key']);
    t.index(['workspace_id', 'product_key', 'orders']);
  });
  await knex.raw(
    `INSERT INTO product_pair_totals (workspace_id, product_key, other_key, orders)
     SELECT workspace_id, product_key, other_key, SUM(orders) FROM product_pairs_daily
     GROUP BY workspace_id, product_key, other_key HAVING SUM(orders) <> 0`,
  );
}

export async function down(knex: Knex): Promise<void> {
  await knex.schema.dropTable('product_pair_totals');
}
