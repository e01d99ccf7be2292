import knexFactory, { type Knex } from 'knex';
import { UsageError } from '../errors.js';
import type { Dialect } from './dialect/dialect.js';
import { sqliteDialect } from './dialect/sqlite.js';
import { postgresDialect } from './dialect/postgres.js';

/** What stores and services query through: the pool, or the caller's transaction. */
export type Db = Knex | Knex.Transaction;

export interface Database {
  knex: Knex;
  dialect: Dialect;
  /**
   * A second, small pool whose commits do not wait for the disk (PostgreSQL), for data that may be lost in a
   * crash: shared rate-limit counters. Opened on first use, closed with the database.
   */
  relaxedKnex(): Knex;
  /** Every write transaction starts here (on SQLite it begins IMMEDIATE: see dialect/sqlite.ts). */
  writeTransaction<T>(work: (trx: Knex.Transaction) => Promise<T>): Promise<T>;
  close(): Promise<void>;
}

export const DEFAULT_DATABASE_URL = 'sqlite:./data/emk.db';

/** `sqlite:<path>` or `postgres://user:pass@host:port/db` (CONTRACT §1). */
export function dialectFor(url: string): Dialect {
  if (url.startsWith('sqlite:')) {
    const path = url.slice('sqlite:'.length).replace(/^\/\/(?=\/)/, '');
    if (!path) throw new UsageError('database url sqlite:<path> needs a path');
    return sqliteDialect(path);
  }
  if (/^postgres(ql)?:\/\//.test(url)) return postgresDialect(url);
  throw new UsageError(`unsupported database url "${url}": use sqlite:<path> or postgres://…`);
}

export function openDatabase(url: string): Database {
  const dialect = dialectFor(url);
  const knex = knexFactory(dialect.knexConfig());
  let relaxed: Knex | null = null;
  return {
    knex,
    dialect,
    relaxedKnex: () => (relaxed ??= knexFactory(dialect.knexConfig({ asynchronousCommit: true, poolMax: 2 }))),
    writeTransaction: (work) => knex.transaction(work),
    async close() {
      await relaxed?.destroy();
      await knex.destroy();
    },
  };
}
