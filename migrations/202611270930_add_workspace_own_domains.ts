import type { Knex } from 'knex';

/**
 * `settings.own_domains` (docs/email.md, Tracking): the domains, besides those of the workspace's website
 * integrations, whose links get `_ir_id` when clicked. A JSON array; null is none.
 */
export async function up(knex: Knex): Promise<void> {
  await knex.schema.alterTable('workspaces', (t) => {
    t.jsonb('own_domains').nullable();
  });
}

export async function down(knex: Knex): Promise<void> {
  await knex.schema.alterTable('workspaces', (t) => {
    t.dropColumn('own_domains');
  });
}
