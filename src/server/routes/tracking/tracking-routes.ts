import type { FastifyInstance } from 'fastify';
import { z } from 'zod';
import type { Services } from '../../../domain/create-services.js';
import { NotFoundError } from '../../../domain/errors.js';
import { describeRoute } from '../../openapi/route-schema.js';

const tracking = { tag: 'Tracking', credential: 'none' as const };
const tokenParams = z.object({ token: z.string().describe('A signed token from a sent message') });
/** The smallest transparent GIF: 1×1, one colour. */
const PIXEL = Buffer.from('R0lGODlhAQABAIAAAAAAAP///yH5BAEAAAAALAAAAAABAAEAAAIBRAA7', 'base64');

/**
 * The links and the pixel of sent messages. A token that is not ours, or whose message does not exist (a
 * preview's, an erased contact's), is a 404 and never redirects.
 */
export function trackingRoutes(services: Services) {
  return async (app: FastifyInstance) => {
    app.get<{ Params: { token: string } }>(
      '/t/c/:token',
      {
        schema: describeRoute({
          ...tracking,
          summary: 'A click on a sent message: records it, then 302 to the original URL (with `_ir_id` on the workspace\'s own domains)',
          params: tokenParams,
          replies: { 302: z.null().describe('Redirect to the original link') },
          errors: [404],
        }),
      },
      async (request, reply) => {
        const location = await services.tracking.click(request.params.token);
        if (location === null) throw new NotFoundError();
        return reply.code(302).header('cache-control', 'no-store').header('location', location).send();
      },
    );

    app.get<{ Params: { token: string } }>(
      '/t/o/:token',
      {
        schema: describeRoute({
          ...tracking,
          summary: 'An open: records it and answers a 1×1 GIF that is never cached',
          params: tokenParams,
          replies: { 200: z.string().describe('image/gif') },
          errors: [404],
        }),
      },
      async (request, reply) => {
        if (!(await services.tracking.open(request.params.token))) throw new NotFoundError();
        return reply
          .header('content-type', 'image/gif')
          .header('cache-control', 'no-store, no-cache, must-revalidate, max-age=0')
          .header('pragma', 'no-cache')
          .send(PIXEL);
      },
    );
  };
}
