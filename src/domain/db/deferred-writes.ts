import type { Knex } from 'knex';
import type { Dialect } from './dialect/dialect.js';
import type { Db, WriteStats } from './types.js';

/**
 * Deferred writes: a write whose result nobody reads (an insert of rows with their own ids, an additive upsert)
 * is held back on its transaction's connection and sent with the connection's next statement, in one call to
 * the driver. A group commit's trailing writes thus travel with its COMMIT: one wait for the event loop (and,
 * on PostgreSQL, one round trip) instead of one per statement. Under load each wait costs milliseconds, far
 * more than the statement itself (issue 16).
 *
 * The connection's own order is kept: every statement it runs first sends what is held. A held write that
 * fails fails the statement it travels with; the transaction (or savepoint) is then undone whole, as it would
 * have been had the write failed on its own, so a held write is only for statements whose failure the caller
 * does not handle itself. Values are inlined as SQL literals by the dialect (`Dialect.literal`); a value it
 * cannot inline sends the write at once instead.
 */

/** `?` placeholders filled with literals; null when a value has no literal form (then the write runs at once). */
function inline(dialect: Dialect, sql: string, bindings: readonly unknown[]): string | null {
  // knex writes a literal question mark as `\?`: too rare on these paths to be worth parsing.
  if (sql.includes('\\?')) return null;
  const parts = sql.split('?');
  if (parts.length - 1 !== bindings.length) return null;
  let out = parts[0]!;
  for (let i = 0; i < bindings.length; i++) {
    const literal = dialect.literal(bindings[i]);
    if (literal === null) return null;
    out += literal + parts[i + 1]!;
  }
  return out;
}

/**
 * Holds `query` until the transaction's next statement (see above). Outside a transaction it simply runs.
 * The query must be built on `db` and never awaited by the caller.
 */
export async function deferWrite(dialect: Dialect, db: Db, query: Knex.QueryBuilder | Knex.Raw): Promise<void> {
  if (!db.isTransaction) return void (await query);
  const compiled = query.toSQL();
  const statements: Array<string | null> = (Array.isArray(compiled) ? compiled : [compiled]).map((c: Knex.Sql) =>
    inline(dialect, c.sql, c.bindings),
  );
  if (statements.some((s) => s === null)) return void (await query);
  await holdStatements(db as Knex.Transaction, statements as string[]);
}

/** Holds statements already written with literals until the transaction's next statement (see above). */
export async function holdStatements(trx: Knex.Transaction, statements: string[]): Promise<void> {
  const connection = (await trx.client.acquireConnection()) as object;
  heldWritesOf(trx).hold(connection, statements);
}

/**
 * A knex client of ours (dialect/sqlite.ts, dialect/postgres.ts): it carries the held writes of its connections.
 * knex builds a transaction's client on the client's prototype, so a transaction's client sees the same ones.
 */
export interface HoldingClient {
  readonly heldWrites: HeldWrites;
}

function heldWritesOf(trx: Knex.Transaction): HeldWrites {
  const { heldWrites } = trx.client as Partial<HoldingClient>;
  // Another client would never send what is held: the writes would be lost without a word.
  if (!heldWrites) throw new Error('held writes need a knex client made by dialect/sqlite.ts or dialect/postgres.ts');
  return heldWrites;
}

/**
 * The driver call of a dialect's client: runs several `;`-separated statements without bindings and yields the
 * last one's result (PostgreSQL; SQLite's script call yields nothing).
 */
export type RunScript = (connection: object, sql: string) => Promise<unknown>;

const script = (statements: string[]) => statements.join(';\n');

/** What the client does after send: run the statement itself, or take the result it was run with. */
export type HeldOutcome = { ran: false } | { ran: true; result: unknown };

/**
 * The statements held on the connections of one knex client, in order per connection (nested savepoints share
 * their connection's), and the count of what the client sent (`stats`, its Database's).
 */
export class HeldWrites {
  private readonly held = new WeakMap<object, string[]>();

  constructor(readonly stats: WriteStats) {}

  hold(connection: object, statements: string[]): void {
    const list = this.held.get(connection);
    if (list) list.push(...statements);
    else this.held.set(connection, statements);
  }

  /**
   * Holds a transaction's BEGIN so that it travels with the transaction's first statement (PostgreSQL, where a
   * read can carry held statements: one round trip less per transaction). Nothing held before it survives.
   */
  holdBegin(connection: object, sql: string): void {
    this.held.set(connection, [sql.replace(/;\s*$/, '')]);
  }

  /** Statements held on `connection` (a held BEGIN counts as one). */
  count(connection: object): number {
    return this.held.get(connection)?.length ?? 0;
  }

  /** Forgets what is held on `connection` (a transaction that ends before anything was sent). */
  drop(connection: object): void {
    this.held.delete(connection);
  }

  /**
   * Called by our knex clients before each statement they run on `connection`. A COMMIT or RELEASE is run here
   * together with the held writes; so is any statement the client can give as literal SQL (`inlined`:
   * PostgreSQL, whose script call returns rows). Otherwise the held writes are sent (or dropped, for BEGIN and
   * ROLLBACK) and the client runs the statement itself.
   */
  async send(connection: object, sql: string, runScript: RunScript, inlined?: () => string | null): Promise<HeldOutcome> {
    const statements = this.held.get(connection);
    const verb = /^\s*(\w+)/.exec(sql)?.[1]?.toUpperCase();
    // A new transaction never inherits writes, and a rollback undoes what was held since the last statement.
    if (verb === 'BEGIN' || verb === 'ROLLBACK') {
      this.held.delete(connection);
      return { ran: false };
    }
    if (!statements || statements.length === 0) return { ran: false };
    this.held.delete(connection);
    const run = (text: string, count: number) => {
      this.stats.driverCalls++;
      this.stats.statements += count;
      return runScript(connection, text);
    };
    if (verb === 'COMMIT') {
      const result = await run(script([...statements, sql]), statements.length + 1).catch(async (error: unknown) => {
        // knex does not roll back after a failed COMMIT: the connection must not go back to the pool mid-transaction.
        await runScript(connection, 'ROLLBACK').catch(() => {});
        throw error;
      });
      return { ran: true, result };
    }
    const savepoint = /^\s*RELEASE\s+SAVEPOINT\s+(\S+?);?\s*$/i.exec(sql)?.[1];
    if (savepoint !== undefined) {
      const result = await run(script([...statements, sql]), statements.length + 1).catch(async (error: unknown) => {
        // Nor after a failed RELEASE: undo the savepoint's work here so the failed unit leaves nothing behind.
        await runScript(connection, `ROLLBACK TO SAVEPOINT ${savepoint};\nRELEASE SAVEPOINT ${savepoint}`).catch(() => {});
        throw error;
      });
      return { ran: true, result };
    }
    const literal = inlined?.() ?? null;
    if (literal !== null) return { ran: true, result: await run(script([...statements, literal]), statements.length + 1) };
    await run(script(statements), statements.length);
    return { ran: false };
  }

  /** Counts a statement the client runs on its own (for stats). */
  countStatement(): void {
    this.stats.driverCalls++;
    this.stats.statements++;
  }
}
