import type { FastifyInstance } from 'fastify';
import { ValidationError } from '../../domain/errors.js';
import { findJsonProblem, MAX_JSON_DEPTH, tooDeepAt } from '../../domain/shared/storable.js';
import { fieldName } from '../../domain/shared/validate.js';

/**
 * JSON bodies, also when sent as `text/plain` (what `navigator.sendBeacon` sends, to avoid a CORS preflight).
 * What may be stored is the domain's rule (shared/storable.ts, applied by the domain's schemas to every text
 * and JSON field); here only what no route can take: a body nested so deep that walking it would exhaust the
 * stack, and path parameters or query values that no stored text can match.
 */
export function registerJsonBody(app: FastifyInstance): void {
  // `__proto__` / `constructor.prototype` keys are dropped, never applied to objects.
  const parseJson = app.getDefaultJsonParser('remove', 'remove');
  // Path parameters and query values reach SQL as text: one with NUL could never match (PostgreSQL refuses it).
  app.addHook('preValidation', async (request) => {
    for (const values of [request.params, request.query]) {
      const problem = findJsonProblem(values ?? {});
      if (problem) throw new ValidationError(`invalid request: ${fieldName(problem.path)} ${problem.message}`);
    }
  });
  app.removeContentTypeParser(['application/json', 'text/plain']);
  app.addContentTypeParser(['application/json', 'text/plain'], { parseAs: 'string' }, (request, body, done) => {
    const text = body as string;
    if (text.trim() === '') return done(null, undefined);
    parseJson(request, text, (error: Error | null, parsed?: unknown) => {
      if (error) return done(new ValidationError('invalid request: body is not valid JSON'), undefined);
      // Nesting that deep needs at least one bracket per level.
      const deep = text.length > 2 * MAX_JSON_DEPTH ? tooDeepAt(parsed) : null;
      if (deep) return done(new ValidationError(`invalid request: ${fieldName(deep)} must not nest deeper than ${MAX_JSON_DEPTH} levels`), undefined);
      done(null, parsed);
    });
  });
}
