import type { FastifyInstance } from 'fastify';
import { z } from 'zod';
import type { Services } from '../../../domain/create-services.js';
import {
  campaignCreateSchema,
  campaignPreviewReplySchema,
  campaignPreviewSchema,
  campaignRecordSchema,
  campaignReportSchema,
  campaignSendReplySchema,
  campaignSendSchema,
  campaignUpdateSchema,
} from '../../../domain/campaigns/campaign.schema.js';
import { pagingSchema } from '../../../domain/shared/paging.js';
import { parseInput } from '../../../domain/shared/validate.js';
import { describedOnly, describeRoute, idParams, pageOf } from '../../openapi/route-schema.js';
import { isStarterRequest, starterRequestSchema } from '../../../domain/starters/starter-service.js';
import { sendPreviewPage } from '../../plugins/security-headers.js';

const campaigns = { tag: 'Campaigns', credential: 'apiKey' as const };
type ById = { Params: { id: string } };

/** Campaigns: drafts, one send (now or scheduled), the report, a preview for one contact. */
export function campaignRoutes(services: Services) {
  return async (app: FastifyInstance) => {
    app.post(
      '/campaigns',
      {
        schema: describeRoute({
          ...campaigns,
          summary: 'Create a draft, or one from a campaign starter with {"starter": id, "name"?} (templates are checked: one that does not parse or cannot render within the limits is a 400 naming its field)',
          // Either the record or a starter's id (checked by the domain, which tells them apart).
          body: describedOnly(z.union([campaignCreateSchema, starterRequestSchema])),
          replies: { 201: campaignRecordSchema },
          errors: [400, 401],
        }),
      },
      async (request, reply) =>
        reply
          .code(201)
          .send(await (isStarterRequest(request.body) ? services.starters.createCampaign(request.workspaceId, request.body) : services.campaigns.create(request.workspaceId, request.body))),
    );

    app.get(
      '/campaigns',
      { schema: describeRoute({ ...campaigns, summary: 'List campaigns, newest first', query: pagingSchema, replies: { 200: pageOf(campaignRecordSchema) }, errors: [400, 401] }) },
      async (request) => services.campaigns.list(request.workspaceId, parseInput(pagingSchema, request.query)),
    );

    app.get<ById>(
      '/campaigns/:id',
      { schema: describeRoute({ ...campaigns, summary: 'Read a campaign', params: idParams, replies: { 200: campaignRecordSchema }, errors: [401, 404] }) },
      async (request) => services.campaigns.get(request.workspaceId, request.params.id),
    );

    app.patch<ById>(
      '/campaigns/:id',
      {
        schema: describeRoute({
          ...campaigns,
          summary: 'Change a draft (409 once it is scheduled or sent)',
          params: idParams,
          body: campaignUpdateSchema,
          replies: { 200: campaignRecordSchema },
          errors: [400, 401, 404, 409],
        }),
      },
      async (request) => services.campaigns.update(request.workspaceId, request.params.id, request.body),
    );

    app.delete<ById>(
      '/campaigns/:id',
      { schema: describeRoute({ ...campaigns, summary: 'Delete a draft (409 once it is scheduled or sent)', params: idParams, replies: { 204: z.null().describe('No content') }, errors: [401, 404, 409] }) },
      async (request, reply) => {
        await services.campaigns.delete(request.workspaceId, request.params.id);
        return reply.code(204).send();
      },
    );

    app.post<ById>(
      '/campaigns/:id/send',
      {
        schema: describeRoute({
          ...campaigns,
          summary: 'Send now (recipients fixed at once) or at `send_at`; a second send is 409',
          params: idParams,
          body: campaignSendSchema.nullish(),
          replies: { 202: campaignSendReplySchema },
          errors: [400, 401, 404, 409],
        }),
      },
      async (request, reply) => reply.code(202).send(await services.campaigns.send(request.workspaceId, request.params.id, request.body)),
    );

    app.get<ById>(
      '/campaigns/:id/report',
      { schema: describeRoute({ ...campaigns, summary: 'Delivery, engagement and attributed revenue (net); an A/B campaign adds its variants', params: idParams, replies: { 200: campaignReportSchema }, errors: [401, 404] }) },
      async (request) => services.campaigns.report(request.workspaceId, request.params.id),
    );

    app.post<ById>(
      '/campaigns/:id/preview',
      {
        schema: describeRoute({
          ...campaigns,
          summary: 'The message as one contact would get it (blocks ranked for them, links signed); nothing is sent or stored',
          params: idParams,
          body: campaignPreviewSchema,
          replies: { 200: campaignPreviewReplySchema },
          errors: [400, 401, 404],
        }),
      },
      async (request) => services.campaigns.preview(request.workspaceId, request.params.id, request.body),
    );

    app.get<ById>(
      '/campaigns/:id/preview.html',
      {
        schema: describeRoute({
          ...campaigns,
          summary: 'The rendered message as a page for a browser (text/html; footer as sent, links as written, no script runs)',
          params: idParams,
          query: campaignPreviewSchema,
          replies: { 200: z.string().describe('text/html') },
          errors: [400, 401, 404],
        }),
      },
      async (request, reply) => sendPreviewPage(reply, (await services.campaigns.preview(request.workspaceId, request.params.id, request.query)).html),
    );
  };
}
