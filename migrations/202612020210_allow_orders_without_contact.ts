import type { Knex } from 'knex';

/**
 * `orders.contact_id` becomes nullable: a shop platform's order whose buyer emk cannot tie to a contact is kept
 * without one (docs/platforms/README.md, Orders without an email). Down, such orders go (the column cannot hold
 * them), with their items.
 *
 * SQLite changes a column's nullability by rebuilding the table (knex copies it, drops the original and renames
 * the copy; indexes and foreign keys are carried over). Dropping `orders` with foreign keys enforced would
 * delete every order's items (`order_items` cascades), and SQLite ignores turning enforcement off inside a
 * transaction: so this migration runs outside one, where knex turns it off around the rebuild, which is itself
 * one transaction. On PostgreSQL it is one `ALTER TABLE`.
 */
export const config = { transaction: false };

export async function up(knex: Knex): Promise<void> {
  await knex.schema.alterTable('orders', (t) => {
    t.setNullable('contact_id');
  });
}

export async function down(knex: Knex): Promise<void> {
  await knex('orders').whereNull('contact_id').delete();
  await knex.schema.alterTable('orders', (t) => {
    t.dropNullable('contact_id');
  });
}
