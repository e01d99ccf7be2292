import type { FastifyInstance, FastifyReply } from 'fastify';
import { z } from 'zod';
import type { Services } from '../../../domain/create-services.js';
import { ValidationError } from '../../../domain/errors.js';
import { describedOnly, describeRoute } from '../../openapi/route-schema.js';
import { notFoundPage, preferencesPage, unsubscribedPage, unsubscribePage } from './consent-pages.js';

const consent = { tag: 'Consent pages', credential: 'none' as const };
const tokenParams = z.object({ token: z.string().describe('The signed token of a message’s consent links') });
const html = z.string().describe('text/html');
const preferencesBody = describedOnly(z.object({ status: z.enum(['subscribed', 'unsubscribed']) }).describe('Form data or JSON'));
type ByToken = { Params: { token: string } };

/** Form posts (and RFC 8058's one-click body) arrive as form data; the preferences form also takes JSON. */
function formField(body: unknown, contentType: string | undefined, field: string): string | null {
  if (body !== null && typeof body === 'object') {
    const value = (body as Record<string, unknown>)[field];
    return typeof value === 'string' ? value : null;
  }
  if (typeof body !== 'string') return null;
  if (contentType?.startsWith('application/json')) {
    try {
      const value = (JSON.parse(body) as Record<string, unknown>)[field];
      return typeof value === 'string' ? value : null;
    } catch {
      return null;
    }
  }
  return new URLSearchParams(body).get(field);
}

const sendPage = (reply: FastifyReply, status: number, body: string) =>
  reply.code(status).header('content-type', 'text/html; charset=utf-8').header('cache-control', 'no-store').send(body);

/** The recipient's unsubscribe and preferences pages (30 requests per minute per address). */
export function consentRoutes(services: Services) {
  return async (app: FastifyInstance) => {
    app.addContentTypeParser('*', { parseAs: 'string', bodyLimit: 65_536 }, (_request, body, done) => done(null, body));

    app.get<ByToken>(
      '/cp/unsubscribe/:token',
      { schema: describeRoute({ ...consent, summary: 'A page with a button that unsubscribes', params: tokenParams, replies: { 200: html, 404: html } }) },
      async (request, reply) => {
        const view = await services.consent.view(request.params.token);
        return view ? sendPage(reply, 200, unsubscribePage(view)) : sendPage(reply, 404, notFoundPage());
      },
    );

    app.post<ByToken>(
      '/cp/unsubscribe/:token',
      {
        schema: describeRoute({
          ...consent,
          summary: 'Unsubscribes: the page’s button, or a mail client’s one-click POST (`List-Unsubscribe=One-Click`, RFC 8058)',
          params: tokenParams,
          replies: { 200: html, 404: html },
        }),
      },
      async (request, reply) => {
        const oneClick = formField(request.body, request.headers['content-type'], 'List-Unsubscribe') === 'One-Click';
        const view = await services.consent.setStatus(request.params.token, 'unsubscribed', oneClick ? 'one_click' : 'unsubscribe_page');
        return view ? sendPage(reply, 200, unsubscribedPage(view)) : sendPage(reply, 404, notFoundPage());
      },
    );

    app.get<ByToken>(
      '/cp/preferences/:token',
      { schema: describeRoute({ ...consent, summary: 'A page that shows and changes the subscription status', params: tokenParams, replies: { 200: html, 404: html } }) },
      async (request, reply) => {
        const view = await services.consent.view(request.params.token);
        return view ? sendPage(reply, 200, preferencesPage(view)) : sendPage(reply, 404, notFoundPage());
      },
    );

    app.post<ByToken>(
      '/cp/preferences/:token',
      {
        schema: describeRoute({
          ...consent,
          summary: 'Changes the status (`status`: subscribed or unsubscribed, form data or JSON)',
          params: tokenParams,
          body: preferencesBody,
          replies: { 200: html, 404: html },
          errors: [400],
        }),
      },
      async (request, reply) => {
        const status = formField(request.body, request.headers['content-type'], 'status');
        if (status !== 'subscribed' && status !== 'unsubscribed') {
          throw new ValidationError('invalid request: status must be one of subscribed, unsubscribed');
        }
        const view = await services.consent.setStatus(request.params.token, status, 'preferences_page');
        return view ? sendPage(reply, 200, preferencesPage(view, true)) : sendPage(reply, 404, notFoundPage());
      },
    );
  };
}
