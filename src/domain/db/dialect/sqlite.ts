import { mkdirSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname } from 'node:path';
import type { Knex } from 'knex';
import type { Dialect } from './dialect.js';

type Constructor = new (...args: any[]) => any; // eslint-disable-line @typescript-eslint/no-explicit-any

/**
 * knex's sqlite3 client, whose transactions start with BEGIN IMMEDIATE: every transaction takes the write lock
 * before it reads, so none ever has to upgrade a read snapshot — which fails at once with SQLITE_BUSY, without
 * waiting, when another connection wrote meanwhile (e.g. `emk sync-orders` beside `emk serve`). knex has no
 * option for it; the subclass overrides the one method that issues BEGIN (knex is pinned).
 */
function immediateSqliteClient(): Constructor {
  const require = createRequire(import.meta.url);
  const Client = require('knex/lib/dialects/sqlite3/index.js') as Constructor;
  const Transaction = require('knex/lib/dialects/sqlite3/execution/sqlite-transaction.js') as Constructor;
  class ImmediateTransaction extends Transaction {
    begin(connection: unknown) {
      return this.query(connection, 'BEGIN IMMEDIATE;');
    }
  }
  return class ImmediateClient extends Client {
    transaction(...args: unknown[]) {
      return new ImmediateTransaction(this, ...args);
    }
  };
}

/** Per-connection settings: WAL lets readers run beside the writer; FULL sync makes each commit durable. */
const PRAGMAS = [
  'PRAGMA journal_mode = WAL',
  'PRAGMA synchronous = FULL',
  'PRAGMA foreign_keys = ON',
  'PRAGMA busy_timeout = 10000',
];

interface RawSqliteConnection {
  run(sql: string, callback: (error: Error | null) => void): void;
}

function runSequentially(connection: RawSqliteConnection, statements: string[], done: (error: Error | null) => void) {
  const [first, ...rest] = statements;
  if (first === undefined) return done(null);
  connection.run(first, (error) => (error ? done(error) : runSequentially(connection, rest, done)));
}

export function sqliteDialect(filename: string): Dialect {
  return {
    name: 'sqlite',
    sharedByProcesses: false,
    // SQLite 3.32+ allows 32766 host parameters.
    maxBindings: 32_000,
    // SQLITE_MAX_COMPOUND_SELECT: knex's multi-row insert is `SELECT … UNION ALL SELECT …`.
    maxRowsPerInsert: 500,
    knexConfig() {
      if (filename !== ':memory:') mkdirSync(dirname(filename), { recursive: true });
      return {
        client: immediateSqliteClient() as unknown as typeof Knex.Client,
        connection: { filename },
        useNullAsDefault: true,
        // One connection: SQLite has one writer anyway, and the group-commit writer keeps it busy with few,
        // large transactions. Reads queue briefly behind a flush instead of failing with SQLITE_BUSY.
        pool: {
          min: 1,
          max: 1,
          afterCreate: (connection: RawSqliteConnection, done: (error: Error | null, c: unknown) => void) =>
            runSequentially(connection, PRAGMAS, (error) => done(error, connection)),
        },
      };
    },
    writeJson: (value) => JSON.stringify(value ?? null),
    readJson: <T>(value: unknown) => (typeof value === 'string' ? JSON.parse(value) : value) as T,
    readBoolean: (value) => value === 1 || value === true || value === '1',
    readNumber: (value) => Number(value ?? 0),
    isUniqueViolation: (error) =>
      error instanceof Error && /SQLITE_CONSTRAINT/.test(error.message) && /UNIQUE|PRIMARY KEY/.test(error.message),
    // A single connection is the single writer: nothing else can change the row mid-transaction.
    forUpdate: (query) => query,
    // Transactions begin IMMEDIATE (above): the lock is taken by BEGIN itself.
    writeConcurrency: 1,
  };
}
