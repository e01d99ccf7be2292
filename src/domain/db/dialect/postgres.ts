import { createRequire } from 'node:module';
import type pg from 'pg';
import type { Knex } from 'knex';
import { HeldWrites, type RunScript } from '../deferred-writes.js';
import type { WriteStats } from '../types.js';
import { readNullableNumber, readNumber, STALE_READ, type Dialect, type DriverFault, type InvalidValueReason } from './dialect.js';
import { PlannedOnce } from './postgres-planned-once.js';
import { postgresCatalog } from './postgres-catalog.js';
import { postgresMonthlyPartitions } from './postgres-partitions.js';

type Constructor = new (...args: any[]) => any; // eslint-disable-line @typescript-eslint/no-explicit-any

/** `$n` placeholders (knex's PostgreSQL form) filled with literals; null when a value has none or the SQL is unusual. */
function inlinePositional(sql: string, bindings: readonly unknown[] | undefined): string | null {
  // Dollar quoting or a `$n` past the bindings would make the textual substitution unsafe.
  if (sql.includes('$$')) return null;
  let failed = false;
  const out = sql.replace(/\$(\d+)/g, (_, n: string) => {
    const index = Number(n) - 1;
    const literal = index < (bindings?.length ?? 0) ? postgresLiteral(bindings![index]) : null;
    if (literal === null) failed = true;
    return literal ?? '';
  });
  return failed ? null : out;
}

/**
 * knex's pg client, changed in one way: every statement first sends the connection's held writes
 * (deferred-writes.ts), in the same round trip when the statement can be written with literals; a BEGIN is
 * itself held, so a transaction's first statement opens it. Statements planned once are prepared on the
 * connection before the first statement that executes them (postgres-planned-once.ts). Each call makes a class
 * of its own, so the held writes it closes over belong to one knex (and, through the prototype, to the clients
 * knex makes for its transactions); `stats` counts its driver calls.
 */
function tunedPgClient(stats: WriteStats, planned: PlannedOnce): Constructor {
  const Client = createRequire(import.meta.url)('knex/lib/dialects/postgres/index.js') as Constructor;
  const heldWrites = new HeldWrites(stats);
  /** A script of several statements goes as one simple query, one round trip; its last statement's result comes back. */
  const runScript: RunScript = async (connection, sql) => {
    await planned.prepareFor(connection as pg.Client, sql);
    const results = (await (connection as pg.Client).query(sql)) as pg.QueryResult | pg.QueryResult[];
    return Array.isArray(results) ? results[results.length - 1] : results;
  };
  return class TunedPgClient extends Client {
    get heldWrites(): HeldWrites {
      return heldWrites;
    }
    async _query(connection: object, obj: { sql: string; bindings?: unknown[]; options?: object; response?: unknown }) {
      if (/^\s*BEGIN\b/i.test(obj.sql)) {
        heldWrites.holdBegin(connection, obj.sql);
        obj.response = { command: 'BEGIN', rows: [], rowCount: null };
        return obj;
      }
      // Query options (a row mode, say) need the extended protocol.
      const inlined = () => (obj.options && Object.keys(obj.options).length > 0 ? null : inlinePositional(obj.sql, obj.bindings));
      const outcome = await heldWrites.send(connection, obj.sql, runScript, inlined);
      if (outcome.ran) {
        obj.response = outcome.result;
        return obj;
      }
      heldWrites.countStatement();
      await planned.prepareFor(connection as pg.Client, obj.sql);
      return super._query(connection, obj);
    }
  };
}

/**
 * A string literal whatever `standard_conforming_strings` says: with a backslash it is an escape string
 * (E'…', backslashes doubled), else a plain one.
 */
const quotePgString = (text: string) =>
  text.includes('\\') ? `E'${text.replaceAll('\\', '\\\\').replaceAll("'", "''")}'` : `'${text.replaceAll("'", "''")}'`;

/** node-postgres, loaded by its first use: a process on SQLite (most `emk` commands) never pays for loading it. */
let nodePostgres: { types: typeof pg.types; prepareValue(value: unknown): unknown } | null = null;
function loadNodePostgres(): NonNullable<typeof nodePostgres> {
  if (!nodePostgres) {
    const require = createRequire(import.meta.url);
    nodePostgres = { types: (require('pg') as typeof pg).types, prepareValue: (require('pg/lib/utils.js') as { prepareValue(value: unknown): unknown }).prepareValue };
  }
  return nodePostgres;
}

/**
 * A value as node-postgres would bind it: its text form (pg's own prepareValue) in quotes, a literal of unknown
 * type that PostgreSQL resolves from its context exactly as it resolves a parameter. Buffers and text holding
 * NUL have no literal form here.
 */
function postgresLiteral(value: unknown): string | null {
  const text = loadNodePostgres().prepareValue(value);
  if (text === null || text === undefined) return 'NULL';
  return typeof text === 'string' && !text.includes('\0') ? quotePgString(text) : null;
}

/**
 * Type parsing for our connections only (not a process-wide side effect): epoch-millisecond columns are
 * bigint, and they fit a JS number exactly (up to 2^53), so they are read as numbers.
 */
const types = {
  getTypeParser: (oid: number, format: string) => {
    const { types: pgTypes } = loadNodePostgres();
    return oid === pgTypes.builtins.INT8 ? (value: string) => Number(value) : pgTypes.getTypeParser(oid, format as 'text');
  },
};

/** SQLSTATEs of values a column cannot hold (class 22, data exception, and 54000 for an over-long index entry). */
const INVALID_VALUE: Record<string, InvalidValueReason> = {
  '22021': 'text', // character_not_in_repertoire: invalid byte sequence, NUL in text
  '22P05': 'text', // untranslatable_character: \u0000 in jsonb
  '22P02': 'format', // invalid_text_representation
  '22003': 'range', // numeric_value_out_of_range
  '22001': 'length', // string_data_right_truncation
  '54000': 'length', // program_limit_exceeded: a value too long for an index entry
};

