import { z } from 'zod';

/**
 * One range per kind of number, checked in the domain so that both databases store exactly what was accepted:
 * money columns are decimal(18,4) (14 integer digits; a contact's lifetime revenue sums many orders, so one
 * amount stays far below), counts and stock are 32-bit integer columns.
 */
export const MAX_MONEY = 1e12;
/** Units of one line item. */
export const MAX_QUANTITY = 1_000_000;
/** Stock levels, positions and other integer columns. */
export const MAX_INT = 2_147_483_647;

const NUMERIC_TEXT = /^\s*[+-]?(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?\s*$/;

/** A number, or text holding one (CSV cells, storefronts that send prices as strings); anything else as sent. */
export const numericText = (value: unknown) => (typeof value === 'string' && NUMERIC_TEXT.test(value) ? Number(value) : value);

/** Money keeps 4 decimals on both databases (the columns' scale), rounded here rather than by one of them. */
const toMoneyScale = (n: number) => Math.round(n * 1e4) / 1e4;

/**
 * An amount of money: 0 to MAX_MONEY (or ±MAX_MONEY when `signed`, e.g. a discount line), a number or numeric
 * text (`numbersOnly`: a JSON number only).
 */
export function moneySchema(options: { signed?: boolean; numbersOnly?: boolean } = {}) {
  const min = options.signed ? -MAX_MONEY : 0;
  const amount = z
    .number()
    .min(min, options.signed ? `must be at least ${min}` : 'must not be negative')
    .max(MAX_MONEY, `must be at most ${MAX_MONEY}`)
    .transform(toMoneyScale);
  return options.numbersOnly ? amount : z.preprocess(numericText, amount);
}

/** Units of a line item: a whole number from 0 to MAX_QUANTITY, number or numeric text. */
export const quantitySchema = z.preprocess(
  numericText,
  z
    .number()
    // Bounds before int(): its own safe-integer bound would otherwise be the message.
    .min(0, 'must not be negative')
    .max(MAX_QUANTITY, `must be at most ${MAX_QUANTITY}`)
    .int(),
);

/** A 32-bit integer column (stock levels, positions), number or numeric text. */
export const intSchema = z.preprocess(
  numericText,
  z.number().min(-MAX_INT, `must be at least ${-MAX_INT}`).max(MAX_INT, `must be at most ${MAX_INT}`).int(),
);
