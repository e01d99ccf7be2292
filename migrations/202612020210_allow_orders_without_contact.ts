import type { Knex } from 'knex';

/**
 * Orders without a contact (docs/platforms/README.md, Orders without an email): `orders.contact_id` becomes
 * nullable, for a shop platform's order whose buyer emk cannot tie to a contact, and `orders.customer_ref` keeps
 * the platform's customer (`shopify:<id>`) of such an order, which joins the contact that later appears with that
 * customer id. Down, such orders go (the column cannot hold them), with their items.
 *
 * SQLite changes a column's nullability, or drops one, by rebuilding the table (knex copies it, drops the original
 * and renames the copy; indexes and foreign keys are carried over). Dropping `orders` with foreign keys enforced
 * would delete every order's items (`order_items` cascades), and SQLite ignores turning enforcement off inside a
 * transaction: so this migration runs outside one, where knex turns it off around each rebuild, itself one
 * transaction. Each step is skipped where it is done already, so a run cut short can run again.
 */
export const config = { transaction: false };

const REF_INDEX = 'orders_customer_ref_index';

export async function up(knex: Knex): Promise<void> {
  if (!(await knex.schema.hasColumn('orders', 'customer_ref'))) {
    await knex.transaction(async (trx) => {
      await trx.schema.alterTable('orders', (t) => {
        t.string('customer_ref', 300).nullable();
        t.index(['workspace_id', 'customer_ref'], REF_INDEX, { predicate: knex.whereNotNull('customer_ref') });
      });
    });
  }
  await knex.schema.alterTable('orders', (t) => {
    t.setNullable('contact_id');
  });
}

export async function down(knex: Knex): Promise<void> {
  await knex('orders').whereNull('contact_id').delete();
  await knex.schema.alterTable('orders', (t) => {
    t.dropNullable('contact_id');
  });
  if (await knex.schema.hasColumn('orders', 'customer_ref')) {
    await knex.schema.alterTable('orders', (t) => {
      t.dropIndex(['workspace_id', 'customer_ref'], REF_INDEX);
    });
    await knex.schema.alterTable('orders', (t) => {
      t.dropColumn('customer_ref');
    });
  }
}
