import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import type { FastifyInstance } from 'fastify';
import { z } from 'zod';
import type { Services } from '../../../domain/create-services.js';
import { PACKAGE_ROOT } from '../../../domain/shared/package.js';
import { text } from '../../../domain/shared/validate.js';
import { describeRoute } from '../../openapi/route-schema.js';

/** The pixel as kept in the repository (plain JavaScript, no build step), with its two placeholders. */
export const SHOPIFY_PIXEL_PATH = join(PACKAGE_ROOT, 'src', 'sdk', 'shopify-pixel.js');

/** The pixel with the server's public address and the workspace's site id in place of its placeholders. */
export function fillShopifyPixel(source: string, baseUrl: string, siteId: string): string {
  // Functions as replacements: a `$` in a value is taken literally.
  return source
    .replace("'EMK_BASE_URL'", () => JSON.stringify(baseUrl))
    .replace("'EMK_SITE_ID'", () => JSON.stringify(siteId));
}

/**
 * GET /platforms/shopify-pixel.js?s=<site_id>: the Shopify custom pixel filled in for this workspace, for the
 * operator to paste into Shopify's Customer events (docs/platforms/shopify.md). It posts to EMK_BASE_URL.
 */
export function shopifyPixelRoutes(services: Services, baseUrl: string) {
  const source = readFileSync(SHOPIFY_PIXEL_PATH, 'utf8');

  return async (app: FastifyInstance) => {
    app.get(
      '/platforms/shopify-pixel.js',
      {
        schema: describeRoute({
          tag: 'Browser SDK',
          credential: 'siteId',
          summary: "The Shopify custom pixel (Customer events) with this server's address and the site id filled in",
          query: z.object({ s: text(64).describe('The workspace site id') }),
          replies: { 200: z.string().describe('text/javascript') },
          errors: [400, 404],
        }),
      },
      async (request, reply) => {
        const { s } = request.query as { s: string };
        const workspace = await services.workspaces.findBySiteId(s.trim());
        return reply
          .header('content-type', 'text/javascript; charset=utf-8')
          .header('cache-control', 'no-store')
          .header('x-content-type-options', 'nosniff')
          .send(fillShopifyPixel(source, baseUrl, workspace.site_id));
      },
    );
  };
}
