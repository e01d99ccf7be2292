import type { FastifyInstance } from 'fastify';
import { z } from 'zod';
import type { Services } from '../../../domain/create-services.js';
import { readiness } from '../../../domain/db/migrate.js';
import { describeRoute } from '../../openapi/route-schema.js';

const NOT_READY_RETRY_AFTER_SECONDS = 5;
const health = { tag: 'Operations', credential: 'none' as const };

/** Present when EMK_DATABASE_READ_URL is set: a replica down or lagging leaves the server ready (the primary answers). */
const readReplicaReply = z.object({
  status: z.enum(['up', 'lagging', 'down', 'unknown']),
  lag_seconds: z.number().nullable(),
});

/** For load balancers and orchestrators: is the process alive, and can it serve (database up to date)? */
export function healthRoutes(services: Services) {
  return async (app: FastifyInstance) => {
    app.get(
      '/healthz',
      { schema: describeRoute({ ...health, summary: 'Liveness: the process answers', replies: { 200: z.object({ status: z.literal('ok') }) } }) },
      async () => ({ status: 'ok' }),
    );

    app.get(
      '/readyz',
      {
        schema: describeRoute({
          ...health,
          summary: 'Readiness: the database answers and every migration is applied (else 503); the read replica\'s state',
          replies: { 200: z.object({ status: z.literal('ready'), read_replica: readReplicaReply.optional() }) },
          errors: [503],
        }),
      },
      async (request, reply) => {
        const [state, replica] = await Promise.all([readiness(services.db.knex), services.db.readReplicaStatus()]);
        if (state.ready) return replica ? { status: 'ready', read_replica: replica } : { status: 'ready' };
        return reply
          .code(503)
          .header('retry-after', String(NOT_READY_RETRY_AFTER_SECONDS))
          .send({ error: `not ready: ${state.reason}`, request_id: request.id });
      },
    );
  };
}
