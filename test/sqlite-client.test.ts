import knexFactory, { type Knex } from 'knex';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { sqliteDialect } from '../src/domain/db/dialect/sqlite.js';

/**
 * The SQL of the tuned sqlite3 client (src/domain/db/dialect/sqlite.ts), which overrides knex internals:
 * knex is pinned, and an upgrade that changes what these methods produce fails here first.
 */
describe('the tuned knex sqlite3 client', () => {
  let knex: Knex;
  const statements: string[] = [];

  beforeAll(async () => {
    knex = knexFactory(sqliteDialect(':memory:').knexConfig());
    knex.on('query', (query: { sql: string }) => statements.push(query.sql));
    await knex.schema.createTable('pairs', (t) => {
      t.string('k').primary();
      t.integer('n');
    });
  });
  afterAll(() => knex.destroy());

  const rows = [
    { k: 'a', n: 1 },
    { k: 'b', n: 2 },
  ];

  it('writes a multi-row insert as one VALUES list', async () => {
    const query = knex('pairs').insert(rows);
    expect(query.toSQL().sql).toBe('insert into `pairs` (`k`, `n`) values (?, ?), (?, ?)');
    await query;
    expect(await knex('pairs').orderBy('k')).toEqual(rows);
  });

  it('writes a multi-row upsert (merge) with returning', async () => {
    const query = knex('pairs')
      .insert([
        { k: 'b', n: 20 },
        { k: 'c', n: 3 },
      ])
      .onConflict('k')
      .merge()
      .returning(['k', 'n']);
    expect(query.toSQL().sql).toBe(
      'insert into `pairs` (`k`, `n`) values (?, ?), (?, ?) on conflict (`k`) do update set `k` = excluded.`k`, `n` = excluded.`n` returning `k`, `n`',
    );
    expect(await query).toEqual([
      { k: 'b', n: 20 },
      { k: 'c', n: 3 },
    ]);
  });

  it('writes a multi-row upsert (merge of some columns, with a where) and an ignore', async () => {
    const merge = knex('pairs').insert(rows).onConflict('k').merge(['n']).where('pairs.n', '<', 10).returning('k');
    expect(merge.toSQL().sql).toBe(
      'insert into `pairs` (`k`, `n`) values (?, ?), (?, ?) on conflict (`k`) do update set `n` = excluded.`n` where `pairs`.`n` < ? returning `k`',
    );
    // 'a' (n = 1) is updated; 'b' (n = 20) fails the where and is left.
    expect(await merge).toEqual([{ k: 'a' }]);

    const ignore = knex('pairs').insert([{ k: 'a', n: 100 }, { k: 'd', n: 4 }]).onConflict('k').ignore().returning('k');
    expect(ignore.toSQL().sql).toBe('insert into `pairs` (`k`, `n`) values (?, ?), (?, ?) on conflict (`k`) do nothing returning `k`');
    expect(await ignore).toEqual([{ k: 'd' }]);
    expect(await knex('pairs').orderBy('k')).toEqual([
      { k: 'a', n: 1 },
      { k: 'b', n: 20 },
      { k: 'c', n: 3 },
      { k: 'd', n: 4 },
    ]);
  });

  it('begins transactions IMMEDIATE', async () => {
    statements.length = 0;
    await knex.transaction((trx) => trx('pairs').where({ k: 'a' }).first());
    expect(statements[0]).toBe('BEGIN IMMEDIATE;');
  });
});
