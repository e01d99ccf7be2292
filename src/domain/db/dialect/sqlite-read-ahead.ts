import type { HeldWrites, RunScript } from '../deferred-writes.js';

/**
 * Reads ahead of BEGIN (SQLite, issue 16). A write transaction's BEGIN IMMEDIATE is held, and its reads before
 * its first write run outside it, on the same connection, without a trip of their own for BEGIN: under load a
 * group commit's owner lookup no longer waits for a BEGIN to come back first, and the BEGIN travels with the
 * writes and the COMMIT in one script.
 *
 * What the transaction writes depends on those reads, so the held BEGIN carries a guard: the script fails,
 * undoing nothing yet written, unless no other connection has committed since this connection's last write
 * transaction, which noted the data version it saw (`PRAGMA data_version` changes with every other
 * connection's commit, never with this one's). This connection's own work cannot come between the reads and
 * the BEGIN: the transaction holds the pool's one connection throughout. A failed guard is a lock conflict
 * (SQLITE_BUSY): the transaction runs again, and for a while its reads wait for BEGIN as before, since another
 * process is writing.
 */

/** After a guard fails, reads wait for BEGIN this long: another process is writing (an import, a sync). */
const READ_INSIDE_AFTER_CONFLICT_MS = 1_000;

const STALE = 'emk: read ahead of another connection';

/** Notes the data version a write transaction saw (inside it, under the write lock: no commit can come between). */
const NOTE_DATA_VERSION = 'INSERT OR REPLACE INTO temp.emk_read_guard (id, data_version) SELECT 1, data_version FROM pragma_data_version';

/** Fails (a JSON path error naming STALE) unless the data version is still the one noted. */
const GUARD =
  `SELECT json_extract('{}', '$ ${STALE}') WHERE NOT EXISTS ` +
  '(SELECT 1 FROM temp.emk_read_guard AS g, pragma_data_version AS p WHERE g.data_version = p.data_version)';

/** Run on each new connection: where the note is kept, and a first note. */
export const READ_AHEAD_SETUP = [
  'CREATE TEMP TABLE IF NOT EXISTS emk_read_guard (id INTEGER PRIMARY KEY CHECK (id = 1), data_version INTEGER NOT NULL)',
  NOTE_DATA_VERSION,
];

interface OpenTransaction {
  /** BEGIN is still held: nothing of the transaction has been sent. */
  beginHeld: boolean;
  /** Reads went ahead: the BEGIN carries the guard. */
  guarded: boolean;
  /** The held BEGIN was sent and refused (SQLITE_BUSY): no transaction is open. */
  beginRefused: boolean;
}

interface ConnectionState {
  transaction: OpenTransaction | null;
  readInsideUntil: number;
}

const BEGIN = /^\s*BEGIN IMMEDIATE;?\s*$/i;
const READ = /^\s*select\b/i;
const ENDS_TRANSACTION = /^\s*(COMMIT|ROLLBACK);?\s*$/i;
const ROLLBACK = /^\s*ROLLBACK;?\s*$/i;
const TRAILING_COMMIT = /(^|\n)COMMIT;?\s*$/;

/** The read-ahead state of one knex client's connections (dialect/sqlite.ts makes one per client). */
export class ReadAhead {
  private readonly states = new WeakMap<object, ConnectionState>();

  constructor(private readonly heldWrites: HeldWrites) {}

  private stateOf(connection: object): ConnectionState {
    let state = this.states.get(connection);
    if (!state) this.states.set(connection, (state = { transaction: null, readInsideUntil: 0 }));
    return state;
  }

  /**
   * What the client does with `sql` on `connection` before the held writes are sent: `done` when it was taken
   * care of here (a BEGIN held, a ROLLBACK of a transaction that never began), `ahead` when it is a read that
   * runs now, ahead of the held BEGIN, and `run` otherwise.
   */
  step(connection: object, sql: string): 'done' | 'ahead' | 'run' {
    const state = this.stateOf(connection);
    if (BEGIN.test(sql)) {
      if (Date.now() < state.readInsideUntil) {
        state.transaction = null;
        return 'run';
      }
      this.heldWrites.holdBegin(connection, 'BEGIN IMMEDIATE');
      state.transaction = { beginHeld: true, guarded: false, beginRefused: false };
      return 'done';
    }
    const transaction = state.transaction;
    if (!transaction) return 'run';
    if (ENDS_TRANSACTION.test(sql)) {
      state.transaction = null;
      // Nothing was begun: a ROLLBACK would fail ("no transaction is active") and hide the caller's own error.
      if (ROLLBACK.test(sql) && (transaction.beginHeld || transaction.beginRefused)) {
        this.heldWrites.drop(connection);
        return 'done';
      }
      return 'run';
    }
    if (transaction.beginHeld && this.heldWrites.count(connection) === 1 && READ.test(sql)) {
      if (!transaction.guarded) {
        this.heldWrites.holdBegin(connection, `BEGIN IMMEDIATE;\n${GUARD}`);
        transaction.guarded = true;
      }
      return 'ahead';
    }
    return 'run';
  }

  /**
   * The client's script call, taking part: a transaction's COMMIT notes the data version first, a held BEGIN
   * that is refused is remembered (no ROLLBACK follows it), and a failed guard becomes a lock conflict.
   */
  script(runScript: RunScript): RunScript {
    return async (connection, sql) => {
      const state = this.stateOf(connection);
      const transaction = state.transaction;
      const sendsBegin = transaction?.beginHeld === true;
      if (transaction) transaction.beginHeld = false;
      const text = TRAILING_COMMIT.test(sql) ? sql.replace(TRAILING_COMMIT, `$1${NOTE_DATA_VERSION};\nCOMMIT;`) : sql;
      try {
        return await runScript(connection, text);
      } catch (error) {
        const { code, message } = (error ?? {}) as { code?: unknown; message?: unknown };
        // Once BEGIN IMMEDIATE holds the write lock nothing else in the script waits for a lock: BUSY is the BEGIN's.
        if (sendsBegin && code === 'SQLITE_BUSY') transaction!.beginRefused = true;
        if (typeof message === 'string' && message.includes(STALE)) {
          state.readInsideUntil = Date.now() + READ_INSIDE_AFTER_CONFLICT_MS;
          throw Object.assign(new Error(`SQLITE_BUSY: ${STALE} (it committed after this transaction read)`), { code: 'SQLITE_BUSY' });
        }
        throw error;
      }
    };
  }
}
