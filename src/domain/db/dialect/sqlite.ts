import { createRequire } from 'node:module';
import type { Knex } from 'knex';
import { HeldWrites, type RunScript } from '../deferred-writes.js';
import type { WriteStats } from '../types.js';
import { readNullableNumber, readNumber, STALE_READ, type Dialect, type DriverFault } from './dialect.js';
import { READ_AHEAD_SETUP, ReadAhead } from './sqlite-read-ahead.js';
import { sqliteCatalog } from './sqlite-catalog.js';

/** The JSON path of a top-level key, quoted so dots and brackets in it are part of the name. */
const jsonPath = (key: string) => `$."${key}"`;

type Constructor = new (...args: any[]) => any; // eslint-disable-line @typescript-eslint/no-explicit-any

/**
 * knex's sqlite3 client with changes knex has no option for (knex is pinned, and test/sqlite-client.test.ts
 * checks the SQL; each override replaces one method):
 * - transactions begin IMMEDIATE: a transaction takes the write lock before any read inside it, so none ever
 *   has to upgrade a read snapshot, which fails at once with SQLITE_BUSY, without waiting, when another
 *   connection wrote meanwhile (e.g. `emk sync-orders` beside `emk serve`); a BEGIN that fails runs none of the
 *   work after it. Reads before the first write run outside, ahead of the held BEGIN (sqlite-read-ahead.ts);
 * - multi-row inserts are `VALUES (…), (…)` instead of knex's `SELECT … UNION ALL SELECT …` (written for
 *   SQLite before 3.7.11): cheaper to run, and not capped at 500 rows;
 * - every statement first sends the connection's held writes (deferred-writes.ts), but for those reads;
 * - statements run prepared, kept per connection (see PreparedStatements).
 * Each call makes a class of its own, so what it closes over (held writes, read-ahead state, prepared statements,
 * each kept per connection) belongs to one knex and, through the prototype, to the clients knex makes for its
 * transactions; `stats` counts its driver calls.
 */
function tunedSqliteClient(stats: WriteStats): Constructor {
  const require = createRequire(import.meta.url);
  const Client = require('knex/lib/dialects/sqlite3/index.js') as Constructor;
  const Transaction = require('knex/lib/dialects/sqlite3/execution/sqlite-transaction.js') as Constructor;
  const QueryCompiler = require('knex/lib/dialects/sqlite3/query/sqlite-querycompiler.js') as Constructor;

  class ImmediateTransaction extends Transaction {
    async begin(connection: unknown) {
      const result = await this.query(connection, 'BEGIN IMMEDIATE;');
      // knex rejects the transaction when BEGIN fails (SQLITE_BUSY) but still runs its work, outside any
      // transaction: statements that would autocommit while the caller is told it failed. Stop here instead.
      if (this.isCompleted()) throw new Error('BEGIN IMMEDIATE failed');
      return result;
    }
  }

  class ValuesQueryCompiler extends QueryCompiler {
    insert() {
      const rows: unknown = this.single.insert;
      if (!Array.isArray(rows) || rows.length < 2) return super.insert();
      const data = this._prepInsert(rows);
      if (typeof data === 'string' || data.columns.length === 0) return super.insert();
      const tuples = data.values.map(
        (values: unknown[]) =>
          `(${this.client.parameterize(values, this.client.valueForUndefined, this.builder, this.bindingsHolder)})`,
      );
      let sql = `${this.with()}insert into ${this.tableName} (${this.formatter.columnize(data.columns)}) values ${tuples.join(', ')}`;
      const { onConflict, ignore, merge, returning } = this.single;
      if (onConflict && ignore) sql += this._ignore(onConflict);
      else if (onConflict && merge) {
        sql += this._merge(merge.updates, onConflict, rows);
        const wheres = this.where();
        if (wheres) sql += ` ${wheres}`;
      }
      if (returning) sql += this._returning(returning);
      return { sql, returning };
    }
  }

  const heldWrites = new HeldWrites(stats);
  const readAhead = new ReadAhead(heldWrites);
  const runScript = readAhead.script(execScript);
  const preparedByConnection = new WeakMap<RawSqliteConnection, PreparedStatements>();
  const preparedStatementsOf = (connection: RawSqliteConnection): PreparedStatements => {
    let prepared = preparedByConnection.get(connection);
    if (!prepared) preparedByConnection.set(connection, (prepared = new PreparedStatements(connection)));
    return prepared;
  };

  return class TunedClient extends Client {
    get heldWrites(): HeldWrites {
      return heldWrites;
    }
    async _query(connection: object, obj: { sql: string; response?: unknown; context?: unknown }) {
      const step = readAhead.step(connection, obj.sql);
      if (step === 'done' || (step === 'run' && (await heldWrites.send(connection, obj.sql, runScript)).ran)) {
        obj.response = [];
        obj.context = {};
        return obj;
      }
      heldWrites.countStatement();
      return super._query(preparedStatementsOf(connection as RawSqliteConnection), obj);
    }
    async destroyRawConnection(connection: RawSqliteConnection) {
      await preparedStatementsOf(connection).finalizeAll();
      return super.destroyRawConnection(connection);
    }
    transaction(...args: unknown[]) {
      return new ImmediateTransaction(this, ...args);
    }
    queryCompiler(builder: unknown, formatter: unknown) {
      return new ValuesQueryCompiler(this, builder, formatter);
    }
  };
}

