import { z } from 'zod';
import { ValidationError } from '../errors.js';

/** Field path as clients write it: `events[3].email`, `properties`. */
function fieldName(path: ReadonlyArray<PropertyKey>): string {
  let out = '';
  for (const part of path) {
    if (typeof part === 'number') out += `[${part}]`;
    else out += out ? `.${String(part)}` : String(part);
  }
  return out || 'body';
}

export function describeIssue(issue: z.core.$ZodIssue): string {
  const field = fieldName(issue.path);
  if (issue.code === 'invalid_type') {
    if (issue.message.includes('received undefined')) return `${field} is required`;
    const received = /received (\w+)/.exec(issue.message)?.[1];
    return `${field} must be ${TYPE_NAMES[issue.expected] ?? `a ${issue.expected}`}${received ? ` (got ${received})` : ''}`;
  }
  return issue.message.startsWith('must ') ? `${field} ${issue.message}` : `${field}: ${issue.message}`;
}

const TYPE_NAMES: Record<string, string> = {
  object: 'an object',
  record: 'an object',
  array: 'an array',
  int: 'an integer',
  boolean: 'a boolean',
};

/**
 * Validates untrusted input against a schema. Failures become a ValidationError whose message starts with the
 * spec's generic `invalid request` and names the first offending field.
 */
export function parseInput<S extends z.ZodType>(schema: S, value: unknown): z.output<S> {
  const result = schema.safeParse(value);
  if (result.success) return result.data;
  const issue = result.error.issues[0]!;
  throw new ValidationError(`invalid request: ${describeIssue(issue)}`);
}

/** Text fields: trimmed, never empty, bounded so no index entry or column can overflow. */
export function text(max: number) {
  return z.string().trim().min(1, 'must not be empty').max(max, `must be at most ${max} characters`);
}

const EMAIL = /^[^\s@]+@[^\s@]+$/;

export const emailSchema = z
  .string()
  .trim()
  .min(1, 'must not be empty')
  .max(320, 'must be at most 320 characters')
  .regex(EMAIL, 'must be an email address');

/** A JSON object (not an array, not null). */
export const jsonObject = z.record(z.string(), z.unknown());
