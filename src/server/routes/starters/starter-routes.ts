import type { FastifyInstance } from 'fastify';
import { z } from 'zod';
import type { Services } from '../../../domain/create-services.js';
import { starterRecordSchema } from '../../../domain/starters/starter-service.js';
import { describeRoute } from '../../openapi/route-schema.js';

/** Starters: ready flows and campaign templates; `POST /flows` or `/campaigns` with `{"starter": ID}` makes a draft. */
export function starterRoutes(services: Services) {
  return async (app: FastifyInstance) => {
    app.get(
      '/starters',
      {
        schema: describeRoute({
          tag: 'Starters',
          credential: 'apiKey',
          summary: 'The starters: flows and campaign templates with responsive (MJML) emails, for POST /flows or /campaigns {"starter": id}',
          replies: { 200: z.object({ data: z.array(starterRecordSchema) }) },
          errors: [401],
        }),
      },
      async () => ({ data: services.starters.list() }),
    );
  };
}
