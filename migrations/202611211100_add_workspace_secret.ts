import { randomBytes } from 'node:crypto';
import type { Knex } from 'knex';

/** A per-workspace secret that signs identity tokens and tracking links. */
export async function up(knex: Knex): Promise<void> {
  await knex.schema.alterTable('workspaces', (t) => {
    t.string('secret', 64).notNullable().defaultTo('');
  });
  const workspaces = await knex('workspaces').select('id');
  for (const { id } of workspaces) {
    await knex('workspaces').where({ id }).update({ secret: randomBytes(32).toString('hex') });
  }
}

export async function down(knex: Knex): Promise<void> {
  await knex.schema.alterTable('workspaces', (t) => {
    t.dropColumn('secret');
  });
}
