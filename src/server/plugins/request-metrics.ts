import type { FastifyInstance } from 'fastify';
import type { EmkMetrics } from '../metrics/emk-metrics.js';

/**
 * Counts and times every reply, those of hooks included (a 429, a draining 503), by the pattern of the route the
 * router matched (`/api/v1/contacts/:id`): never the raw URL, whose ids would make a series per record.
 */
export function registerRequestMetrics(app: FastifyInstance, metrics: EmkMetrics): void {
  app.addHook('onResponse', (request, reply, done) => {
    metrics.observeRequest(request.routeOptions.url, request.method, reply.statusCode, reply.elapsedTime / 1000);
    done();
  });
  app.addHook('onClose', (_app, done) => {
    metrics.close();
    done();
  });
}
