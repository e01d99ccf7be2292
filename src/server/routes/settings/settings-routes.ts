import type { FastifyInstance } from 'fastify';
import type { Services } from '../../../domain/create-services.js';
import { settingsRecordSchema, updateSettingsSchema } from '../../../domain/settings/settings.schema.js';
import { describeRoute } from '../../openapi/route-schema.js';

const settings = { tag: 'Settings', credential: 'apiKey' as const };

/** Workspace settings: attribution windows, contact limit, sender. */
export function settingsRoutes(services: Services) {
  return async (app: FastifyInstance) => {
    app.get(
      '/settings',
      { schema: describeRoute({ ...settings, summary: "The workspace's settings", replies: { 200: settingsRecordSchema }, errors: [401] }) },
      async (request) => services.settings.get(request.workspaceId),
    );
    app.patch(
      '/settings',
      {
        schema: describeRoute({
          ...settings,
          summary: 'Change attribution windows, the contact limit (null: none) or the sender',
          body: updateSettingsSchema,
          replies: { 200: settingsRecordSchema },
          errors: [400, 401],
        }),
      },
      async (request) => services.settings.update(request.workspaceId, request.body),
    );
  };
}
