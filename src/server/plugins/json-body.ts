import type { FastifyInstance } from 'fastify';
import { ValidationError } from '../../domain/errors.js';

// Escapes of NUL and of UTF-16 surrogates: the only way such characters get into parsed JSON text.
const SUSPICIOUS_ESCAPE = /\\u(0000|d[89a-f])/i;
const NUL_OR_LONE_SURROGATE = /\u0000|[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/;

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
  const parseJson = app.getDefaultJsonParser('error', 'error');
  app.removeContentTypeParser(['application/json', 'text/plain']);
  app.addContentTypeParser(['application/json', 'text/plain'], { parseAs: 'string' }, (request, body, done) => {
    const text = body as string;
    if (text.trim() === '') return done(null, undefined);
    parseJson(request, text, (error: Error | null, parsed?: unknown) => {
      if (error) return done(new ValidationError('invalid request: body is not valid JSON'), undefined);
      if (SUSPICIOUS_ESCAPE.test(text) && hasUnstorableText(parsed)) {
        return done(new ValidationError('invalid request: text must not contain NUL characters or unpaired surrogates'), undefined);
      }
      done(null, parsed);
    });
  });
}
