import type { Knex } from 'knex';

/**
 * Users with roles, and verified senders (docs/api/auth.md, docs/api/senders.md).
 * - `users.role`: `owner` or `member`; every user there was registered a workspace, so existing rows are owners.
 *   A user an owner adds has no password until it uses its set-password token: its `password_hash` is the
 *   empty string, which no password matches.
 * - `password_tokens`: one-time set-password tokens, kept only as their SHA-256 hash, each with its expiry.
 * - `senders`: the domains a workspace may send from, each with the DKIM key pair made for it (the private key
 *   is kept for signing later; the public one is what the DNS record publishes).
 */
export async function up(knex: Knex): Promise<void> {
  await knex.schema.alterTable('users', (t) => {
    t.string('role', 16).notNullable().defaultTo('owner');
  });
  await knex.schema.createTable('password_tokens', (t) => {
    t.string('id', 36).primary();
    t.string('user_id', 36).notNullable().references('id').inTable('users').onDelete('CASCADE');
    t.string('token_hash', 64).notNullable().unique();
    t.bigInteger('created_at').notNullable();
    t.bigInteger('expires_at').notNullable();
    t.bigInteger('used_at').nullable();
    t.index(['user_id']);
  });
  await knex.schema.createTable('senders', (t) => {
    t.string('id', 36).primary();
    t.string('workspace_id', 36).notNullable().references('id').inTable('workspaces').onDelete('CASCADE');
    // Lower-case ASCII (an IDN in its xn-- form): one row per domain and workspace.
    t.string('domain', 253).notNullable();
    t.string('dkim_selector', 63).notNullable();
    t.text('dkim_public_key').notNullable();
    t.text('dkim_private_key').notNullable();
    t.bigInteger('created_at').notNullable();
    t.unique(['workspace_id', 'domain']);
  });
}

export async function down(knex: Knex): Promise<void> {
  await knex.schema.dropTable('senders');
  await knex.schema.dropTable('password_tokens');
  await knex.schema.alterTable('users', (t) => {
    t.dropColumn('role');
  });
}
