import { domainToASCII } from 'node:url';
import { z } from 'zod';
import { ValidationError } from '../errors.js';
import { findJsonProblem, isStorableText, UNSTORABLE_TEXT_MESSAGE, type FieldPath } from './storable.js';

/** Field path as clients write it: `events[3].email`, `properties.size`. */
export function fieldName(path: ReadonlyArray<PropertyKey>): string {
  let out = '';
  for (const part of path) {
    if (typeof part === 'number') out += `[${part}]`;
    else out += out ? `.${String(part)}` : String(part);
  }
  return out || 'body';
}

const TYPE_NAMES: Record<string, string> = {
  object: 'an object',
  record: 'an object',
  array: 'an array',
  int: 'an integer',
  boolean: 'a boolean',
  string: 'a string',
  number: 'a number',
};

const typeNameOf = (value: unknown) => (value === null ? 'null' : Array.isArray(value) ? 'array' : typeof value);

/** Units of a size limit, by what is measured. */
function sized(origin: string, bound: string, limit: number | bigint): string {
  if (origin === 'string') return `must be ${bound} ${limit} characters`;
  if (origin === 'array' || origin === 'set') return `must have ${bound} ${limit} entries`;
  return `must be ${bound} ${limit}`;
}

/**
 * Our words for each kind of zod issue, built from the issue's structure (code, expected type, bounds, values),
 * never from zod's own message text. A message the schema gives itself (`must not be empty`) wins over these.
 */
function inOurWords(issue: z.core.$ZodRawIssue): string {
  switch (issue.code) {
    case 'invalid_type':
      if (issue.input === undefined) return 'is required';
      // Coerced text that is no number arrives as NaN, of the expected type: naming it would say nothing.
      if (typeNameOf(issue.input) === issue.expected) return `must be ${TYPE_NAMES[issue.expected] ?? `a ${issue.expected}`}`;
      return `must be ${TYPE_NAMES[issue.expected] ?? `a ${issue.expected}`} (got ${typeNameOf(issue.input)})`;
    case 'too_big':
      return sized(issue.origin, issue.inclusive === false ? 'less than' : 'at most', issue.maximum);
    case 'too_small':
      if (issue.origin === 'string' && Number(issue.minimum) === 1) return 'must not be empty';
      return sized(issue.origin, issue.inclusive === false ? 'more than' : 'at least', issue.minimum);
    case 'invalid_value':
      return issue.values.length === 1 ? `must be ${String(issue.values[0])}` : `must be one of ${issue.values.map(String).join(', ')}`;
    case 'invalid_format':
      return issue.format === 'email' ? 'must be an email address' : issue.format === 'url' ? 'must be a URL' : `must be a valid ${issue.format}`;
    case 'not_multiple_of':
      return `must be a multiple of ${issue.divisor}`;
    case 'unrecognized_keys':
      return `has unknown keys: ${issue.keys.join(', ')}`;
    case 'invalid_key': {
      // The key's own check says what is wrong with it (not a header name, say): the path already names the key.
      const inner = issue.issues[0]?.message;
      return inner && /^(must|is|has) /.test(inner) ? inner : 'has a key that is not usable';
    }
    case 'invalid_element':
      return 'has an entry that is not usable';
    case 'invalid_union': {
      // Every branch wanted another type: name them all (`must be a string or a number`).
      const expected = issue.errors.flatMap((branch) => branch.filter((i) => i.code === 'invalid_type' && i.path.length === 0).map((i) => (i as z.core.$ZodIssueInvalidType).expected));
      if (expected.length === issue.errors.length && expected.length > 0) {
        return `must be ${[...new Set(expected)].map((t) => TYPE_NAMES[t] ?? `a ${t}`).join(' or ')}`;
      }
      return 'is not valid';
    }
    default:
      return 'is not valid';
  }
}

const PARSE_OPTIONS = { error: inOurWords };

/**
 * Outputs of checks made ahead of the domain, by value and schema: a route checks its request with the domain's
 * own schemas before the handler runs (so a 400 names the first fault in the spec's order), and the domain's
 * parse of the same value with the same schema then takes that output once instead of parsing again.
 */
const checkedAhead = new WeakMap<object, Map<z.ZodType, unknown>>();

