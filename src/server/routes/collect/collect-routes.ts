import type { FastifyInstance } from 'fastify';
import { z } from 'zod';
import type { Services } from '../../../domain/create-services.js';
import { parseInput, text } from '../../../domain/shared/validate.js';

const siteSchema = z.object({ site_id: text(64) });

/** Collect API: no key, the workspace named by `site_id` in the body (browser or server). */
export function collectRoutes(services: Services) {
  const workspaceOf = async (body: unknown) => {
    const { site_id } = parseInput(siteSchema, body);
    return services.workspaces.findBySiteId(site_id);
  };

  return async (app: FastifyInstance) => {
    app.post('/collect/identify', async (request) => {
      const workspace = await workspaceOf(request.body);
      return services.contacts.identify(workspace.id, request.body);
    });

    app.post('/collect/event', async (request) => {
      const workspace = await workspaceOf(request.body);
      await services.events.collect(workspace.id, request.body);
      return { success: true };
    });
  };
}
