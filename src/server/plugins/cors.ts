import type { FastifyInstance } from 'fastify';

/**
 * The Collect API is called from shops' own pages on other origins. It needs no cookies or credentials
 * (the SDK sends ids in the body), so any origin may call it.
 */
export function registerCors(app: FastifyInstance, pathPrefixes: string[]): void {
  const applies = (url: string) => pathPrefixes.some((prefix) => url.startsWith(prefix));
  app.addHook('onRequest', async (request, reply) => {
    if (!applies(request.url)) return;
    reply.header('access-control-allow-origin', '*');
    // The SDK honours Retry-After on 429 and 503; cross-origin it can read it only when exposed.
    reply.header('access-control-expose-headers', 'retry-after');
    if (request.method === 'OPTIONS') {
      return reply
        .header('access-control-allow-methods', 'GET, POST, OPTIONS')
        .header('access-control-allow-headers', request.headers['access-control-request-headers'] ?? 'content-type')
        .header('access-control-max-age', '86400')
        .code(204)
        .send();
    }
  });
}
