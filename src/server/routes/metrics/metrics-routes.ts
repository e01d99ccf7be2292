import { createHash, timingSafeEqual } from 'node:crypto';
import type { FastifyInstance } from 'fastify';
import { z } from 'zod';
import { UnauthorizedError } from '../../../domain/errors.js';
import type { EmkMetrics } from '../../metrics/emk-metrics.js';
import { describeRoute } from '../../openapi/route-schema.js';

const BEARER = /^Bearer\s+(\S+)\s*$/i;
const digest = (text: string) => createHash('sha256').update(text).digest();

/** Whether the header carries the token, compared in constant time (a digest each, so lengths do not show). */
function carriesToken(authorization: string | undefined, token: string): boolean {
  const given = BEARER.exec(authorization ?? '')?.[1];
  return given !== undefined && timingSafeEqual(digest(given), digest(token));
}

/** `GET /metrics` for Prometheus: with `EMK_METRICS_TOKEN` set, only for `Authorization: Bearer <token>`. */
export function metricsRoutes(metrics: EmkMetrics, token: string | undefined) {
  return async (app: FastifyInstance) => {
    app.get(
      '/metrics',
      {
        schema: describeRoute({
          tag: 'Operations',
          summary: "This process's metrics and the shared queues', in Prometheus' text format (a bearer token when EMK_METRICS_TOKEN is set)",
          credential: 'metricsToken',
          replies: { 200: z.string().describe('text/plain; version=0.0.4 (Prometheus text format)') },
          errors: [401],
        }),
      },
      async (request, reply) => {
        if (token !== undefined && !carriesToken(request.headers.authorization, token)) {
          reply.header('www-authenticate', 'Bearer realm="emk metrics"');
          throw new UnauthorizedError('missing or wrong metrics token');
        }
        const { body, queuesUnread } = await metrics.scrape();
        if (queuesUnread !== undefined) request.log.warn({ err: queuesUnread }, 'metrics: the shared queues could not be read');
        return reply.header('content-type', metrics.contentType).header('cache-control', 'no-store').send(body);
      },
    );
  };
}
