import type { Knex } from 'knex';

/**
 * Console sessions (docs/console.md): a signed-in user's browser session, kept only as the SHA-256 hash of the
 * opaque token its cookie carries. A session ends at sign-out (`revoked_at`), after 12 hours without a page
 * (`last_seen_at`) or at `expires_at` whatever its use; a removed user's sessions go with it.
 */
export async function up(knex: Knex): Promise<void> {
  await knex.schema.createTable('console_sessions', (t) => {
    t.string('id', 36).primary();
    t.string('user_id', 36).notNullable().references('id').inTable('users').onDelete('CASCADE');
    t.string('token_hash', 64).notNullable().unique();
    t.bigInteger('created_at').notNullable();
    t.bigInteger('last_seen_at').notNullable();
    t.bigInteger('expires_at').notNullable();
    t.bigInteger('revoked_at').nullable();
    t.index(['user_id']);
  });
}

export async function down(knex: Knex): Promise<void> {
  await knex.schema.dropTable('console_sessions');
}
