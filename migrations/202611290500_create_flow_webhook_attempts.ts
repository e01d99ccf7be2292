import type { Knex } from 'knex';

/**
 * Each call of a flow's webhook step (docs/flows.md, Webhook steps): which enrolment and step, which attempt,
 * the answer's status or the error, how long it took. `GET /flows/{id}/webhook-attempts` lists them newest first.
 * Enrolments keep their integer `current_step`: it is now a position in the flow's steps flattened (a branch, then
 * its `yes` steps, then its `no` steps), which for flows without branches is the index it always was, so no
 * stored position changes.
 */
export async function up(knex: Knex): Promise<void> {
  await knex.schema.createTable('flow_webhook_attempts', (t) => {
    t.string('id', 36).primary();
    t.string('workspace_id', 36).notNullable().references('id').inTable('workspaces').onDelete('CASCADE');
    t.string('flow_id', 36).notNullable().references('id').inTable('flows').onDelete('CASCADE');
    t.string('enrollment_id', 36).notNullable().references('id').inTable('flow_enrollments').onDelete('CASCADE');
    t.integer('step').notNullable();
    t.integer('attempt').notNullable();
    t.integer('status_code').nullable();
    t.string('error', 500).nullable();
    t.integer('duration_ms').notNullable();
    t.bigInteger('created_at').notNullable();
    t.index(['flow_id', 'created_at']);
    t.index(['enrollment_id']);
  });
}

export async function down(knex: Knex): Promise<void> {
  await knex.schema.dropTable('flow_webhook_attempts');
}
