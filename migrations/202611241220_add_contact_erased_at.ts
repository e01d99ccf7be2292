import type { Knex } from 'knex';

/**
 * Erasure (docs/api/data-rights.md): an erased contact stays as a tombstone row, with no personal data, so the
 * orders that keep its `contact_id` (and the revenue reports that read them) do not change. `erased_at` marks
 * it; every read of contacts leaves such rows out.
 */
export async function up(knex: Knex): Promise<void> {
  await knex.schema.alterTable('contacts', (t) => {
    t.bigInteger('erased_at').nullable();
  });
}

export async function down(knex: Knex): Promise<void> {
  await knex.schema.alterTable('contacts', (t) => {
    t.dropColumn('erased_at');
  });
}
