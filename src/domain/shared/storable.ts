/**
 * What both databases store alike. PostgreSQL refuses NUL in text and jsonb; unpaired UTF-16 surrogates are
 * not valid UTF-8; SQLite would keep both. So the domain refuses them (or, on the webhook, replaces them)
 * before any write, and both databases accept and refuse the same values.
 */
const UNSTORABLE = /\u0000|[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/;
const UNSTORABLE_ALL = new RegExp(UNSTORABLE.source, 'g');

export const UNSTORABLE_TEXT_MESSAGE = 'must not contain NUL characters or unpaired surrogates';

export const isStorableText = (text: string): boolean => !UNSTORABLE.test(text);

/** Deeper than this, JSON.stringify (and PostgreSQL's jsonb) run out of stack: refused as bad input. */
export const MAX_JSON_DEPTH = 100;

export type FieldPath = Array<string | number>;

export interface JsonProblem {
  /** Where, relative to the value checked; for nesting, the child of the value that nests too deep. */
  path: FieldPath;
  message: string;
}

/**
 * The first key or text in a JSON value that cannot be stored, or the child that nests deeper than
 * MAX_JSON_DEPTH. Iterative, so a value nested 10,000 levels deep costs no stack.
 */
export function findJsonProblem(value: unknown): JsonProblem | null {
  const stack: Array<{ node: unknown; path: FieldPath }> = [{ node: value, path: [] }];
  while (stack.length > 0) {
    const { node, path } = stack.pop()!;
    if (typeof node === 'string') {
      if (!isStorableText(node)) return { path, message: UNSTORABLE_TEXT_MESSAGE };
      continue;
    }
    if (!node || typeof node !== 'object') continue;
    if (path.length >= MAX_JSON_DEPTH) return { path: path.slice(0, 1), message: `must not nest deeper than ${MAX_JSON_DEPTH} levels` };
    const entries: Array<[string | number, unknown]> = Array.isArray(node) ? node.map((v, i) => [i, v]) : Object.entries(node);
    for (let i = entries.length - 1; i >= 0; i--) {
      const [key, child] = entries[i]!;
      if (typeof key === 'string' && !isStorableText(key)) return { path: [...path, key], message: `has a key that ${UNSTORABLE_TEXT_MESSAGE}` };
      stack.push({ node: child, path: [...path, key] });
    }
  }
  return null;
}

/** The child of `value` (as a one-step path) that nests deeper than MAX_JSON_DEPTH, else null. Iterative. */
export function tooDeepAt(value: unknown): FieldPath | null {
  const stack: Array<[unknown, number, FieldPath]> = [[value, 0, []]];
  while (stack.length > 0) {
    const [node, depth, top] = stack.pop()!;
    if (!node || typeof node !== 'object') continue;
    if (depth >= MAX_JSON_DEPTH) return top;
    for (const [key, child] of Object.entries(node)) stack.push([child, depth + 1, depth === 0 ? [Array.isArray(node) ? Number(key) : key] : top]);
  }
  return null;
}

/**
 * The value with every NUL and unpaired surrogate (in keys too) replaced by U+FFFD, for input that is stored
 * as received rather than refused (the webhook). Call only on values within MAX_JSON_DEPTH (it recurses).
 */
export function toStorableJson<T>(value: T): T {
  if (typeof value === 'string') return (isStorableText(value) ? value : value.replace(UNSTORABLE_ALL, '\ufffd')) as T;
  if (Array.isArray(value)) return value.map(toStorableJson) as T;
  if (value && typeof value === 'object') {
    return Object.fromEntries(Object.entries(value).map(([k, v]) => [toStorableJson(k), toStorableJson(v)])) as T;
  }
  return value;
}
