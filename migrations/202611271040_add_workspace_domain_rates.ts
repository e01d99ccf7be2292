import type { Knex } from 'knex';

/**
 * `settings.domain_rates` (docs/email.md, Deliverability → Rates): at most so many messages a minute per
 * recipient domain, as a JSON object `{"gmail.com": 600}`. Null is none.
 */
export async function up(knex: Knex): Promise<void> {
  await knex.schema.alterTable('workspaces', (t) => {
    t.jsonb('domain_rates').nullable();
  });
}

export async function down(knex: Knex): Promise<void> {
  await knex.schema.alterTable('workspaces', (t) => {
    t.dropColumn('domain_rates');
  });
}
