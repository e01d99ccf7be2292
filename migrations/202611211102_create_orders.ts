import type { Knex } from 'knex';

export async function up(knex: Knex): Promise<void> {
  await knex.schema.createTable('orders', (t) => {
    t.string('id', 36).primary();
    t.string('workspace_id', 36).notNullable().references('id').inTable('workspaces').onDelete('CASCADE');
    // An order always belongs to a contact; erasing a contact anonymises it instead of deleting it.
    t.string('contact_id', 36).notNullable().references('id').inTable('contacts');
    t.string('platform', 64).notNullable();
    t.string('integration_id', 36).nullable();
    // How it arrived: webhook, api (direct create) or sync.
    t.string('origin', 16).notNullable();
    // external_id for webhook and sync orders, which upsert on it; null for direct creates (no protection).
    t.string('upsert_key', 255).nullable();
    t.string('external_id', 255).nullable();
    t.string('order_number', 255).nullable();
    // order_number without zero padding (000006775 → 6775), for shipment matching.
    t.string('order_number_key', 255).nullable();
    t.decimal('total_amount', 18, 4).notNullable();
    t.string('currency', 8).notNullable();
    t.string('status', 255).notNullable();
    t.bigInteger('ordered_at').notNullable();
    t.string('attributed_campaign_id', 36).nullable();
    t.string('attributed_flow_id', 36).nullable();
    t.string('attributed_message_id', 36).nullable();
    t.string('attribution_kind', 8).nullable();
    t.string('shipping_status', 32).nullable();
    t.decimal('refunded_amount', 18, 4).notNullable().defaultTo(0);
    t.bigInteger('cancelled_at').nullable();
    t.bigInteger('created_at').notNullable();
    t.bigInteger('updated_at').notNullable();
    t.unique(['workspace_id', 'upsert_key']);
    t.index(['workspace_id', 'contact_id', 'ordered_at']);
    t.index(['workspace_id', 'external_id']);
    t.index(['workspace_id', 'order_number_key']);
    t.index(['workspace_id', 'ordered_at']);
    t.index(['attributed_campaign_id']);
    t.index(['attributed_flow_id']);
  });
  await knex.schema.createTable('order_items', (t) => {
    t.bigIncrements('id');
    t.string('order_id', 36).notNullable().references('id').inTable('orders').onDelete('CASCADE');
    t.string('workspace_id', 36).notNullable();
    // Joins the catalog's external_id (never SKU or title).
    t.string('external_id', 255).nullable();
    t.text('title').nullable();
    t.integer('quantity').notNullable();
    t.decimal('price', 18, 4).nullable();
    t.integer('position').notNullable();
    t.bigInteger('ordered_at').notNullable();
    t.index(['order_id']);
    t.index(['workspace_id', 'external_id', 'ordered_at']);
  });
}

export async function down(knex: Knex): Promise<void> {
  await knex.schema.dropTable('order_items');
  await knex.schema.dropTable('orders');
}
