import type { FastifyInstance } from 'fastify';
import { z } from 'zod';
import type { Services } from '../../../domain/create-services.js';
import {
  enrollmentListQuerySchema,
  enrollmentRecordSchema,
  webhookAttemptQuerySchema,
  webhookAttemptRecordSchema,
  flowCreateDocSchema,
  flowRecordSchema,
  flowReportSchema,
  flowUpdateDocSchema,
  stepPathSchema,
  stepPreviewQuerySchema,
} from '../../../domain/flows/flow.schema.js';
import { pagingSchema } from '../../../domain/shared/paging.js';
import { parseInput } from '../../../domain/shared/validate.js';
import { describedOnly, describeRoute, idParams, pageOf } from '../../openapi/route-schema.js';
import { isStarterRequest, starterRequestSchema } from '../../../domain/starters/starter-service.js';
import { sendPreviewPage } from '../../plugins/security-headers.js';

const flows = { tag: 'Flows', credential: 'apiKey' as const };
type ById = { Params: { id: string } };

/** Flows: the records, their enrolments and their report. The engine runs them on the worker. */
export function flowRoutes(services: Services) {
  return async (app: FastifyInstance) => {
    app.post(
      '/flows',
      {
        schema: describeRoute({
          ...flows,
          summary: 'Create a flow, or a draft from a starter with {"starter": id, "name"?} (templates, filters and a segment trigger are checked: a 400 names the place)',
          // Either the record or a starter's id (checked by the domain, which tells them apart).
          body: describedOnly(z.union([flowCreateDocSchema, starterRequestSchema])),
          replies: { 201: flowRecordSchema },
          errors: [400, 401],
        }),
      },
      async (request, reply) =>
        reply
          .code(201)
          .send(await (isStarterRequest(request.body) ? services.starters.createFlow(request.workspaceId, request.body) : services.flows.create(request.workspaceId, request.body))),
    );

    app.get(
      '/flows',
      { schema: describeRoute({ ...flows, summary: 'List flows, newest first', query: pagingSchema, replies: { 200: pageOf(flowRecordSchema) }, errors: [400, 401] }) },
      async (request) => services.flows.list(request.workspaceId, parseInput(pagingSchema, request.query)),
    );

    app.get<ById>(
      '/flows/:id',
      { schema: describeRoute({ ...flows, summary: 'Read a flow', params: idParams, replies: { 200: flowRecordSchema }, errors: [401, 404] }) },
      async (request) => services.flows.get(request.workspaceId, request.params.id),
    );

    app.patch<ById>(
      '/flows/:id',
      {
        schema: describeRoute({
          ...flows,
          summary: 'Change any field; a flow that is not live holds its enrolments, going live resumes them',
          params: idParams,
          body: flowUpdateDocSchema,
          replies: { 200: flowRecordSchema },
          errors: [400, 401, 404],
        }),
      },
      async (request) => services.flows.update(request.workspaceId, request.params.id, request.body),
    );

    app.delete<ById>(
      '/flows/:id',
      { schema: describeRoute({ ...flows, summary: 'Delete: its enrolments end (exited, flow_deleted), then it answers 404', params: idParams, replies: { 204: z.null().describe('No content') }, errors: [401, 404] }) },
      async (request, reply) => {
        await services.flows.delete(request.workspaceId, request.params.id);
        return reply.code(204).send();
      },
    );

    app.get<ById>(
      '/flows/:id/enrollments',
      {
        schema: describeRoute({
          ...flows,
          summary: 'Enrolments, newest first (filter by `status`)',
          params: idParams,
          query: pagingSchema.extend(enrollmentListQuerySchema.shape),
          replies: { 200: pageOf(enrollmentRecordSchema) },
          errors: [400, 401, 404],
        }),
      },
      async (request) => services.flows.enrollments(request.workspaceId, request.params.id, request.query, parseInput(pagingSchema, request.query)),
    );

    app.get<ById>(
      '/flows/:id/webhook-attempts',
      {
        schema: describeRoute({
          ...flows,
          summary: 'Calls of the flow\'s webhook steps, newest first (filter by `enrollment_id`)',
          params: idParams,
          query: pagingSchema.extend(webhookAttemptQuerySchema.shape),
          replies: { 200: pageOf(webhookAttemptRecordSchema) },
          errors: [400, 401, 404],
        }),
      },
      async (request) => services.flows.webhookAttempts(request.workspaceId, request.params.id, request.query, parseInput(pagingSchema, request.query)),
    );

    app.get<ById>(
      '/flows/:id/report',
      { schema: describeRoute({ ...flows, summary: 'Delivery, engagement, attributed revenue (net) and enrolment outcomes', params: idParams, replies: { 200: flowReportSchema }, errors: [401, 404] }) },
      async (request) => services.flows.report(request.workspaceId, request.params.id),
    );

    app.get<{ Params: { id: string; path: string } }>(
      '/flows/:id/steps/:path/preview.html',
      {
        schema: describeRoute({
          ...flows,
          summary: "An email step's message as a page for a browser (`path`: `2`, or `2.yes.0` in a step's list; the trigger as the contact's latest enrolment saw it)",
          params: idParams.extend(stepPathSchema.shape),
          query: stepPreviewQuerySchema,
          replies: { 200: z.string().describe('text/html') },
          errors: [400, 401, 404],
        }),
      },
      async (request, reply) =>
        sendPreviewPage(reply, (await services.flows.previewStep(request.workspaceId, request.params.id, { path: request.params.path }, request.query)).html),
    );
  };
}