const DEFAULT_BUSY_TIMEOUT_MS = 10_000;

/**
 * Per-connection settings: WAL lets readers run beside the writer; FULL sync makes each commit durable; the
 * busy timeout is how long a statement waits for another connection's lock; a 32 MiB page cache (the default
 * is 2 MiB) keeps index pages of the big tables in memory during bulk writes; then the read-ahead guard's table.
 */
function pragmas(busyTimeoutMs: number): string[] {
  return [
    'PRAGMA journal_mode = WAL',
    'PRAGMA synchronous = FULL',
    'PRAGMA foreign_keys = ON',
    `PRAGMA busy_timeout = ${Math.round(busyTimeoutMs)}`,
    'PRAGMA cache_size = -32768',
    ...READ_AHEAD_SETUP,
  ];
}

/**
 * node-sqlite3 puts the result code in `code`. TOOBIG: a text or blob past the length limit; MISMATCH: a
 * value of the wrong type for a typed key column.
 */
function driverFault(error: unknown): DriverFault | null {
  const { code, message } = (error ?? {}) as { code?: unknown; message?: unknown };
  if (typeof message === 'string' && message.includes(STALE_READ)) return { kind: 'busy' };
  switch (code) {
    case 'SQLITE_CONSTRAINT':
      return typeof message === 'string' && /UNIQUE|PRIMARY KEY/.test(message) ? { kind: 'unique' } : null;
    case 'SQLITE_BUSY':
    case 'SQLITE_LOCKED':
      return { kind: 'busy' };
    case 'SQLITE_TOOBIG':
      return { kind: 'invalid_value', reason: 'length' };
    case 'SQLITE_MISMATCH':
      return { kind: 'invalid_value', reason: 'format' };
    default:
      return null;
  }
}

type RowsCallback = (this: unknown, error: Error | null, rows?: unknown) => void;

interface RawStatement {
  all(bindings: unknown[], callback: RowsCallback): void;
  run(bindings: unknown[], callback: RowsCallback): void;
  finalize(callback?: () => void): void;
}

interface RawSqliteConnection {
  run(sql: string, callback: (error: Error | null) => void): void;
  run(sql: string, bindings: unknown[], callback: RowsCallback): void;
  all(sql: string, bindings: unknown[], callback: RowsCallback): void;
  exec(sql: string, callback: (error: Error | null) => void): void;
  prepare(sql: string, callback: (error: Error | null) => void): RawStatement;
}

/** Statements kept prepared per connection, least recently used dropped first. */
const PREPARED_PER_CONNECTION = 256;
/** Longer statements (a bulk insert's VALUES) are seldom repeated word for word: they are prepared each time. */
const LONGEST_PREPARED_SQL = 4096;
/** Savepoint statements carry a name of their own each time (knex's `trx12`): kept, they would crowd out the rest. */
const NAMED_EACH_TIME = /^\s*(SAVEPOINT|RELEASE|ROLLBACK\s+TO)\b/i;

