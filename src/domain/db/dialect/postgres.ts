import pg from 'pg';
import type { Knex } from 'knex';
import type { Dialect } from './dialect.js';

// Epoch-millisecond columns are bigint; they fit a JS number exactly (up to 2^53), so read them as numbers.
pg.types.setTypeParser(pg.types.builtins.INT8, (value: string) => Number(value));

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
      return { client: 'pg', connection: { connectionString: url, options: '-c jit=off' }, pool };
    },
    writeJson: (value) => JSON.stringify(value ?? null),
    readJson: <T>(value: unknown) => (typeof value === 'string' ? JSON.parse(value) : value) as T,
    readBoolean: (value) => value === true,
    readNumber: (value) => Number(value ?? 0),
    isUniqueViolation: (error) => (error as { code?: string } | null)?.code === '23505',
    jsonText: (column, field) => `(${column} ->> '${field}')`,
    forUpdate: (query) => query.forUpdate() as typeof query,
    bytewise: (column) => `${column} COLLATE "C"`,
    forShare: (query) => query.forShare() as typeof query,
    analyzeAfterBulkLoad: async (knex, tables) => {
      await knex.raw(`ANALYZE ${tables.map(() => '??').join(', ')}`, tables);
    },
    // Independent transactions on separate connections; row locks and unique keys keep them apart.
    writeConcurrency: 2,
  };
}
