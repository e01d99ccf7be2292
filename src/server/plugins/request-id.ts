import { randomUUID } from 'node:crypto';
import type { IncomingMessage } from 'node:http';
import type { FastifyInstance } from 'fastify';

// Any printable ASCII: it is echoed in a header, where nothing else could travel anyway.
const ACCEPTED_REQUEST_ID = /^[\x20-\x7e]{1,200}$/;

/** The caller's `X-Request-Id` when it is printable and of sane length, else a fresh one. */
export function requestIdOf(request: IncomingMessage): string {
  const sent = request.headers['x-request-id'];
  return typeof sent === 'string' && ACCEPTED_REQUEST_ID.test(sent) ? sent : randomUUID();
}

/** Every response carries `X-Request-Id` (docs/api/README.md, Conventions). */
export function registerRequestId(app: FastifyInstance): void {
  app.addHook('onRequest', async (request, reply) => {
    reply.header('x-request-id', request.id);
  });
}