/**
 * The `all` and `run` knex calls on a connection, through statements prepared once and kept. node-sqlite3's
 * own `all(sql)` and `run(sql)` prepare the statement in one trip to its thread pool and run it in a second,
 * and each trip waits its turn of the event loop; under load that wait, not SQLite, is the cost (issue 16).
 * A kept statement runs in one trip and skips SQLite's parser. It is reset before each run (node-sqlite3 does
 * so when it binds) and runs to completion, so it holds no read snapshot between runs.
 */
class PreparedStatements {
  private readonly statements = new Map<string, Promise<RawStatement>>();

  constructor(private readonly connection: RawSqliteConnection) {}

  all(sql: string, bindings: unknown[], callback: RowsCallback): void {
    this.call('all', sql, bindings, callback);
  }

  run(sql: string, bindings: unknown[], callback: RowsCallback): void {
    this.call('run', sql, bindings, callback);
  }

  /** Before the connection closes: SQLite refuses to close a connection with statements still prepared. */
  async finalizeAll(): Promise<void> {
    const settled = await Promise.allSettled(this.statements.values());
    this.statements.clear();
    await Promise.all(settled.map((s) => (s.status === 'fulfilled' ? finalize(s.value) : undefined)));
  }

  private call(method: 'all' | 'run', sql: string, bindings: unknown[], callback: RowsCallback): void {
    if (sql.length > LONGEST_PREPARED_SQL || NAMED_EACH_TIME.test(sql)) return this.connection[method](sql, bindings, callback);
    // knex reads `lastID` and `changes` off the callback's `this`: the statement, as with the connection's own calls.
    this.statement(sql).then(
      (statement) => statement[method](bindings, callback),
      (error: Error) => callback.call({}, error),
    );
  }

  private statement(sql: string): Promise<RawStatement> {
    const kept = this.statements.get(sql);
    if (kept) {
      // Most recently used last.
      this.statements.delete(sql);
      this.statements.set(sql, kept);
      return kept;
    }
    const prepared = new Promise<RawStatement>((resolve, reject) => {
      const statement = this.connection.prepare(sql, (error) => (error ? reject(error) : resolve(statement)));
    });
    // A statement that does not prepare (a syntax error, a missing table) is not kept: the next call tries again.
    prepared.catch(() => this.statements.delete(sql));
    this.statements.set(sql, prepared);
    if (this.statements.size > PREPARED_PER_CONNECTION) {
      const [oldestSql, oldest] = this.statements.entries().next().value!;
      this.statements.delete(oldestSql);
      oldest.then(finalize, () => {});
    }
    return prepared;
  }
}

const finalize = (statement: RawStatement) => new Promise<void>((resolve) => statement.finalize(() => resolve()));

/** node-sqlite3's script call (the read-ahead takes part in it: see tunedSqliteClient). */
const execScript: RunScript = (connection, sql) =>
  new Promise((resolve, reject) => (connection as RawSqliteConnection).exec(sql, (error) => (error ? reject(error) : resolve(undefined))));

