import type { Knex } from 'knex';

/**
 * Relay webhooks (docs/api/relay-webhooks.md, docs/email.md "Deliverability"): bounces and complaints that
 * SES, Postmark, SendGrid and Mailgun report after the SMTP hand-over.
 * - `relay_webhooks`: one endpoint per workspace and relay account, with what authenticates its calls (a
 *   secret or a public key); an SES endpoint also keeps the SNS subscription it was asked to confirm.
 * - `relay_events`: the key of every relay event already acted on (the provider's event id), so a redelivery
 *   changes nothing more.
 * - `messages.soft_bounces`: temporary failures a relay reported for the message (they change nothing else);
 *   `messages.delivered_at`: when the relay said the receiving server took it (its first Delivery event).
 */
export async function up(knex: Knex): Promise<void> {
  await knex.schema.createTable('relay_webhooks', (t) => {
    t.string('id', 36).primary();
    t.string('workspace_id', 36).notNullable().references('id').inTable('workspaces').onDelete('CASCADE');
    t.string('provider', 16).notNullable();
    t.text('secret').nullable();
    t.text('public_key').nullable();
    // SES: the SNS topic (pinned by the first subscription confirmed) and the confirmation link SNS sent.
    t.string('topic_arn', 256).nullable();
    t.text('subscribe_url').nullable();
    t.bigInteger('confirmed_at').nullable();
    t.bigInteger('created_at').notNullable();
    t.index(['workspace_id', 'created_at']);
  });
  await knex.schema.createTable('relay_events', (t) => {
    t.string('webhook_id', 36).notNullable().references('id').inTable('relay_webhooks').onDelete('CASCADE');
    t.string('event_key', 300).notNullable();
    t.bigInteger('created_at').notNullable();
    t.primary(['webhook_id', 'event_key']);
  });
  await knex.schema.alterTable('messages', (t) => {
    t.integer('soft_bounces').notNullable().defaultTo(0);
    t.bigInteger('delivered_at').nullable();
  });
}

export async function down(knex: Knex): Promise<void> {
  await knex.schema.alterTable('messages', (t) => {
    t.dropColumn('delivered_at');
    t.dropColumn('soft_bounces');
  });
  await knex.schema.dropTable('relay_events');
  await knex.schema.dropTable('relay_webhooks');
}
