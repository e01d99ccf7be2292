import type { Knex } from 'knex';

/** The catalog: one row per (platform, external_id) in a workspace, variants in their own table. */
export async function up(knex: Knex): Promise<void> {
  await knex.schema.createTable('products', (t) => {
    t.string('id', 36).primary();
    t.string('workspace_id', 36).notNullable().references('id').inTable('workspaces').onDelete('CASCADE');
    t.string('platform', 64).notNullable();
    t.string('external_id', 255).notNullable();
    t.text('title').notNullable();
    t.decimal('price', 18, 4).nullable();
    t.string('currency', 8).notNullable();
    t.text('url').nullable();
    t.text('image_url').nullable();
    t.boolean('in_stock').nullable();
    t.integer('stock_qty').nullable();
    t.jsonb('categories').notNullable();
    t.decimal('compare_at_price', 18, 4).nullable();
    t.text('description').nullable();
    t.string('product_type', 255).nullable();
    t.double('weight').nullable();
    t.jsonb('metadata').notNullable();
    t.string('source', 400).nullable();
    // Hash of the last applied payload: an identical redelivery is recognised and ignored.
    t.string('content_hash', 64).notNullable();
    t.bigInteger('synced_at').notNullable();
    t.bigInteger('created_at').notNullable();
    t.unique(['workspace_id', 'platform', 'external_id']);
    t.index(['workspace_id', 'external_id']);
    t.index(['workspace_id', 'source']);
    t.index(['workspace_id', 'created_at']);
  });
  await knex.schema.createTable('product_variants', (t) => {
    t.string('id', 36).primary();
    t.string('product_id', 36).notNullable().references('id').inTable('products').onDelete('CASCADE');
    t.string('external_id', 255).nullable();
    t.string('sku', 255).nullable();
    t.text('title').nullable();
    t.jsonb('options').nullable();
    t.decimal('price', 18, 4).nullable();
    t.decimal('compare_at_price', 18, 4).nullable();
    t.boolean('in_stock').nullable();
    t.integer('stock_qty').nullable();
    t.text('image_url').nullable();
    t.text('url').nullable();
    t.integer('position').nullable();
    t.index(['product_id']);
  });
}

export async function down(knex: Knex): Promise<void> {
  await knex.schema.dropTable('product_variants');
  await knex.schema.dropTable('products');
}
