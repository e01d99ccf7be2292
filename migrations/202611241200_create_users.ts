import type { Knex } from 'knex';

/**
 * Accounts (docs/api/auth.md): a user owns the workspace it registered; its password is kept only as an
 * scrypt hash. Refresh tokens are kept only as their SHA-256 hash, each used once; a family is the chain of
 * tokens one login started, revoked whole when a used token comes back. `server_secrets` holds secrets of the
 * deployment (the key that signs access tokens), created on first use, so every process on one database
 * shares them.
 */
export async function up(knex: Knex): Promise<void> {
  await knex.schema.createTable('users', (t) => {
    t.string('id', 36).primary();
    t.string('workspace_id', 36).notNullable().references('id').inTable('workspaces').onDelete('CASCADE');
    t.string('email', 320).notNullable();
    // Lower-cased email: one account per address, whatever its case.
    t.string('email_key', 320).notNullable().unique();
    t.string('password_hash', 255).notNullable();
    t.bigInteger('created_at').notNullable();
    t.index(['workspace_id']);
  });
  await knex.schema.createTable('refresh_tokens', (t) => {
    t.string('id', 36).primary();
    t.string('family_id', 36).notNullable();
    t.string('user_id', 36).notNullable().references('id').inTable('users').onDelete('CASCADE');
    t.string('token_hash', 64).notNullable().unique();
    t.bigInteger('created_at').notNullable();
    t.bigInteger('expires_at').notNullable();
    t.bigInteger('used_at').nullable();
    t.bigInteger('revoked_at').nullable();
    t.index(['family_id']);
    t.index(['user_id']);
  });
  await knex.schema.createTable('server_secrets', (t) => {
    t.string('name', 64).primary();
    t.string('secret', 128).notNullable();
    t.bigInteger('created_at').notNullable();
  });
}

export async function down(knex: Knex): Promise<void> {
  await knex.schema.dropTable('server_secrets');
  await knex.schema.dropTable('refresh_tokens');
  await knex.schema.dropTable('users');
}
