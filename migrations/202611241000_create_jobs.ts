import type { Knex } from 'knex';

/**
 * The worker's durable queue: a job is a row written in the transaction that made it necessary, claimed by
 * lease (locked_by until locked_until), deleted when done, kept with failed_at when it gave up.
 */
export async function up(knex: Knex): Promise<void> {
  await knex.schema.createTable('jobs', (t) => {
    t.bigIncrements('id');
    t.string('kind', 64).notNullable();
    t.jsonb('payload').notNullable();
    t.bigInteger('run_at').notNullable();
    t.integer('attempts').notNullable().defaultTo(0);
    t.integer('max_attempts').notNullable();
    t.string('locked_by', 100).nullable();
    t.bigInteger('locked_until').nullable();
    t.text('last_error').nullable();
    t.bigInteger('failed_at').nullable();
    t.bigInteger('created_at').notNullable();
    // The claim: due jobs that have not given up, oldest first.
    t.index(['failed_at', 'run_at']);
  });
}

export async function down(knex: Knex): Promise<void> {
  await knex.schema.dropTable('jobs');
}
