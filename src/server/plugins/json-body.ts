import type { FastifyInstance } from 'fastify';
import { ValidationError } from '../../domain/errors.js';

// Escapes of NUL and of UTF-16 surrogates: the only way such characters get into parsed JSON text.
const SUSPICIOUS_ESCAPE = /\\u(0000|d[89a-f])/i;
const NUL_OR_LONE_SURROGATE = /\u0000|[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/;

/** Deeper than this, JSON.stringify (and PostgreSQL's jsonb) run out of stack: refused as bad input. */
export const MAX_JSON_DEPTH = 100;

/** The top-level key under which `value` nests deeper than MAX_JSON_DEPTH, else null. Iterative: no stack. */
function tooDeep(value: unknown): string | null {
  const stack: Array<[unknown, number, string]> = [[value, 0, 'body']];
  while (stack.length > 0) {
    const [node, depth, top] = stack.pop()!;
    if (!node || typeof node !== 'object') continue;
    if (depth >= MAX_JSON_DEPTH) return top;
    for (const [key, child] of Object.entries(node)) stack.push([child, depth + 1, depth === 0 ? key : top]);
  }
  return null;
}

function hasUnstorableText(value: unknown): boolean {
  if (typeof value === 'string') return NUL_OR_LONE_SURROGATE.test(value);
  if (Array.isArray(value)) return value.some(hasUnstorableText);
  if (value && typeof value === 'object') {
    return Object.entries(value).some(([k, v]) => NUL_OR_LONE_SURROGATE.test(k) || hasUnstorableText(v));
  }
  return false;
}

/**
 * JSON bodies, also when sent as `text/plain` (what `navigator.sendBeacon` sends, to avoid a CORS preflight).
 * Text that neither database can store the same way (NUL characters, unpaired surrogates) is refused up
 * front with a 400 instead of failing later on one database only.
 */
export function registerJsonBody(app: FastifyInstance): void {
  // `__proto__` / `constructor.prototype` keys are dropped, never applied to objects.
  const parseJson = app.getDefaultJsonParser('remove', 'remove');
  // Query strings and path parameters reach SQL too: PostgreSQL refuses NUL in text (a 500), SQLite does not.
  app.addHook('preValidation', async (request) => {
    for (const values of [request.params, request.query]) {
      for (const [key, value] of Object.entries((values ?? {}) as Record<string, unknown>)) {
        if (NUL_OR_LONE_SURROGATE.test(key) || hasUnstorableText(value)) {
          throw new ValidationError(`invalid request: ${key} must not contain NUL characters or unpaired surrogates`);
        }
      }
    }
  });
  app.removeContentTypeParser(['application/json', 'text/plain']);
  app.addContentTypeParser(['application/json', 'text/plain'], { parseAs: 'string' }, (request, body, done) => {
    const text = body as string;
    if (text.trim() === '') return done(null, undefined);
    parseJson(request, text, (error: Error | null, parsed?: unknown) => {
      if (error) return done(new ValidationError('invalid request: body is not valid JSON'), undefined);
      // Nesting that deep needs at least one bracket per level.
      const deepField = text.length > 2 * MAX_JSON_DEPTH ? tooDeep(parsed) : null;
      if (deepField) {
        return done(new ValidationError(`invalid request: ${deepField} is nested deeper than ${MAX_JSON_DEPTH} levels`), undefined);
      }
      if (SUSPICIOUS_ESCAPE.test(text) && hasUnstorableText(parsed)) {
        return done(new ValidationError('invalid request: text must not contain NUL characters or unpaired surrogates'), undefined);
      }
      done(null, parsed);
    });
  });
}
