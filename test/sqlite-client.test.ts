import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
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

/** Statements run prepared, kept per connection (PreparedStatements in src/domain/db/dialect/sqlite.ts). */
describe('the tuned client keeps statements prepared', () => {
  let dir: string;
  beforeAll(() => {
    dir = mkdtempSync(join(tmpdir(), 'emk-prepared-'));
  });
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  const open = (name: string) => knexFactory(sqliteDialect(join(dir, name)).knexConfig());

  /** A new database file with a `pairs` table holding `rows`. */
  async function openWithPairs(name: string, rows: Array<{ k: string; n: number }>): Promise<Knex> {
    const knex = open(name);
    await knex.schema.createTable('pairs', (t) => {
      t.string('k').primary();
      t.integer('n');
    });
    await knex('pairs').insert(rows);
    return knex;
  }

  /** Counts the driver's prepare calls on the pool's one connection. */
  async function countPrepares(knex: Knex): Promise<{ count: number }> {
    const connection = (await knex.client.acquireConnection()) as { prepare: (...args: unknown[]) => unknown };
    await knex.client.releaseConnection(connection);
    const counter = { count: 0 };
    const prepare = connection.prepare.bind(connection);
    connection.prepare = (...args: unknown[]) => {
      counter.count++;
      return prepare(...args);
    };
    return counter;
  }

  it('prepares a repeated statement once and binds each run its own values', async () => {
    const knex = await openWithPairs('repeat.db', [{ k: 'a', n: 1 }, { k: 'b', n: 2 }, { k: 'c', n: 3 }]);
    try {
      const prepares = await countPrepares(knex);
      for (const [k, n] of [['a', 1], ['b', 2], ['c', 3], ['a', 1]] as const) {
        expect(await knex('pairs').where({ k }).first()).toEqual({ k, n });
      }
      expect(prepares.count).toBe(1);
    } finally {
      await knex.destroy();
    }
  });

  it('gives each run of one statement its own row count, even when runs overlap', async () => {
    const knex = await openWithPairs('changes.db', [{ k: 'a', n: 1 }, { k: 'b', n: 1 }, { k: 'c', n: 2 }]);
    try {
      const counts = await knex.transaction((trx) =>
        Promise.all([1, 2, 3].map((n) => trx('pairs').where({ n }).update({ n: n + 10 }))),
      );
      expect(counts).toEqual([2, 1, 0]);
    } finally {
      await knex.destroy();
    }
  });

  it('fails a statement that does not prepare, and prepares it again once it can', async () => {
    const knex = open('missing.db');
    try {
      await expect(knex('later').select('*')).rejects.toMatchObject({ code: 'SQLITE_ERROR', message: expect.stringContaining('no such table') });
      await knex.schema.createTable('later', (t) => t.integer('n'));
      await knex('later').insert({ n: 7 });
      expect(await knex('later').select('*')).toEqual([{ n: 7 }]);
    } finally {
      await knex.destroy();
    }
  });

  it('keeps a statement usable after a run fails (a constraint), and answers many distinct statements', async () => {
    const knex = await openWithPairs('many.db', [{ k: 'a', n: 1 }]);
    await expect(knex('pairs').insert({ k: 'a', n: 2 })).rejects.toMatchObject({ code: 'SQLITE_CONSTRAINT' });
    await knex('pairs').insert({ k: 'b', n: 2 });
    // More distinct statements than a connection keeps: the oldest are finalized on the way.
    for (let i = 0; i < 300; i++) expect(await knex.raw(`select ${i} as v`)).toEqual([{ v: i }]);
    expect(await knex('pairs').orderBy('k')).toEqual([{ k: 'a', n: 1 }, { k: 'b', n: 2 }]);
    // SQLite refuses to close a connection while statements are prepared: the client finalizes them first. A
    // closed connection (the last one) checkpoints its write-ahead log and removes it.
    await knex.destroy();
    expect(existsSync(join(dir, 'many.db-wal'))).toBe(false);
    const reopened = open('many.db');
    try {
      expect(await reopened('pairs').count({ count: '*' })).toEqual([{ count: 2 }]);
    } finally {
      await reopened.destroy();
    }
  });
});
