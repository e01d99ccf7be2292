import type { Knex } from 'knex';

/**
 * A/B tests of campaigns (docs/email.md, A/B tests): a campaign may carry 2 to 4 variants (each overriding its
 * subject and/or html) and the test's settings; the winner's index once chosen, and when the test ends (the test
 * group sent + the wait). Each message names the variant it got (null: a campaign without variants, a flow), and
 * an order credited to a message keeps that message's variant (the message goes when its contact is erased; the
 * order and its credit stay, so a variant's revenue must not depend on the message row).
 */
export async function up(knex: Knex): Promise<void> {
  await knex.schema.alterTable('campaigns', (t) => {
    t.jsonb('variants').nullable();
    t.jsonb('ab_test').nullable();
    t.integer('ab_winner').nullable();
    t.bigInteger('ab_test_ends_at').nullable();
  });
  await knex.schema.alterTable('messages', (t) => {
    t.integer('variant').nullable();
  });
  await knex.schema.alterTable('orders', (t) => {
    t.integer('attributed_variant').nullable();
  });
}

export async function down(knex: Knex): Promise<void> {
  await knex.schema.alterTable('orders', (t) => {
    t.dropColumn('attributed_variant');
  });
  await knex.schema.alterTable('messages', (t) => {
    t.dropColumn('variant');
  });
  await knex.schema.alterTable('campaigns', (t) => {
    t.dropColumn('ab_test_ends_at');
    t.dropColumn('ab_winner');
    t.dropColumn('ab_test');
    t.dropColumn('variants');
  });
}
