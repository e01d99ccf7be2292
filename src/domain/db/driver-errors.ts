import { ConflictError, UnavailableError, ValidationError } from '../errors.js';
import type { Dialect, InvalidValueReason } from './dialect/dialect.js';

/**
 * Driver errors become domain errors here and nowhere else. Messages are our own words: neither the SQL nor
 * the driver's text (which quotes values and statements) ever reaches a caller.
 */
const INVALID_VALUE_PROBLEM: Record<InvalidValueReason, string> = {
  text: 'contains a character that cannot be stored (NUL or an invalid encoding)',
  range: 'is out of the storable range',
  length: 'is too long to be stored',
  format: 'has a format that cannot be stored',
};

/** The domain error a driver error stands for; anything else (domain errors, bugs) comes back unchanged. */
export function domainErrorOf(dialect: Dialect, error: unknown): unknown {
  const fault = dialect.driverFault(error);
  switch (fault?.kind) {
    case 'unique':
      return new ConflictError('conflict: a record with the same key already exists');
    case 'invalid_value':
      return new ValidationError(`invalid request: ${fault.column ?? 'a value'} ${INVALID_VALUE_PROBLEM[fault.reason]}`);
    case 'busy':
      return busyError();
    default:
      return error;
  }
}

/** Another transaction held what we needed through every attempt: the client should come back shortly. */
function busyError(): UnavailableError {
  return new UnavailableError('database is busy, try again', 1);
}

export function isBusy(dialect: Dialect, error: unknown): boolean {
  return dialect.driverFault(error)?.kind === 'busy';
}

/**
 * How a transaction that met a lock is run again: `attempts` in all, waiting `backoffMs(retry)` (with
 * jitter) before retry 1, 2, …; `pause` does the waiting (tests pass their own to act between attempts).
 */
export interface RetryPolicy {
  attempts: number;
  backoffMs(retry: number): number;
  pause(ms: number): Promise<void>;
}

/**
 * Three attempts, 25 then 100 ms apart (plus jitter so colliding writers drift apart). Each attempt already
 * waited for the lock itself (SQLite's busy timeout, PostgreSQL's lock_timeout when set), so a few suffice.
 */
export const DEFAULT_RETRY: RetryPolicy = {
  attempts: 3,
  backoffMs: (retry) => 25 * 4 ** (retry - 1) * (1 + Math.random() / 2),
  pause: (ms) => new Promise((resolve) => setTimeout(resolve, ms)),
};

/**
 * Runs a whole transaction, running it again while the database reports a lock conflict (`transaction`
 * must be safe to run again: it begins its own transaction, and the rollback undid the failed attempt), and
 * translates what it finally throws. Out of attempts: UnavailableError (503 with Retry-After).
 */
export async function runTranslated<T>(dialect: Dialect, retry: RetryPolicy, transaction: () => Promise<T>): Promise<T> {
  for (let attempt = 1; ; attempt++) {
    try {
      return await transaction();
    } catch (error) {
      if (attempt < retry.attempts && isBusy(dialect, error)) {
        await retry.pause(retry.backoffMs(attempt));
        continue;
      }
      throw domainErrorOf(dialect, error);
    }
  }
}
