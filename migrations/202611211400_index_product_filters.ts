import type { Knex } from 'knex';
import { dialectOf } from '../src/domain/db/database.js';
import { createProductStore } from '../src/domain/products/product-store.js';

/**
 * What feeds filter on, in indexed side tables kept in step with the catalog by the product store: categories,
 * metadata, variant options, and a title sort key. Values can be long (metadata up to 10,000 characters), past
 * PostgreSQL's btree entry limit, so the indexes lead with the key and leave long values out.
 */
export async function up(knex: Knex): Promise<void> {
  await knex.schema.alterTable('products', (t) => {
    t.text('title_key').notNullable().defaultTo('');
  });
  await knex.schema.createTable('product_categories', (t) => {
    t.string('workspace_id', 36).notNullable();
    t.string('product_id', 36).notNullable().references('id').inTable('products').onDelete('CASCADE');
    t.text('category').notNullable();
    t.primary(['product_id', 'category']);
    t.index(['workspace_id', 'category', 'product_id']);
  });
  await knex.schema.createTable('product_metadata', (t) => {
    t.string('workspace_id', 36).notNullable();
    t.string('product_id', 36).notNullable().references('id').inTable('products').onDelete('CASCADE');
    t.text('key').notNullable();
    t.text('value').notNullable();
    t.text('value_folded').notNullable();
    t.primary(['product_id', 'key']);
    t.index(['workspace_id', 'key']);
  });
  await knex.schema.createTable('product_variant_options', (t) => {
    t.string('product_id', 36).notNullable().references('id').inTable('products').onDelete('CASCADE');
    t.string('variant_id', 36).notNullable().references('id').inTable('product_variants').onDelete('CASCADE');
    t.text('axis').notNullable();
    t.text('value').notNullable();
    t.primary(['variant_id', 'axis']);
    t.index(['product_id', 'axis']);
  });
  const products = createProductStore(dialectOf(knex));
  for (const { workspace_id } of await knex('products').distinct('workspace_id')) {
    await products.reindexFilters(knex, workspace_id as string);
  }
}

export async function down(knex: Knex): Promise<void> {
  await knex.schema.dropTable('product_variant_options');
  await knex.schema.dropTable('product_metadata');
  await knex.schema.dropTable('product_categories');
  await knex.schema.alterTable('products', (t) => {
    t.dropColumn('title_key');
  });
}
