import { Readable } from 'node:stream';
import type { FastifyInstance } from 'fastify';
import { z } from 'zod';
import {
  consentHistorySchema,
  contactListQuerySchema,
  contactRecordSchema,
  updateContactSchema,
  upsertContactSchema,
} from '../../../domain/contacts/contact.schema.js';
import type { Services } from '../../../domain/create-services.js';
import { contactExportSchema } from '../../../domain/data-rights/data-rights.schema.js';
import { pagingSchema } from '../../../domain/shared/paging.js';
import { parseInput } from '../../../domain/shared/validate.js';
import { describeRoute, idParams, pageOf } from '../../openapi/route-schema.js';

const contacts = { tag: 'Contacts', credential: 'apiKey' as const };

/** Management contacts: list and read, reconcile by email, merge and consent updates, erasure and export. */
export function contactRoutes(services: Services) {
  return async (app: FastifyInstance) => {
    app.get(
      '/contacts',
      {
        schema: describeRoute({
          ...contacts,
          summary: 'List contacts, newest first (`email`: exact, case-insensitive)',
          query: contactListQuerySchema.extend(pagingSchema.shape),
          replies: { 200: pageOf(contactRecordSchema) },
          errors: [400, 401],
        }),
      },
      async (request) => services.contacts.list(request.workspaceId, request.query, parseInput(pagingSchema, request.query)),
    );

    app.get<{ Params: { id: string } }>(
      '/contacts/:id',
      { schema: describeRoute({ ...contacts, summary: 'Read a contact', params: idParams, replies: { 200: contactRecordSchema }, errors: [401, 404] }) },
      async (request) => services.contacts.get(request.workspaceId, request.params.id),
    );

    app.post(
      '/contacts',
      {
        schema: describeRoute({
          ...contacts,
          summary: "Create a contact, or merge properties into the email's contact (its status never changes here)",
          body: upsertContactSchema,
          replies: { 200: contactRecordSchema, 201: contactRecordSchema },
          errors: [400, 401, 403],
        }),
      },
      async (request, reply) => {
        const { contact, created } = await services.contacts.upsert(request.workspaceId, request.body);
        return reply.code(created ? 201 : 200).send(contact);
      },
    );

    app.patch<{ Params: { id: string } }>(
      '/contacts/:id',
      {
        schema: describeRoute({
          ...contacts,
          summary: 'Merge properties; change the subscription status (recorded with time and origin)',
          params: idParams,
          body: updateContactSchema,
          replies: { 200: contactRecordSchema },
          errors: [400, 401, 404],
        }),
      },
      async (request) => services.contacts.update(request.workspaceId, request.params.id, request.body),
    );

    app.get<{ Params: { id: string } }>(
      '/contacts/:id/consent',
      {
        schema: describeRoute({
          ...contacts,
          summary: 'Every subscription status change, oldest first, with the status before and its origin',
          params: idParams,
          replies: { 200: consentHistorySchema },
          errors: [401, 404],
        }),
      },
      async (request) => services.contacts.consentHistory(request.workspaceId, request.params.id),
    );

    app.delete<{ Params: { id: string } }>(
      '/contacts/:id',
      {
        schema: describeRoute({
          ...contacts,
          summary: 'Erase the person: events, messages, carts, consent, memberships, enrolments go; orders stay on an anonymous tombstone',
          params: idParams,
          replies: { 204: z.null().describe('No content') },
          errors: [401, 404],
        }),
      },
      async (request, reply) => {
        await services.dataRights.erase(request.workspaceId, request.params.id);
        return reply.code(204).send();
      },
    );

    app.get<{ Params: { id: string } }>(
      '/contacts/:id/export',
      {
        schema: describeRoute({
          ...contacts,
          summary: 'Everything kept about the person: the contact, all its events, orders, carts, messages and consent history',
          params: idParams,
          replies: { 200: contactExportSchema },
          errors: [401, 404],
        }),
      },
      // Streamed: each page of the person's history is written before the next is read (docs/api/data-rights.md#export).
      async (request, reply) => {
        const body = await services.dataRights.exportJson(request.workspaceId, request.params.id);
        return reply.type('application/json; charset=utf-8').send(Readable.from(body));
      },
    );
  };
}
