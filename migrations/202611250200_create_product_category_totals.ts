import type { Knex } from 'knex';

/**
 * Rankings restricted to categories (issue 16, item 7): the running totals of `product_activity_totals`, copied
 * to one row per category of each ranked (not manual) catalog product. A category's best sellers are then the
 * top of its own index, not a walk down the whole store's totals that keeps one product in a hundred. Kept on
 * write beside the totals (src/domain/recommendations/category-totals.ts); rows exist for every category of the
 * catalog, with or without activity, so a write only updates them.
 */
export async function up(knex: Knex): Promise<void> {
  await knex.schema.createTable('product_category_totals', (t) => {
    t.string('workspace_id', 36).notNullable().references('id').inTable('workspaces').onDelete('CASCADE');
    t.string('product_key', 255).notNullable();
    t.text('category').notNullable();
    t.bigInteger('units_sold').notNullable();
    t.bigInteger('views').notNullable();
    t.bigInteger('score').notNullable();
    // By product first: a write copies its products' new totals to all their categories.
    t.primary(['workspace_id', 'product_key', 'category']);
    t.index(['workspace_id', 'category', 'units_sold', 'product_key']);
    t.index(['workspace_id', 'category', 'views', 'product_key']);
    t.index(['workspace_id', 'category', 'score', 'product_key']);
  });
  await knex.raw(
    `INSERT INTO product_category_totals (workspace_id, product_key, category, units_sold, views, score)
     SELECT DISTINCT p.workspace_id, p.external_id, c.category, COALESCE(t.units_sold, 0), COALESCE(t.views, 0), COALESCE(t.score, 0)
     FROM products p
     JOIN product_categories c ON c.product_id = p.id
     LEFT JOIN product_activity_totals t ON t.workspace_id = p.workspace_id AND t.product_key = p.external_id
     WHERE p.platform <> 'manual'`,
  );
}

export async function down(knex: Knex): Promise<void> {
  await knex.schema.dropTable('product_category_totals');
}
