import type { Knex } from 'knex';
import type { z } from 'zod';
import { parseRows } from './validate.js';

/**
 * One batch of rows (its result: number counters and the refused rows by index) (the batch endpoints, historical sync and the CLI imports that call them): each row is
 * validated alone (a bad row is an error entry, the others go on); the valid rows are written by `write` in one
 * unit of work (`run`: the group commit, or a rolled-back transaction for a dry run) that counts into a fresh
 * result, so a unit run again after a retried commit recounts from zero; errors come back in row order.
 */
export async function writeRowBatch<S extends z.ZodType, R extends { errors: E[] }, E extends { index: number }>(args: {
  schema: S;
  listName: string;
  rows: unknown[];
  errorFor: (index: number, raw: unknown, error: string) => E;
  empty: () => R;
  /** `rows`: the valid rows the unit writes (the group commit gives a big batch a transaction of its own). */
  run: (unit: (trx: Knex.Transaction) => Promise<R>, rows: number) => Promise<R>;
  write: (trx: Knex.Transaction, valid: Array<{ index: number; input: z.output<S> }>, counts: R) => Promise<void>;
}): Promise<R> {
  const { valid, errors } = parseRows(args.schema, args.listName, args.rows, args.errorFor);
  const result = args.empty();
  result.errors.push(...errors);
  if (valid.length > 0) {
    const written = await args.run(async (trx) => {
      const counts = args.empty();
      await args.write(trx, valid, counts);
      return counts;
    }, valid.length);
    for (const [key, value] of Object.entries(written)) {
      if (typeof value === 'number') (result as Record<string, unknown>)[key] = value;
    }
    result.errors.push(...written.errors);
  }
  result.errors.sort((a, b) => a.index - b.index);
  return result;
}

/** Thrown to roll a dry run back once its result is known. */
class DryRunDone<R> {
  constructor(readonly result: R) {}
}

/**
 * A dry run (`--dry-run` of the imports and sync) does the whole write in a transaction and rolls it back: its
 * counts are what a real run would write now, and nothing is written.
 */
export async function rehearse<R>(
  writeTransaction: <T>(work: (trx: Knex.Transaction) => Promise<T>) => Promise<T>,
  unit: (trx: Knex.Transaction) => Promise<R>,
): Promise<R> {
  try {
    return await writeTransaction(async (trx) => {
      throw new DryRunDone(await unit(trx));
    });
  } catch (error) {
    if (error instanceof DryRunDone) return error.result as R;
    throw error;
  }
}