const NEEDS_ESCAPE = /['\0]/;

/**
 * A value as node-sqlite3 binds it, written as a literal: it binds a number as an integer only within 32 bits,
 * else as a real (`.0` keeps that type). A negative number is parenthesised so that `x - ?` can never become a
 * `--` comment; text holding NUL has none (the script is passed as a C string).
 */
function sqliteLiteral(value: unknown): string | null {
  switch (typeof value) {
    case 'string':
      // One scan for the common case: no quote to double, no NUL.
      if (!NEEDS_ESCAPE.test(value)) return `'${value}'`;
      return value.includes('\0') ? null : `'${value.replaceAll("'", "''")}'`;
    case 'number':
      if (!Number.isFinite(value)) return null;
      const text = Number.isInteger(value) && (value | 0) !== value && Math.abs(value) < 1e21 ? `${value}.0` : String(value);
      return value < 0 ? `(${text})` : text;
    case 'bigint':
      return value < 0n ? `(${value})` : String(value);
    case 'boolean':
      return value ? '1' : '0';
    default:
      return value === null || value === undefined ? 'NULL' : null;
  }
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
    // Inserts are multi-row VALUES (tunedSqliteClient): only the bind limit applies.
    maxRowsPerInsert: 32_000,
    catalog: sqliteCatalog,
    monthlyPartitions: null,
    // One read transaction: the copy is the database as of its start, whatever commits meanwhile.
    backupInto: async (db, file) => {
      await db.raw('VACUUM INTO ?', [file]);
    },
    knexConfig(options = {}) {
      const statements = pragmas(options.lockTimeoutMs ?? DEFAULT_BUSY_TIMEOUT_MS);
      return {
        client: tunedSqliteClient(options.writeStats ?? { driverCalls: 0, statements: 0 }) as unknown as typeof Knex.Client,
        connection: { filename },
        useNullAsDefault: true,
        // One connection: SQLite has one writer anyway, and the group-commit writer keeps it busy with few,
        // large transactions. Reads queue briefly behind a flush instead of failing with SQLITE_BUSY.
        pool: {
          min: 1,
          max: 1,
          afterCreate: (connection: RawSqliteConnection, done: (error: Error | null, c: unknown) => void) =>
            runSequentially(connection, statements, (error) => done(error, connection)),
        },
      };
    },
    writeJson: (value) => JSON.stringify(value ?? null),
    readJson: <T>(value: unknown) => (typeof value === 'string' ? JSON.parse(value) : value) as T,
    readBoolean: (value) => value === 1 || value === true || value === '1',
    readNumber,
    readNullableNumber,
    driverFault,
    rowsOf: <T>(result: unknown) => result as T[],
    jsonText: (column, field) => `CAST(json_extract(${column}, '$.${field}') AS TEXT)`,
    jsonFieldString: (column, key) => ({
      sql: `CASE WHEN json_type(${column}, ?) = 'text' THEN json_extract(${column}, ?) END`,
      bindings: [jsonPath(key), jsonPath(key)],
    }),
    jsonFieldNumber: (column, key) => ({
      sql: `CASE WHEN json_type(${column}, ?) IN ('integer', 'real') THEN json_extract(${column}, ?) END`,
      bindings: [jsonPath(key), jsonPath(key)],
    }),
    jsonFieldPresent: (column, key) => ({ sql: `COALESCE(json_type(${column}, ?), 'null') <> 'null'`, bindings: [jsonPath(key)] }),
    jsonFieldEquals: (column, key, value) =>
      typeof value === 'boolean'
        ? { sql: `COALESCE(json_type(${column}, ?), '') = ?`, bindings: [jsonPath(key), String(value)] }
        : {
            sql: `COALESCE(json_type(${column}, ?), '') IN (${typeof value === 'string' ? "'text'" : "'integer', 'real'"}) AND json_extract(${column}, ?) = ?`,
            bindings: [jsonPath(key), jsonPath(key), value],
          },
    jsonFieldHasElement: (column, key, value) => ({
      sql: `COALESCE(json_type(${column}, ?), '') = 'array' AND EXISTS (SELECT 1 FROM json_each(${column}, ?) AS element WHERE element.type = 'text' AND element.value = ?)`,
      bindings: [jsonPath(key), jsonPath(key), value],
    }),
    // A single connection is the single writer: nothing else can change the row mid-transaction.
    lockRows: async () => {},
    forUpdate: (query) => query,
    forUpdateSkipLocked: (query) => query,
    newIdSql:
      "lower(hex(randomblob(4))) || '-' || lower(hex(randomblob(2))) || '-4' || substr(lower(hex(randomblob(2))), 2) || '-' || " +
      "substr('89ab', 1 + (abs(random()) % 4), 1) || substr(lower(hex(randomblob(2))), 2) || '-' || lower(hex(randomblob(6)))",
    // BINARY, the default collation, compares UTF-8 bytes.
    bytewise: (column) => column,
    forShare: (query) => query,
    analyzeAfterBulkLoad: async () => {},
    // A JSON path error is SQLite's way to fail a statement on a condition (as the read-ahead guard does).
    failUnlessCount: (count, expected) => ({
      sql: `SELECT json_extract('{}', '$ ${STALE_READ} ' || n) FROM (${count.sql}) WHERE n <> ?`,
      bindings: [...count.bindings, expected],
    }),
    // SQLite prepares each statement of a script as it runs it: no planner to spare.
    plannedOnce: (_label, fragment) => fragment,
    plansFromStatistics: false,
    analysedRows: async () => 0,
    // Transactions begin IMMEDIATE (above): the lock is taken by BEGIN itself.
    writeConcurrency: 1,
    literal: sqliteLiteral,
    jsonRecordset: null,
  };
}
