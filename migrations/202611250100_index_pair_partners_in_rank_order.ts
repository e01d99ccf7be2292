import type { Knex } from 'knex';

/**
 * may_also_like reads each seed's partners most orders first, ties by partner key ascending (partnersOf). The
 * index it replaces held the orders without the partner key, so both databases read and sorted every partner
 * row of a seed before keeping the first hundred: tens of thousands for a best seller at catalog scale. In the
 * read's own order the index lets them stop at the hundredth. Same width as before: writes cost the same.
 */
export async function up(knex: Knex): Promise<void> {
  await knex.schema.alterTable('product_pair_totals', (t) => {
    t.dropIndex(['workspace_id', 'product_key', 'orders']);
    t.index(['workspace_id', 'product_key', knex.raw('?? DESC', ['orders']), 'other_key'], 'product_pair_totals_partners_index');
  });
}

export async function down(knex: Knex): Promise<void> {
  await knex.schema.alterTable('product_pair_totals', (t) => {
    t.dropIndex([], 'product_pair_totals_partners_index');
    t.index(['workspace_id', 'product_key', 'orders']);
  });
}
