import { mkdirSync } from 'node:fs';
import { dirname } from 'node:path';
import type { Knex } from 'knex';
import type { Dialect } from './dialect.js';

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
        client: 'sqlite3',
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
    relaxDurability: async () => {},
    claimWriteLock: async (trx) => {
      // A write statement that changes nothing still takes the lock (waiting up to busy_timeout).
      await trx.raw('UPDATE workspaces SET id = id WHERE 0');
    },
  };
}
