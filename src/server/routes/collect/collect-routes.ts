import type { FastifyInstance } from 'fastify';
import { z } from 'zod';
import { identifyReplySchema, identifySchema } from '../../../domain/contacts/contact.schema.js';
import type { Services } from '../../../domain/create-services.js';
import { collectEventSchema } from '../../../domain/events/event.schema.js';
import { parseInput, text } from '../../../domain/shared/validate.js';
import { bodyOf, describeRoute } from '../../openapi/route-schema.js';

const siteSchema = z.object({ site_id: text(64).describe('The workspace site id') });

/** Collect API: no key, the workspace named by `site_id` in the body (browser or server). */
export function collectRoutes(services: Services) {
  const workspaceOf = async (body: unknown) => {
    const { site_id } = parseInput(siteSchema, body);
    return services.workspaces.findBySiteId(site_id);
  };
  const collect = { tag: 'Collect API', credential: 'siteId' as const, errors: [400, 404, 429] };

  return async (app: FastifyInstance) => {
    app.post(
      '/collect/identify',
      { schema: describeRoute({ ...collect, summary: 'Identify a visitor by email (contact created if absent)', body: bodyOf(siteSchema, identifySchema), replies: { 200: identifyReplySchema } }) },
      async (request) => {
        const workspace = await workspaceOf(request.body);
        return services.contacts.identify(workspace.id, request.body);
      },
    );

    app.post(
      '/collect/event',
      {
        schema: describeRoute({
          ...collect,
          summary: 'Record an event of a contact (by email or contact_id) or an anonymous visitor',
          body: bodyOf(siteSchema, collectEventSchema),
          replies: { 200: z.object({ success: z.literal(true) }) },
        }),
      },
      async (request) => {
        const workspace = await workspaceOf(request.body);
        await services.events.collect(workspace.id, request.body);
        return { success: true };
      },
    );
  };
}
