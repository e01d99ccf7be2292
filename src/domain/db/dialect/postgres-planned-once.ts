import type { SqlFragment } from './dialect.js';

/**
 * Statements PostgreSQL plans once per connection (issue 16). A held write travels as literal SQL in one script
 * (deferred-writes.ts), so PostgreSQL plans it every time it runs; for a statement of every group commit whose
 * planning costs more than running it (the copy of totals to category rows, a join of two tables of four indexes
 * each: docs/performance.md#eighth-pass-statistics-from-the-first-thousand-rows-the-outboxs-contact-index),
 * planning is most of its cost. Such a statement is PREPAREd on a connection the first time something sent there
 * names it, and is sent as EXECUTE with its arguments as literals; after five runs PostgreSQL keeps a generic plan
 * and plans it no more. Each distinct text (a list of another length) is a statement of its own.
 */

const NAMED = /\bEXECUTE (emk_\w+)/g;

/**
 * The statements planned once of one dialect (postgresDialect makes one): the dialect's `plannedOnce` names them,
 * and the knex clients it configures prepare them on their connections.
 */
export class PlannedOnce {
  /** `PREPARE …` by statement name, and the name of each statement text. Bounded by the texts the code writes. */
  private readonly prepareByName = new Map<string, string>();
  private readonly nameByText = new Map<string, string>();
  /** Names prepared on each connection (a PREPARE lasts as long as its session, whatever becomes of transactions). */
  private readonly preparedOn = new WeakMap<object, Set<string>>();

  constructor(private readonly literal: (value: unknown) => string | null) {}

  /**
   * `fragment` as an EXECUTE of its prepared form (`?` placeholders become the statement's `$n` parameters), its
   * arguments written as literals: EXECUTE takes no bound parameters. A question mark inside a literal is escaped
   * for knex. A value without a literal form leaves the fragment as it is, planned each time.
   */
  statement(label: string, fragment: SqlFragment): SqlFragment {
    const args = fragment.bindings.map(this.literal);
    if (args.some((arg) => arg === null)) return fragment;
    let name = this.nameByText.get(fragment.sql);
    if (!name) {
      name = `emk_${label}_${this.nameByText.size + 1}`;
      let position = 0;
      this.prepareByName.set(name, `PREPARE ${name} AS ${fragment.sql.replace(/\?/g, () => `$${++position}`)}`);
      this.nameByText.set(fragment.sql, name);
    }
    const list = args.length > 0 ? `(${args.map((arg) => arg!.replaceAll('?', '\\?')).join(', ')})` : '';
    return { sql: `EXECUTE ${name}${list}`, bindings: [] };
  }

  /** Prepares on `connection` every statement `sql` executes that it has not prepared yet (a round trip each, once). */
  async prepareFor(connection: { query(sql: string): Promise<unknown> }, sql: string): Promise<void> {
    if (!sql.includes('EXECUTE emk_')) return;
    let prepared = this.preparedOn.get(connection);
    for (const [, name] of sql.matchAll(NAMED)) {
      const prepare = this.prepareByName.get(name!);
      // A name not ours (text that only looks like one, in a literal) is left alone.
      if (!prepare || prepared?.has(name!)) continue;
      await connection.query(prepare);
      if (!prepared) this.preparedOn.set(connection, (prepared = new Set()));
      prepared.add(name!);
    }
  }
}
