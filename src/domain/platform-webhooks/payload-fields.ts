import type { z } from 'zod';
import { moneySchema } from '../shared/numbers.js';
import { isStorableText, UNSTORABLE_TEXT_MESSAGE, type FieldPath } from '../shared/storable.js';
import { parseTimestamp } from '../shared/time.js';
import { checkValue, emailSchema, fieldName } from '../shared/validate.js';

/**
 * Reading a shop platform's payload field by field. A mapper never refuses a delivery over its shape: a value
 * that is absent (undefined, null, an empty string) is simply not sent, and one that was sent but cannot be
 * used becomes null and a warning naming its field (`line_items[1].price must not be negative (ignored)`).
 */

export type Payload = Record<string, unknown>;

/** The value as a JSON object, or null. */
export const asObject = (value: unknown): Payload | null =>
  value !== null && typeof value === 'object' && !Array.isArray(value) ? (value as Payload) : null;

/** The value as an array; anything else is an empty one. */
export const asArray = (value: unknown): unknown[] => (Array.isArray(value) ? value : []);

/** Not sent: undefined, null or blank text. */
export const isAbsent = (value: unknown) => value === undefined || value === null || (typeof value === 'string' && value.trim() === '');

const money = moneySchema();

/** Platforms send ids as numbers or text; both are stored as text. */
const MAX_ID = 255;

export interface FieldReader {
  /** What was sent but could not be used, in the order it was met. */
  readonly warnings: string[];
  /** Records what was not applied, in a sentence of its own. */
  warn(message: string): void;
  /** Records a value that was sent but is not used, and why. */
  skip(at: FieldPath, problem: string): void;
  /** The value through a domain schema, or null and its problem (`… (line item ignored)`, `ignored` by default). */
  check<S extends z.ZodType>(schema: S, value: unknown, at: FieldPath, ignored?: string): z.output<S> | null;
  /** Money in the shared range from a number or a decimal string ("199.00"). */
  money(value: unknown, at: FieldPath): number | null;
  /** An email address in its comparable form (the one address rule). */
  email(value: unknown, at: FieldPath): string | null;
  /** A time with or without an offset (RFC 3339), as epoch milliseconds. */
  time(value: unknown, at: FieldPath): number | null;
  /** Text (a number is written as text), trimmed, storable, at most `max` characters. */
  text(value: unknown, at: FieldPath, max?: number): string | null;
  /** An id: a whole number or text, as text. */
  id(value: unknown, at: FieldPath): string | null;
  /** The objects of a list (`line_items`), each with its path; an entry that is no object is named and left out. */
  objects(list: unknown, at: FieldPath): Array<[entry: Payload, at: FieldPath]>;
}

export function fieldReader(): FieldReader {
  const warnings: string[] = [];
  const warn = (message: string) => warnings.push(message);
  const skip = (at: FieldPath, problem: string) => warn(`${fieldName(at)} ${problem} (ignored)`);
  const check = <S extends z.ZodType>(schema: S, value: unknown, at: FieldPath, ignored = 'ignored'): z.output<S> | null => {
    const checked = checkValue(schema, value, at);
    if (checked.success) return checked.data;
    warn(`${checked.problem} (${ignored})`);
    return null;
  };
  const text = (value: unknown, at: FieldPath, max = 1000): string | null => {
    if (isAbsent(value)) return null;
    if (typeof value === 'number' && Number.isFinite(value)) return String(value);
    let problem: string | null = null;
    const trimmed = typeof value === 'string' ? value.trim() : '';
    if (typeof value !== 'string') problem = 'must be text';
    else if (!isStorableText(trimmed)) problem = UNSTORABLE_TEXT_MESSAGE;
    else if (trimmed.length > max) problem = `must be at most ${max} characters`;
    if (problem === null) return trimmed;
    skip(at, problem);
    return null;
  };
  return {
    warnings,
    warn,
    skip,
    check,
    text,
    money: (value, at) => (isAbsent(value) ? null : check(money, value, at)),
    email: (value, at) => (isAbsent(value) ? null : check(emailSchema, value, at)),
    time(value, at) {
      if (isAbsent(value)) return null;
      const ms = typeof value === 'string' ? parseTimestamp(value.trim()) : null;
      if (ms === null) skip(at, 'must be an RFC 3339 time');
      return ms;
    },
    id(value, at) {
      if (typeof value !== 'number' || Number.isInteger(value)) return text(value, at, MAX_ID);
      skip(at, 'must be a whole number or text');
      return null;
    },
    objects(list, at) {
      return asArray(list).flatMap((raw, i): Array<[Payload, FieldPath]> => {
        const entry = asObject(raw);
        if (entry === null) skip([...at, i], 'must be an object');
        return entry === null ? [] : [[entry, [...at, i]]];
      });
    },
  };
}
