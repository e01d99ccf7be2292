import type { FastifyInstance } from 'fastify';
import type { Services } from '../../../domain/create-services.js';
import { messageListQuerySchema, messageRecordSchema } from '../../../domain/messages/message.schema.js';
import { pagingSchema } from '../../../domain/shared/paging.js';
import { parseInput } from '../../../domain/shared/validate.js';
import { describeRoute, idParams, pageOf } from '../../openapi/route-schema.js';

const messages = { tag: 'Messages', credential: 'apiKey' as const };
const listQuery = messageListQuerySchema.extend(pagingSchema.shape);

/** Every message sent or captured for campaigns and flows. */
export function messageRoutes(services: Services) {
  return async (app: FastifyInstance) => {
    app.get(
      '/messages',
      { schema: describeRoute({ ...messages, summary: 'List messages, newest first; filter by contact, campaign or flow', query: listQuery, replies: { 200: pageOf(messageRecordSchema) }, errors: [400, 401] }) },
      async (request) => services.messages.list(request.workspaceId, request.query, parseInput(pagingSchema, request.query)),
    );
    app.get<{ Params: { id: string } }>(
      '/messages/:id',
      { schema: describeRoute({ ...messages, summary: 'Read one message', params: idParams, replies: { 200: messageRecordSchema }, errors: [401, 404] }) },
      async (request) => services.messages.get(request.workspaceId, request.params.id),
    );
  };
}
