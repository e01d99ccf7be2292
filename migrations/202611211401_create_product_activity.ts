import type { Knex } from 'knex';

/**
 * Behaviour aggregates for the recommendation types (the spec's "Recommendation data requirements"): what was
 * sold and viewed per catalog product id and UTC day, running totals over the look-back window, and how often
 * two products were bought in one order. Rankings read these instead of 90 days of raw orders and events.
 * Products are named by the shop's id (`external_id`), as events and line items name them.
 */
export async function up(knex: Knex): Promise<void> {
  // Which days the totals hold: every day from start_day on. Writers read it under a shared lock; the roll-over
  // that drops expired days takes it exclusively.
  await knex.schema.createTable('product_activity_windows', (t) => {
    t.string('workspace_id', 36).primary().references('id').inTable('workspaces').onDelete('CASCADE');
    t.integer('start_day').notNullable();
  });
  await knex.schema.createTable('product_activity_daily', (t) => {
    t.string('workspace_id', 36).notNullable().references('id').inTable('workspaces').onDelete('CASCADE');
    t.string('product_key', 255).notNullable();
    // Days since 1970-01-01 UTC.
    t.integer('day').notNullable();
    t.bigInteger('units_sold').notNullable();
    t.bigInteger('views').notNullable();
    t.primary(['workspace_id', 'product_key', 'day']);
    t.index(['workspace_id', 'day']);
  });
  await knex.schema.createTable('product_activity_totals', (t) => {
    t.string('workspace_id', 36).notNullable().references('id').inTable('workspaces').onDelete('CASCADE');
    t.string('product_key', 255).notNullable();
    t.bigInteger('units_sold').notNullable();
    t.bigInteger('views').notNullable();
    // best_selling_and_most_viewed: units_sold × VIEWS_PER_SALE + views (src/domain/recommendations/activity-delta.ts).
    t.bigInteger('score').notNullable();
    t.primary(['workspace_id', 'product_key']);
    // Each ranking walks its own index from the top and stops once it has enough filtered products.
    t.index(['workspace_id', 'units_sold', 'product_key']);
    t.index(['workspace_id', 'views', 'product_key']);
    t.index(['workspace_id', 'score', 'product_key']);
  });
  await knex.schema.createTable('product_pairs_daily', (t) => {
    t.string('workspace_id', 36).notNullable().references('id').inTable('workspaces').onDelete('CASCADE');
    t.string('product_key', 255).notNullable();
    t.string('other_key', 255).notNullable();
    t.integer('day').notNullable();
    // Orders that held both products.
    t.bigInteger('orders').notNullable();
    t.primary(['workspace_id', 'product_key', 'other_key', 'day']);
    t.index(['workspace_id', 'day']);
  });
}

export async function down(knex: Knex): Promise<void> {
  await knex.schema.dropTable('product_pairs_daily');
  await knex.schema.dropTable('product_activity_totals');
  await knex.schema.dropTable('product_activity_daily');
  await knex.schema.dropTable('product_activity_windows');
}
