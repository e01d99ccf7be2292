import knexFactory, { type Knex } from 'knex';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { deferWrite } from '../src/domain/db/deferred-writes.js';
import { dialectFor } from '../src/domain/db/database.js';
import type { Dialect } from '../src/domain/db/dialect/dialect.js';
import { createTestDatabase, DIALECTS, type TestDatabase } from './helpers/test-databases.js';

/**
 * Statements planned once per connection (PostgreSQL): sent as EXECUTE of a statement prepared on the connection
 * the first time, held with a transaction's writes or run on their own, with the same effects as the plain
 * statement; PostgreSQL switches to a generic plan (no more planning) after five runs.
 */
describe.runIf(DIALECTS.includes('postgres'))('statements planned once [postgres]', () => {
  let database: TestDatabase;
  let knex: Knex;
  // One dialect throughout: the statements it plans once are prepared by the clients it configures.
  let dialect: Dialect;

  beforeAll(async () => {
    database = await createTestDatabase('postgres');
    dialect = dialectFor(database.url);
    // One connection: the session whose prepared statements the test reads.
    knex = knexFactory(dialect.knexConfig({ poolMax: 1 }));
    await knex.schema.createTable('planned_probe', (t) => {
      t.string('k').primary();
      t.integer('n').notNullable();
    });
    await knex('planned_probe').insert([
      { k: 'a', n: 0 },
      { k: 'b', n: 0 },
      { k: 'what?', n: 0 },
    ]);
  });
  afterAll(async () => {
    await knex?.destroy();
    await database?.drop();
  });

  const add = (by: number, keys: string[]) =>
    dialect.plannedOnce('probe_add', { sql: `UPDATE planned_probe SET n = n + ? WHERE k IN (${keys.map(() => '?').join(', ')})`, bindings: [by, ...keys] });
  const counts = async () => Object.fromEntries((await knex('planned_probe').orderBy('k')).map((r: { k: string; n: number }) => [r.k, r.n]));
  const prepared = async () =>
    (await knex.raw(`SELECT name, statement, generic_plans, custom_plans FROM pg_prepared_statements WHERE name LIKE 'emk_probe_add%' ORDER BY name`)).rows as Array<{
      name: string;
      statement: string;
      generic_plans: number;
      custom_plans: number;
    }>;

  it('runs held with a transaction, alone, and with a question mark in a value; prepared once, then planned no more', async () => {
    const statement = add(1, ['a', 'b']);
    expect(statement.sql).toMatch(/^EXECUTE emk_probe_add_\d+\('1', 'a', 'b'\)$/);
    expect(statement.bindings).toEqual([]);
    for (let i = 0; i < 7; i++) {
      await knex.transaction(async (trx) => {
        await deferWrite(dialect, trx, trx.raw(statement.sql, statement.bindings as never[]));
        await trx('planned_probe').where({ k: 'a' }).first();
      });
    }
    const alone = add(10, ['b', 'what?']);
    await deferWrite(dialect, knex, knex.raw(alone.sql, alone.bindings as never[]));
    expect(await counts()).toEqual({ a: 7, b: 17, 'what?': 10 });

    const rows = await prepared();
    // One statement per text: the two lists of two keys share it, whatever the values.
    expect(rows).toHaveLength(1);
    expect(rows[0]!.statement).toMatch(/PREPARE emk_probe_add_\d+ AS UPDATE planned_probe SET n = n \+ \$1 WHERE k IN \(\$2, \$3\)/);
    expect(rows[0]!.custom_plans).toBe(5);
    expect(Number(rows[0]!.generic_plans)).toBeGreaterThanOrEqual(3);
  });

  it('a rolled-back transaction undoes its EXECUTE and leaves the statement prepared; another list length is another statement', async () => {
    const before = await counts();
    await expect(
      knex.transaction(async (trx) => {
        const statement = add(100, ['a']);
        await deferWrite(dialect, trx, trx.raw(statement.sql, statement.bindings as never[]));
        await trx('planned_probe').where({ k: 'a' }).first();
        throw new Error('undo');
      }),
    ).rejects.toThrow('undo');
    expect(await counts()).toEqual(before);
    const again = add(1, ['a']);
    await knex.transaction((trx) => deferWrite(dialect, trx, trx.raw(again.sql, again.bindings as never[])));
    expect((await counts()).a).toBe(before.a! + 1);
    expect((await prepared()).map((r) => r.statement.match(/\(\$2(, \$\d)*\)/)![0])).toEqual(['($2, $3)', '($2)']);
  });

  it('a value without a literal form leaves the statement as it is, planned each time', () => {
    const statement = add(1, ['nul\0byte']);
    expect(statement.sql).toMatch(/^UPDATE planned_probe/);
    expect(statement.bindings).toEqual([1, 'nul\0byte']);
  });
});
