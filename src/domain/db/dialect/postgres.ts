import pg from 'pg';
import type { Knex } from 'knex';
import { readNullableNumber, readNumber, type Dialect, type DriverFault, type InvalidValueReason } from './dialect.js';

/**
 * Type parsing for our connections only (not a process-wide side effect): epoch-millisecond columns are
 * bigint, and they fit a JS number exactly (up to 2^53), so they are read as numbers.
 */
const types = {
  getTypeParser: (oid: number, format: string) =>
    oid === pg.types.builtins.INT8 ? (value: string) => Number(value) : pg.types.getTypeParser(oid, format as 'text'),
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
  const { code, column } = (error ?? {}) as { code?: unknown; column?: unknown };
  if (typeof code !== 'string') return null;
  if (code === '23505') return { kind: 'unique' };
  if (BUSY.has(code)) return { kind: 'busy' };
  const reason = INVALID_VALUE[code];
  if (!reason) return null;
  return typeof column === 'string' ? { kind: 'invalid_value', reason, column } : { kind: 'invalid_value', reason };
}

export function postgresDialect(url: string, poolMax = 10): Dialect {
  return {
    name: 'postgres',
    sharedByProcesses: true,
    maxBindings: 65_000,
    // No row cap of its own: the bind limit is the bound.
    maxRowsPerInsert: 65_000,
    knexConfig(options = {}) {
      const pool: Knex.PoolConfig = { min: 0, max: options.poolMax ?? poolMax };
      if (options.asynchronousCommit) {
        pool.afterCreate = (connection: pg.Client, done: (error: Error | null, connection: pg.Client) => void) =>
          connection.query('SET synchronous_commit = off').then(
            () => done(null, connection),
            (error: Error) => done(error, connection),
          );
      }
      // JIT compilation pays off for long analytic queries, not ours: it added ~200 ms to feed counts.
      const settings = ['-c jit=off'];
      if (options.lockTimeoutMs !== undefined) settings.push(`-c lock_timeout=${Math.round(options.lockTimeoutMs)}`);
      return { client: 'pg', connection: { connectionString: url, options: settings.join(' '), types }, pool };
    },
    writeJson: (value) => JSON.stringify(value ?? null),
    readJson: <T>(value: unknown) => (typeof value === 'string' ? JSON.parse(value) : value) as T,
    readBoolean: (value) => value === true,
    readNumber,
    readNullableNumber,
    driverFault,
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
    forUpdate: (query) => query.forUpdate() as typeof query,
    forUpdateSkipLocked: (query) => query.forUpdate().skipLocked() as typeof query,
    newIdSql: 'gen_random_uuid()::text',
    bytewise: (column) => `${column} COLLATE "C"`,
    forShare: (query) => query.forShare() as typeof query,
    analyzeAfterBulkLoad: async (knex, tables) => {
      await knex.raw(`ANALYZE ${tables.map(() => '??').join(', ')}`, tables);
    },
    // Independent transactions on separate connections; row locks and unique keys keep them apart.
    writeConcurrency: 2,
  };
}
