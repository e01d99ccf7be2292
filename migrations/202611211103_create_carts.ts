import type { Knex } from 'knex';

/** Carts from the webhook's cart events: abandoned-cart flows and the added_to_cart feed read them. */
export async function up(knex: Knex): Promise<void> {
  await knex.schema.createTable('carts', (t) => {
    t.string('id', 36).primary();
    t.string('workspace_id', 36).notNullable().references('id').inTable('workspaces').onDelete('CASCADE');
    t.string('contact_id', 36).notNullable().references('id').inTable('contacts').onDelete('CASCADE');
    t.string('external_id', 255).nullable();
    t.string('last_event_type', 64).notNullable();
    t.decimal('total_amount', 18, 4).nullable();
    t.string('currency', 8).nullable();
    t.text('checkout_url').nullable();
    t.jsonb('items').notNullable();
    t.bigInteger('created_at').notNullable();
    t.bigInteger('updated_at').notNullable();
    t.unique(['workspace_id', 'external_id']);
    t.index(['workspace_id', 'contact_id', 'updated_at']);
  });
}

export async function down(knex: Knex): Promise<void> {
  await knex.schema.dropTable('carts');
}