/** checkInput, keeping a success for the next parse of this value with this schema. */
export function checkInputAhead<S extends z.ZodType>(
  schema: S,
  value: unknown,
): { success: true; data: z.output<S> } | { success: false; error: string } {
  const result = checkInput(schema, value);
  if (result.success && typeof value === 'object' && value !== null) {
    const outputs = checkedAhead.get(value) ?? new Map<z.ZodType, unknown>();
    outputs.set(schema, result.data);
    checkedAhead.set(value, outputs);
  }
  return result;
}

/** The output a check ahead left for this value and schema, taken (a later parse parses again). */
function takeCheckedAhead(schema: z.ZodType, value: unknown): { data: unknown } | null {
  if (typeof value !== 'object' || value === null) return null;
  const outputs = checkedAhead.get(value);
  if (!outputs?.has(schema)) return null;
  const data = outputs.get(schema);
  outputs.delete(schema);
  return { data };
}

export function describeIssue(issue: z.core.$ZodIssue): string {
  const field = fieldName(issue.path);
  return /^(must|is|has) /.test(issue.message) ? `${field} ${issue.message}` : `${field}: ${issue.message}`;
}

/**
 * Validates with the domain's words: the parsed value, or the message naming the first offending field,
 * its path prefixed with `at` (`order.items[2]`) when the value sits inside a larger input.
 */
export function checkValue<S extends z.ZodType>(
  schema: S,
  value: unknown,
  at: FieldPath = [],
): { success: true; data: z.output<S> } | { success: false; problem: string } {
  const ahead = takeCheckedAhead(schema, value);
  if (ahead) return { success: true, data: ahead.data as z.output<S> };
  const result = schema.safeParse(value, PARSE_OPTIONS);
  if (result.success) return { success: true, data: result.data };
  const issue = result.error.issues[0]!;
  return { success: false, problem: describeIssue({ ...issue, path: [...at, ...issue.path] }) };
}

/** checkValue for a request or a row: the message starts with the spec's generic `invalid request`. */
export function checkInput<S extends z.ZodType>(
  schema: S,
  value: unknown,
): { success: true; data: z.output<S> } | { success: false; error: string } {
  const result = checkValue(schema, value);
  return result.success ? result : { success: false, error: `invalid request: ${result.problem}` };
}

/**
 * Validates untrusted input against a schema. Failures become a ValidationError whose message starts with the
 * spec's generic `invalid request` and names the first offending field.
 */
export function parseInput<S extends z.ZodType>(schema: S, value: unknown): z.output<S> {
  const result = checkInput(schema, value);
  if (!result.success) throw new ValidationError(result.error);
  return result.data;
}

/**
 * Validates each row of a batch alone (the batch endpoints, imports and sync): a bad row becomes an error
 * entry naming its field (a row that is not an object is named as `<listName>[i]`), built by `errorFor`, and
 * the others go on.
 */
export function parseRows<S extends z.ZodType, E>(
  schema: S,
  listName: string,
  rows: unknown[],
  errorFor: (index: number, raw: unknown, error: string) => E,
): { valid: Array<{ index: number; input: z.output<S> }>; errors: E[] } {
  const valid: Array<{ index: number; input: z.output<S> }> = [];
  const errors: E[] = [];
  rows.forEach((raw, index) => {
    if (!raw || typeof raw !== 'object' || Array.isArray(raw)) {
      errors.push(errorFor(index, raw, `invalid request: ${listName}[${index}] must be an object`));
      return;
    }
    const result = checkInput(schema, raw);
    if (result.success) valid.push({ index, input: result.data });
    else errors.push(errorFor(index, raw, result.error));
  });
  return { valid, errors };
}

/** A row's own field as text for its error entry (`email`, `external_id`), when it has a usable one. */
export function rowField(raw: unknown, field: string): string | null {
  const value = raw && typeof raw === 'object' ? (raw as Record<string, unknown>)[field] : undefined;
  return typeof value === 'string' || (typeof value === 'number' && Number.isFinite(value)) ? String(value) : null;
}

/** A string both databases store alike (no NUL, no unpaired surrogate). */
export const storableString = () => z.string().refine(isStorableText, UNSTORABLE_TEXT_MESSAGE);

