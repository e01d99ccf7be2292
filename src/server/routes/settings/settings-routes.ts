import type { FastifyInstance } from 'fastify';
import type { Services } from '../../../domain/create-services.js';

/** Workspace settings (CONTRACT §3): attribution windows, contact limit, sender. */
export function settingsRoutes(services: Services) {
  return async (app: FastifyInstance) => {
    app.get('/settings', async (request) => services.settings.get(request.workspaceId));
    app.patch('/settings', async (request) => services.settings.update(request.workspaceId, request.body));
  };
}