/** serialization_failure, deadlock_detected, lock_not_available (lock_timeout). */
const BUSY = new Set(['40001', '40P01', '55P03']);

function driverFault(error: unknown): DriverFault | null {
  const { code, column, message } = (error ?? {}) as { code?: unknown; column?: unknown; message?: unknown };
  if (typeof message === 'string' && message.includes(STALE_READ)) return { kind: 'busy' };
  if (typeof code !== 'string') return null;
  if (code === '23505') return { kind: 'unique' };
  if (BUSY.has(code)) return { kind: 'busy' };
  const reason = INVALID_VALUE[code];
  if (!reason) return null;
  return typeof column === 'string' ? { kind: 'invalid_value', reason, column } : { kind: 'invalid_value', reason };
}

export function postgresDialect(url: string, poolMax = 10): Dialect {
  const planned = new PlannedOnce(postgresLiteral);
  return {
    name: 'postgres',
    sharedByProcesses: true,
    maxBindings: 65_000,
    // No row cap of its own: the bind limit is the bound.
    maxRowsPerInsert: 65_000,
    catalog: postgresCatalog,
    backupInto: null,
    monthlyPartitions: postgresMonthlyPartitions,
    knexConfig(options = {}) {
      const pool: Knex.PoolConfig = { min: 0, max: options.poolMax ?? poolMax };
      if (options.asynchronousCommit) {
        pool.afterCreate = (connection: pg.Client, done: (error: Error | null, connection: pg.Client) => void) =>
          connection.query('SET synchronous_commit = off').then(
            () => done(null, connection),
            (error: Error) => done(error, connection),
          );
      }
      // JIT compilation pays off for long analytic queries, not ours: it slowed feed counts
      // (docs/performance.md#postgresql-connections-without-jit).
      const settings = ['-c jit=off'];
      if (options.lockTimeoutMs !== undefined) settings.push(`-c lock_timeout=${Math.round(options.lockTimeoutMs)}`);
      const stats = options.writeStats ?? { driverCalls: 0, statements: 0 };
      return { client: tunedPgClient(stats, planned) as unknown as typeof Knex.Client, connection: { connectionString: url, options: settings.join(' '), types }, pool };
    },
    writeJson: (value) => JSON.stringify(value ?? null),
    readJson: <T>(value: unknown) => (typeof value === 'string' ? JSON.parse(value) : value) as T,
    readBoolean: (value) => value === true,
    readNumber,
    readNullableNumber,
    driverFault,
    rowsOf: <T>(result: unknown) => (result as pg.QueryResult).rows as T[],
    jsonText: (column, field) => `(${column} ->> '${field}')`,
    // `?::text`: `->` is also defined for integer indexes, so an untyped parameter would be ambiguous.
    jsonFieldString: (column, key) => ({
      sql: `CASE WHEN jsonb_typeof(${column} -> ?::text) = 'string' THEN ${column} ->> ?::text END`,
      bindings: [key, key],
    }),
    // CASE, not AND: it guarantees the cast only ever sees a number.
    jsonFieldNumber: (column, key) => ({
      sql: `CASE WHEN jsonb_typeof(${column} -> ?::text) = 'number' THEN (${column} ->> ?::text)::numeric END`,
      bindings: [key, key],
    }),
    jsonFieldPresent: (column, key) => ({ sql: `COALESCE(jsonb_typeof(${column} -> ?::text), 'null') <> 'null'`, bindings: [key] }),
    jsonFieldEquals: (column, key, value) => ({ sql: `COALESCE((${column} -> ?::text) = ?::jsonb, false)`, bindings: [key, JSON.stringify(value)] }),
    jsonFieldHasElement: (column, key, value) => ({
      sql: `COALESCE(jsonb_typeof(${column} -> ?::text), '') = 'array' AND (${column} -> ?::text) @> jsonb_build_array(?::text)`,
      bindings: [key, key, value],
    }),
    lockRows: async (statement) => {
      await statement;
    },
    forUpdate: (query) => query.forUpdate() as typeof query,
    forUpdateSkipLocked: (query) => query.forUpdate().skipLocked() as typeof query,
    newIdSql: 'gen_random_uuid()::text',
    bytewise: (column) => `${column} COLLATE "C"`,
    forShare: (query) => query.forShare() as typeof query,
    analyzeAfterBulkLoad: async (knex, tables) => {
      await knex.raw(`ANALYZE ${tables.map(() => '??').join(', ')}`, tables);
    },
    // The cast of text that is no number fails; its input is the counted n, so planning cannot fold it early.
    failUnlessCount: (count, expected) => ({
      sql: `SELECT CAST('${STALE_READ} ' || n AS integer) FROM (${count.sql}) AS counted WHERE n <> ?`,
      bindings: [...count.bindings, expected],
    }),
    plannedOnce: (label, fragment) => planned.statement(label, fragment),
    plansFromStatistics: true,
    // reltuples: -1 until the first VACUUM or ANALYZE.
    analysedRows: async (knex, table) => {
      const { rows } = await knex.raw('SELECT reltuples FROM pg_class WHERE oid = to_regclass(?)', [table]);
      return Math.max(0, Number(rows[0]?.reltuples ?? 0));
    },
    // Independent transactions on separate connections; row locks and unique keys keep them apart.
    writeConcurrency: 2,
    literal: postgresLiteral,
    jsonRecordset: 'json_populate_recordset(NULL::??, ?::json)',
  };
}