/** Text fields: trimmed, never empty, storable, bounded so no index entry or column can overflow. */
export function text(max: number) {
  return storableString().trim().min(1, 'must not be empty').max(max, `must be at most ${max} characters`);
}

/** Optional free text (a filter, a status): trimmed, may be empty, storable, bounded. */
export function looseText(max: number) {
  return storableString().trim().max(max, `must be at most ${max} characters`);
}

/** A dot-atom local part (RFC 5321 §4.1.2): atoms of atext joined by single dots. */
const LOCAL_PART = /^[A-Za-z0-9!#$%&'*+/=?^_`{|}~-]+(?:\.[A-Za-z0-9!#$%&'*+/=?^_`{|}~-]+)*$/;
/** A DNS label in its ASCII form: letters, digits and inner hyphens, 1–63 characters. */
const LABEL = /^[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?$/i;
/** What a domain may hold before its IDN conversion: ASCII letters, digits, hyphens and dots, or non-ASCII text. */
const DOMAIN_TEXT = /^(?:[A-Za-z0-9.-]|[^\x00-\x7f])+$/;
const MAX_ADDRESS = 254;
const MAX_LOCAL_PART = 64;
const MAX_DOMAIN = 253;
const NOT_AN_ADDRESS = 'must be an email address';

/**
 * The one address rule (docs/api/README.md#email-addresses): a bare RFC 5321 mailbox `local@domain` and nothing
 * else (no display name, comma, semicolon, angle bracket, quote or whitespace), so the address a row holds is the
 * address a relay's envelope gets. The local part is a dot-atom of at most 64 characters; the domain has at least
 * two labels, none numeric at the top (no IP literal), each 1–63 letters, digits and inner hyphens. A Unicode
 * domain (IDN) is accepted and written in its ASCII form (`bücher.example` → `xn--bcher-kva.example`, as
 * `node:url` domainToASCII gives it), so every comparison and the envelope see one spelling; an ASCII address is
 * kept as written (case included). At most 254 characters, counted in that form. Surrounding whitespace is trimmed
 * by the schema. Returns the address in that form, or the problem in our words.
 */
export function bareAddress(value: string): { address: string } | { problem: string } {
  const at = value.lastIndexOf('@');
  const local = value.slice(0, at);
  let domain = value.slice(at + 1);
  if (at < 1 || !LOCAL_PART.test(local) || !DOMAIN_TEXT.test(domain)) {
    return { problem: NOT_AN_ADDRESS };
  }
  if (local.length > MAX_LOCAL_PART) return { problem: `must have a local part of at most ${MAX_LOCAL_PART} characters` };
  if (/[^\x00-\x7f]/.test(domain)) {
    domain = domainToASCII(domain);
    if (domain === '') return { problem: NOT_AN_ADDRESS };
  }
  const labels = domain.split('.');
  if (domain.length > MAX_DOMAIN || labels.length < 2 || !labels.every((l) => LABEL.test(l)) || /^[0-9]+$/.test(labels.at(-1)!)) {
    return { problem: NOT_AN_ADDRESS };
  }
  const address = `${local}@${domain}`;
  if (address.length > MAX_ADDRESS) return { problem: `must be at most ${MAX_ADDRESS} characters` };
  return { address };
}

/** An email address as every entry takes it: one rule (bareAddress), output in its comparable form. */
export const emailSchema = storableString()
  .trim()
  .min(1, 'must not be empty')
  .max(1024, 'must be at most 254 characters')
  .transform((value, ctx) => {
    const result = bareAddress(value);
    if ('address' in result) return result.address;
    ctx.addIssue({ code: 'custom', message: result.problem, input: value });
    return z.NEVER;
  });

/**
 * A JSON object (not an array, not null) whose keys and text, at any depth, can be stored, nested at most
 * MAX_JSON_DEPTH levels: the error names the offending place (`properties.size`).
 */
export const jsonObject = z.record(z.string(), z.unknown()).superRefine((value, ctx) => {
  const problem = findJsonProblem(value);
  if (problem) ctx.addIssue({ code: 'custom', path: problem.path as FieldPath, message: problem.message });
});
