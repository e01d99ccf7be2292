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
    knexConfig() {
      return { client: 'pg', connection: url, pool: { min: 0, max: poolMax } };
    },
    writeJson: (value) => JSON.stringify(value ?? null),
    readJson: <T>(value: unknown) => (typeof value === 'string' ? JSON.parse(value) : value) as T,
    readBoolean: (value) => value === true,
    readNumber: (value) => Number(value ?? 0),
    isUniqueViolation: (error) => (error as { code?: string } | null)?.code === '23505',
    forUpdate: (query) => query.forUpdate() as typeof query,
    relaxDurability: async (trx) => {
      await trx.raw('SET LOCAL synchronous_commit = off');
    },
    // Independent transactions on separate connections; row locks and unique keys keep them apart.
    writeConcurrency: 4,
  };
}
