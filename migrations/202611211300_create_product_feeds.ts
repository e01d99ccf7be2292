import type { Knex } from 'knex';

/** Saved product feeds: a filtered, ordered set of catalog products (the spec's Product feed). */
export async function up(knex: Knex): Promise<void> {
  await knex.schema.createTable('product_feeds', (t) => {
    t.string('id', 36).primary();
    t.string('workspace_id', 36).notNullable().references('id').inTable('workspaces').onDelete('CASCADE');
    t.text('name').notNullable();
    // '' = a plain sort by sort_by.
    t.string('recommendation_type', 64).notNullable();
    t.string('sort_by', 32).notNullable();
    t.integer('max_items').notNullable();
    t.jsonb('categories').notNullable();
    t.jsonb('exclude_categories').notNullable();
    t.string('categories_op', 8).notNullable();
    t.string('exclude_categories_op', 8).notNullable();
    t.decimal('price_min', 18, 4).nullable();
    t.decimal('price_max', 18, 4).nullable();
    t.integer('stock_min').nullable();
    t.integer('stock_max').nullable();
    t.string('stock_status', 16).nullable();
    t.string('source', 400).nullable();
    // [{key, operator, value}]
    t.jsonb('metadata').notNullable();
    // {axis: [accepted values]}
    t.jsonb('variant_options').notNullable();
    t.boolean('variant_in_stock').notNullable();
    t.bigInteger('created_at').notNullable();
    t.bigInteger('updated_at').notNullable();
    t.index(['workspace_id', 'created_at']);
  });
}

export async function down(knex: Knex): Promise<void> {
  await knex.schema.dropTable('product_feeds');
}
