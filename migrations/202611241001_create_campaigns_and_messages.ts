import type { Knex } from 'knex';

/**
 * Campaigns and the messages sent for campaigns and flows. A message row is written before anything leaves:
 * its `dedupe_key` (campaign × contact, or enrolment × step) is unique, so no recipient gets one campaign or
 * flow step twice, however many workers run and however often a job is retried.
 */
export async function up(knex: Knex): Promise<void> {
  await knex.schema.createTable('campaigns', (t) => {
    t.string('id', 36).primary();
    t.string('workspace_id', 36).notNullable().references('id').inTable('workspaces').onDelete('CASCADE');
    t.string('name', 255).notNullable();
    t.text('subject').notNullable();
    t.text('html').notNullable();
    t.text('text').nullable();
    t.string('segment_id', 36).nullable();
    t.string('from_email', 320).nullable();
    t.string('from_name', 255).nullable();
    t.string('status', 16).notNullable();
    t.bigInteger('send_at').nullable();
    t.bigInteger('started_at').nullable();
    t.bigInteger('sent_at').nullable();
    t.integer('recipients').nullable();
    t.integer('skipped').notNullable().defaultTo(0);
    t.bigInteger('created_at').notNullable();
    t.bigInteger('updated_at').notNullable();
    t.index(['workspace_id', 'created_at']);
  });
  await knex.schema.createTable('messages', (t) => {
    t.string('id', 36).primary();
    t.string('workspace_id', 36).notNullable().references('id').inTable('workspaces').onDelete('CASCADE');
    t.string('contact_id', 36).notNullable().references('id').inTable('contacts').onDelete('CASCADE');
    t.string('campaign_id', 36).nullable().references('id').inTable('campaigns').onDelete('CASCADE');
    t.string('flow_id', 36).nullable();
    t.string('enrollment_id', 36).nullable();
    t.string('dedupe_key', 120).notNullable().unique();
    // A campaign's recipients are cut into batches: one worker job sends one batch.
    t.integer('batch').nullable();
    t.string('message_type', 16).notNullable();
    t.string('to_email', 320).notNullable();
    t.text('subject').nullable();
    t.text('html').nullable();
    t.text('text').nullable();
    t.string('status', 16).notNullable();
    t.text('error').nullable();
    t.bigInteger('sent_at').nullable();
    t.bigInteger('opened_at').nullable();
    t.bigInteger('clicked_at').nullable();
    t.bigInteger('created_at').notNullable();
    t.bigInteger('updated_at').notNullable();
    t.index(['campaign_id', 'batch']);
    t.index(['campaign_id', 'status']);
    t.index(['flow_id']);
    t.index(['workspace_id', 'created_at']);
    t.index(['contact_id', 'created_at']);
  });
  await knex.schema.createTable('suppressions', (t) => {
    t.string('workspace_id', 36).notNullable().references('id').inTable('workspaces').onDelete('CASCADE');
    t.string('email_key', 320).notNullable();
    t.string('email', 320).notNullable();
    t.string('reason', 64).notNullable();
    t.bigInteger('created_at').notNullable();
    t.primary(['workspace_id', 'email_key']);
    t.index(['workspace_id', 'created_at']);
  });
  // Reports count opens and clicks per campaign and flow.
  await knex.schema.alterTable('engagements', (t) => {
    t.index(['campaign_id', 'kind'], 'engagements_campaign_index', { predicate: knex.whereNotNull('campaign_id') });
    t.index(['flow_id', 'kind'], 'engagements_flow_index', { predicate: knex.whereNotNull('flow_id') });
  });
}

export async function down(knex: Knex): Promise<void> {
  await knex.schema.alterTable('engagements', (t) => {
    t.dropIndex(['campaign_id', 'kind'], 'engagements_campaign_index');
    t.dropIndex(['flow_id', 'kind'], 'engagements_flow_index');
  });
  await knex.schema.dropTable('suppressions');
  await knex.schema.dropTable('messages');
  await knex.schema.dropTable('campaigns');
}
