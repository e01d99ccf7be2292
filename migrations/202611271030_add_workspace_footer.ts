import type { Knex } from 'knex';

/**
 * `settings.footer_html`, `settings.footer_text` and `settings.postal_address` (docs/email.md, Deliverability:
 * Footer): the workspace's own footer templates (Liquid) appended to marketing mail whose template lacks an
 * unsubscribe link, and the postal address commercial mail must carry. Null is unset (the default footer).
 */
export async function up(knex: Knex): Promise<void> {
  await knex.schema.alterTable('workspaces', (t) => {
    t.text('footer_html').nullable();
    t.text('footer_text').nullable();
    t.text('postal_address').nullable();
  });
}

export async function down(knex: Knex): Promise<void> {
  await knex.schema.alterTable('workspaces', (t) => {
    t.dropColumn('footer_html');
    t.dropColumn('footer_text');
    t.dropColumn('postal_address');
  });
}
