import type { Knex } from 'knex';

/**
 * `campaigns.format` (docs/email.md, Formats): how the campaign's `html` is written, `html` or `mjml`. Existing
 * campaigns are HTML. A flow's email steps keep their format inside the steps' JSON.
 */
export async function up(knex: Knex): Promise<void> {
  await knex.schema.alterTable('campaigns', (t) => {
    t.string('format', 8).notNullable().defaultTo('html');
  });
}

export async function down(knex: Knex): Promise<void> {
  await knex.schema.alterTable('campaigns', (t) => {
    t.dropColumn('format');
  });
}
