import { z } from 'zod';
import { describeRoute } from '../../openapi/route-schema.js';
import { createHash } from 'node:crypto';
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { gzipSync } from 'node:zlib';
import type { FastifyInstance } from 'fastify';
import { PACKAGE_ROOT } from '../../../domain/shared/package.js';

/**
 * The URL shops paste is fixed (no version in it), so caches keep the script only briefly: a fix reaches
 * every page within five minutes, and the ETag makes each re-check a 304 without a body.
 */
const CACHE_CONTROL = 'public, max-age=300';

/** dist/sdk/emk.js of this package, from src/ (tests) and from dist/src/ (the built server) alike. */
export function builtScriptPath(): string {
  return join(PACKAGE_ROOT, 'dist', 'sdk', 'emk.js');
}

interface Script {
  plain: Buffer;
  gzipped: Buffer;
  etag: string;
}

function loadScript(path: string): Script | null {
  if (!existsSync(path)) return null;
  const plain = readFileSync(path);
  const etag = `"${createHash('sha256').update(plain).digest('base64url').slice(0, 22)}"`;
  return { plain, gzipped: gzipSync(plain, { level: 9 }), etag };
}

/** Whether Accept-Encoding allows gzip (named, or `*`, without `q=0`). */
function acceptsGzip(header: string | undefined): boolean {
  for (const part of (header ?? '').split(',')) {
    const [coding, ...params] = part.split(';').map((p) => p.trim().toLowerCase());
    if (coding !== 'gzip' && coding !== '*') continue;
    const q = params.find((p) => p.startsWith('q='));
    return q === undefined || Number(q.slice(2)) > 0;
  }
  return false;
}

/**
 * GET /emk.js?s=<site_id>: the browser SDK (docs/api/sdk.md). The same bytes for every site: the script reads
 * `s` from its own URL. Read once at start-up, kept gzipped in memory.
 */
export function sdkRoutes(options: { scriptPath?: string } = {}) {
  const script = loadScript(options.scriptPath ?? builtScriptPath());

  return async (app: FastifyInstance) => {
    app.get(
      '/emk.js',
      {
        schema: describeRoute({
          tag: 'Browser SDK',
          credential: 'siteId',
          summary: 'The browser SDK script (`s` initialises it and starts page-view tracking); ETag, gzip, 5-minute cache',
          query: z.object({ s: z.string().optional().describe('The workspace site id') }),
          replies: { 200: z.string().describe('application/javascript'), 304: z.null().describe('Not modified') },
          errors: [404],
        }),
      },
      async (request, reply) => {
      if (!script) return reply.code(404).send({ error: 'emk.js is not built (npm run build)', request_id: request.id });
      reply
        .header('content-type', 'application/javascript; charset=utf-8')
        .header('cache-control', CACHE_CONTROL)
        .header('etag', script.etag)
        .header('vary', 'Accept-Encoding')
        .header('x-content-type-options', 'nosniff');
      const known = request.headers['if-none-match'];
      if (known && known.split(',').some((tag) => tag.trim().replace(/^W\//, '') === script.etag)) {
        return reply.code(304).send();
      }
      if (acceptsGzip(request.headers['accept-encoding'])) {
        return reply.header('content-encoding', 'gzip').send(script.gzipped);
      }
      return reply.send(script.plain);
      },
    );
  };
}
