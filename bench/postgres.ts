import pg from 'pg';

/** Where the bench creates its PostgreSQL database; any database of the server serves as the admin connection. */
export const DEFAULT_BENCH_POSTGRES_URL = 'postgres://postgres@127.0.0.1:5432/postgres';

export interface BenchDatabase {
  url: string;
  drop(): Promise<void>;
}

const CONNECT_TIMEOUT_MS = 3_000;

export async function withAdmin<T>(adminUrl: string, work: (client: pg.Client) => Promise<T>): Promise<T> {
  const client = new pg.Client({ connectionString: adminUrl, connectionTimeoutMillis: CONNECT_TIMEOUT_MS });
  await client.connect();
  try {
    return await work(client);
  } finally {
    await client.end();
  }
}

export const quoteIdent = (name: string) => `"${name.replaceAll('"', '""')}"`;

/**
 * Creates a fresh database `name` (default `emk_bench_<pid>`) on the server of `adminUrl`. Resolves
 * `{ unreachable: reason }` when the server cannot be reached, so the bench can go on without PostgreSQL.
 */
export async function createBenchDatabase(
  adminUrl: string,
  name = `emk_bench_${process.pid}`,
): Promise<BenchDatabase | { unreachable: string }> {
  try {
    await withAdmin(adminUrl, async (client) => {
      await client.query(`DROP DATABASE IF EXISTS ${quoteIdent(name)}`);
      await client.query(`CREATE DATABASE ${quoteIdent(name)}`);
    });
  } catch (error) {
    return { unreachable: error instanceof Error ? error.message : String(error) };
  }
  const url = new URL(adminUrl);
  url.pathname = `/${name}`;
  return {
    url: url.toString(),
    drop: () => withAdmin(adminUrl, async (client) => void (await client.query(`DROP DATABASE IF EXISTS ${quoteIdent(name)} WITH (FORCE)`))),
  };
}
