import type { Knex } from 'knex';

/**
 * Flows and their enrolments (docs/flows.md). An enrolment's `dedupe_key` is unique: one per trigger fact, or
 * one per contact for `reentry: once`, so a fact consumed twice or by two processes enrols once. Outbox facts
 * that could not be consumed keep their error.
 */
export async function up(knex: Knex): Promise<void> {
  await knex.schema.createTable('flows', (t) => {
    t.string('id', 36).primary();
    t.string('workspace_id', 36).notNullable().references('id').inTable('workspaces').onDelete('CASCADE');
    t.string('name', 255).notNullable();
    t.string('status', 16).notNullable();
    t.string('trigger_type', 32).notNullable();
    t.jsonb('trigger').notNullable();
    t.jsonb('steps').notNullable();
    t.string('message_type', 16).notNullable();
    t.string('reentry', 16).notNullable();
    t.jsonb('filters').nullable();
    t.double('smart_sending_hours').notNullable().defaultTo(0);
    // The last outbox fact recorded before the flow last went live: segment_entered flows enrol only those
    // who enter after it (an order of facts, free of any process's clock).
    t.bigInteger('live_after_fact').nullable();
    // Email steps skipped by rule (no message row): the report's `skipped`.
    t.integer('skipped').notNullable().defaultTo(0);
    // A deleted flow is kept (messages and attributed orders name it) but answers 404.
    t.bigInteger('deleted_at').nullable();
    t.bigInteger('created_at').notNullable();
    t.bigInteger('updated_at').notNullable();
    t.index(['workspace_id', 'created_at']);
    // The outbox consumer looks up the live flows of a workspace by trigger type.
    t.index(['workspace_id', 'trigger_type', 'status']);
  });
  await knex.schema.createTable('flow_enrollments', (t) => {
    t.string('id', 36).primary();
    t.string('workspace_id', 36).notNullable().references('id').inTable('workspaces').onDelete('CASCADE');
    t.string('flow_id', 36).notNullable().references('id').inTable('flows').onDelete('CASCADE');
    t.string('contact_id', 36).notNullable().references('id').inTable('contacts').onDelete('CASCADE');
    t.string('dedupe_key', 120).notNullable().unique();
    t.bigInteger('trigger_fact_id').nullable();
    t.string('trigger_event_id', 64).nullable();
    // What the templates see of the trigger: event, order, cart.
    t.jsonb('context').notNullable();
    t.string('status', 16).notNullable();
    t.integer('current_step').notNullable().defaultTo(0);
    t.bigInteger('next_run_at').nullable();
    t.string('exit_reason', 32).nullable();
    t.bigInteger('created_at').notNullable();
    t.bigInteger('updated_at').notNullable();
    t.index(['flow_id', 'created_at']);
    t.index(['flow_id', 'status']);
    t.index(['contact_id', 'status']);
  });
  await knex.schema.alterTable('trigger_outbox', (t) => {
    t.text('error').nullable();
  });
  // Smart sending asks when a contact last got a marketing message.
  await knex.schema.alterTable('messages', (t) => {
    t.index(['contact_id', 'message_type', 'sent_at'], 'messages_contact_marketing_index');
  });
}

export async function down(knex: Knex): Promise<void> {
  await knex.schema.alterTable('messages', (t) => {
    t.dropIndex(['contact_id', 'message_type', 'sent_at'], 'messages_contact_marketing_index');
  });
  await knex.schema.alterTable('trigger_outbox', (t) => {
    t.dropColumn('error');
  });
  await knex.schema.dropTable('flow_enrollments');
  await knex.schema.dropTable('flows');
}
