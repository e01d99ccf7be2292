import type { FastifyInstance } from 'fastify';
import { z } from 'zod';
import type { Services } from '../../../domain/create-services.js';
import { createSenderSchema, senderRecordSchema } from '../../../domain/senders/sender.schema.js';
import { describeRoute, idParams, pageOf } from '../../openapi/route-schema.js';

const senders = { tag: 'Senders', credential: 'apiKey' as const };

/** Sender domains (owners only, docs/api/senders.md): add one (with its DKIM key and DNS records), list, remove. */
export function senderRoutes(services: Services) {
  return async (app: FastifyInstance) => {
    app.get(
      '/senders',
      { schema: describeRoute({ ...senders, summary: 'The sender domains an owner added, with their DNS records', replies: { 200: pageOf(senderRecordSchema) }, errors: [401, 403] }) },
      async (request) => services.senders.list(request.workspaceId),
    );

    app.post(
      '/senders',
      {
        schema: describeRoute({
          ...senders,
          summary: 'Add a sender domain: makes its DKIM key pair and answers the DNS records to publish',
          body: createSenderSchema,
          replies: { 201: senderRecordSchema },
          errors: [400, 401, 403, 409],
        }),
      },
      async (request, reply) => reply.code(201).send(await services.senders.add(request.workspaceId, request.body)),
    );

    app.delete<{ Params: { id: string } }>(
      '/senders/:id',
      {
        schema: describeRoute({
          ...senders,
          summary: 'Remove a sender domain: from_email can no longer be at it',
          params: idParams,
          replies: { 204: z.null().describe('No content') },
          errors: [401, 403, 404],
        }),
      },
      async (request, reply) => {
        await services.senders.remove(request.workspaceId, request.params.id);
        return reply.code(204).send();
      },
    );
  };
}
