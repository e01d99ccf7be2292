import pg from 'pg';
import { afterEach } from 'vitest';

/**
 * Fails the test during which a query was sent on a PostgreSQL connection still running another: statements
 * raced on one connection (a `Promise.all` over one transaction). node-postgres queues them for now, but
 * warns only from the third at once, and pg@9 will refuse them. The hook wraps `Client.query` and looks at the
 * client's own queue (its internals, pinned with pg: the guard's own test in db-errors.test.ts fails if they
 * change).
 */
interface ClientQueue {
  _activeQuery?: unknown;
  _queryQueue?: unknown[];
}

const raced: Error[] = [];
const query = pg.Client.prototype.query;
pg.Client.prototype.query = function (this: pg.Client & ClientQueue, ...args: unknown[]) {
  if (this._activeQuery || (this._queryQueue?.length ?? 0) > 0) raced.push(new Error('query sent while another ran'));
  return (query as (...a: unknown[]) => unknown).apply(this, args);
} as typeof query;

/** The races seen since the last test ended (for the guard's own test, which races on purpose). */
export function takeRacedQueries(): Error[] {
  return raced.splice(0);
}

afterEach(() => {
  const [first] = takeRacedQueries();
  if (first) throw new Error(`statements raced on one PostgreSQL connection: await them one after another\n${first.stack}`);
});
