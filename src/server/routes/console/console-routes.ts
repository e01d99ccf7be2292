import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { z } from 'zod';
import type { EmkConfig } from '../../../domain/config.js';
import type { Services } from '../../../domain/create-services.js';
import { EmkError, ForbiddenError, RateLimitedError, UnauthorizedError } from '../../../domain/errors.js';
import { pagingSchema } from '../../../domain/shared/paging.js';
import { parseInput } from '../../../domain/shared/validate.js';
import type { ConsoleUser } from '../../../domain/users/user-service.js';
import { CONSOLE_ABSOLUTE_MS } from '../../../domain/users/user-service.js';
import { describeRoute } from '../../openapi/route-schema.js';
import {
  campaignPage,
  campaignsPage,
  errorPage,
  flowPage,
  flowsPage,
  messagePage,
  messagesPage,
  overviewPage,
  segmentsPage,
  signInPage,
  type Viewer,
} from './console-pages.js';

/** The session cookie: its value is the opaque token; the server keeps only its hash (docs/console.md). */
export const SESSION_COOKIE = 'emk_console';
const SIGN_IN = '/console/sign-in';
/** A sign-in form is two short fields: anything longer is refused before it is read whole. */
const FORM_LIMIT_BYTES = 4_096;

const page = { tag: 'Console', credential: 'consoleSession' as const };
const htmlReply = z.string().describe('text/html');
const idParams = z.object({ id: z.string().describe('The id') });
const pageQuery = z.object({ page: z.string().optional().describe('1-based page') });
const messageQuery = pageQuery.extend({
  campaign: z.string().optional().describe("A campaign's id: its messages only"),
  flow: z.string().optional().describe("A flow's id: its messages only"),
});
const signInForm = z.object({ email: z.string(), password: z.string() }).partial().describe('Form data: email, password');

declare module 'fastify' {
  interface FastifyRequest {
    consoleUser?: ConsoleUser;
  }
}

function cookieOf(request: FastifyRequest, name: string): string | null {
  const header = request.headers.cookie;
  if (!header) return null;
  for (const part of header.split(';')) {
    const at = part.indexOf('=');
    if (at > 0 && part.slice(0, at).trim() === name) return part.slice(at + 1).trim();
  }
  return null;
}

const sendPage = (reply: FastifyReply, status: number, body: string) =>
  reply.code(status).header('content-type', 'text/html; charset=utf-8').header('cache-control', 'no-store').send(body);

/** Console paging: 20 a page (each row of a campaign or flow list carries its report). */
const consolePaging = (query: { page?: string }) => parseInput(pagingSchema, { page: query.page ?? 1, perPage: 20 });

/**
 * The read-only operator console (docs/console.md): server-rendered pages for a user signed in with its email
 * and password. The session is an opaque token in an `HttpOnly`, `SameSite=Strict` cookie (`Secure` over TLS);
 * the sign-in and sign-out forms are also refused from another origin (the `Origin` header). Sign-in shares the
 * `/api/v1/auth/*` rate limit. Every number is read by the console read model from the API's own functions.
 */
export function consoleRoutes(services: Services, config: Pick<EmkConfig, 'baseUrl'>) {
  const baseOrigin = new URL(config.baseUrl).origin;
  const httpsBase = baseOrigin.startsWith('https:');

  /**
   * The origins a console form may be posted from: this server as the request reached it, and EMK_BASE_URL's. A
   * browser that hides the origin (`null`, or none) must say the request is its own (`Sec-Fetch-Site`).
   */
  function sameOrigin(request: FastifyRequest): boolean {
    const origin = request.headers.origin;
    if (origin === undefined || origin === 'null') return request.headers['sec-fetch-site'] === 'same-origin';
    return origin === baseOrigin || origin === `${request.protocol}://${request.host}`;
  }

  function cookie(request: FastifyRequest, value: string, maxAgeSeconds: number): string {
    const secure = request.protocol === 'https' || httpsBase;
    return `${SESSION_COOKIE}=${value}; Path=/console; HttpOnly; SameSite=Strict; Max-Age=${maxAgeSeconds}${secure ? '; Secure' : ''}`;
  }

  async function viewerOf(user: ConsoleUser): Promise<Viewer> {
    return { email: user.email, workspaceName: (await services.workspaces.get(user.workspaceId)).name };
  }

  return async (app: FastifyInstance) => {
    app.addContentTypeParser('application/x-www-form-urlencoded', { parseAs: 'string', bodyLimit: FORM_LIMIT_BYTES }, (_request, body, done) => {
      done(null, Object.fromEntries(new URLSearchParams(body as string)));
    });

    // Failures of a console page are pages; a rate limit keeps the API's envelope and Retry-After.
    app.setErrorHandler((error, request, reply) => {
      if (error instanceof EmkError && error.httpStatus < 500 && !(error instanceof RateLimitedError)) {
        return sendPage(reply, error.httpStatus, errorPage(error.httpStatus, error.message));
      }
      throw error;
    });

    // Every page but sign-in needs a live session: without one, the browser is sent to sign in.
    app.addHook('preHandler', async (request, reply) => {
      if (request.routeOptions.url === SIGN_IN) return;
      const token = cookieOf(request, SESSION_COOKIE);
      const user = token ? await services.users.consoleSession(token) : null;
      if (!user) return reply.redirect(SIGN_IN, 303);
      request.consoleUser = user;
    });

    app.get(SIGN_IN, { schema: describeRoute({ ...page, credential: 'none', summary: 'The console’s sign-in form', replies: { 200: htmlReply } }) }, async (_request, reply) =>
      sendPage(reply, 200, signInPage(null)),
    );

    app.post<{ Body: { email?: string; password?: string } }>(
      SIGN_IN,
      {
        schema: describeRoute({
          ...page,
          credential: 'none',
          summary: 'Sign in with email and password: sets the session cookie and redirects to the console (303); the form again with 400/401',
          body: signInForm,
          replies: { 200: htmlReply, 400: htmlReply, 401: htmlReply, 403: htmlReply },
          errors: [429],
        }),
      },
      async (request, reply) => {
        if (!sameOrigin(request)) throw new ForbiddenError('cross-origin sign-in refused');
        const { email, password } = request.body ?? {};
        try {
          const { token } = await services.users.openConsoleSession({ email, password });
          return reply.header('set-cookie', cookie(request, token, CONSOLE_ABSOLUTE_MS / 1000)).redirect('/console', 303);
        } catch (error) {
          if (!(error instanceof EmkError) || error.httpStatus >= 500) throw error;
          const message = error instanceof UnauthorizedError ? 'Wrong email or password.' : error.message;
          return sendPage(reply, error.httpStatus, signInPage({ error: message }, typeof email === 'string' ? email.slice(0, 320) : ''));
        }
      },
    );

    app.post(
      '/console/sign-out',
      { schema: describeRoute({ ...page, summary: 'Sign out: the session ends on the server, the cookie is cleared, back to sign-in (303)', replies: { 403: htmlReply } }) },
      async (request, reply) => {
        if (!sameOrigin(request)) throw new ForbiddenError('cross-origin sign-out refused');
        await services.users.closeConsoleSession(cookieOf(request, SESSION_COOKIE)!);
        return reply.header('set-cookie', cookie(request, '', 0)).redirect(SIGN_IN, 303);
      },
    );

    const view = services.consoleView;
    const get = <Q extends z.ZodType>(path: string, summary: string, query: Q, render: (request: FastifyRequest<{ Params: { id: string }; Querystring: z.output<Q> }>, viewer: Viewer) => Promise<string>) =>
      app.get<{ Params: { id: string }; Querystring: z.output<Q> }>(
        path,
        { schema: describeRoute({ ...page, summary, ...(path.includes(':id') ? { params: idParams } : {}), query, replies: { 200: htmlReply, 404: htmlReply } }) },
        async (request, reply) => sendPage(reply, 200, await render(request, await viewerOf(request.consoleUser!))),
      );
    const ws = (request: FastifyRequest) => request.consoleUser!.workspaceId;

    get('/console', 'The workspace at a glance', z.object({}), async (request, viewer) => overviewPage(viewer, await view.overview(ws(request))));
    get('/console/campaigns', 'Campaigns with their reports', pageQuery, async (request, viewer) =>
      campaignsPage(viewer, await view.campaigns(ws(request), consolePaging(request.query))),
    );
    get('/console/campaigns/:id', 'A campaign: its report and a chart of opens, clicks and revenue', z.object({}), async (request, viewer) =>
      campaignPage(viewer, await view.campaign(ws(request), request.params.id)),
    );
    get('/console/flows', 'Flows with their reports', pageQuery, async (request, viewer) => flowsPage(viewer, await view.flows(ws(request), consolePaging(request.query))));
    get('/console/flows/:id', 'A flow: its steps with the enrolments waiting at each, its report and chart', z.object({}), async (request, viewer) =>
      flowPage(viewer, await view.flow(ws(request), request.params.id)),
    );
    get('/console/segments', 'Segments with their member counts', pageQuery, async (request, viewer) =>
      segmentsPage(viewer, await view.segments(ws(request), consolePaging(request.query))),
    );
    get('/console/messages', 'The newest messages (of a campaign or a flow)', messageQuery, async (request, viewer) => {
      const { campaign, flow } = request.query;
      const filter = { ...(campaign ? { campaign_id: campaign } : {}), ...(flow ? { flow_id: flow } : {}) };
      const path = campaign ? `/console/messages?campaign=${encodeURIComponent(campaign)}` : flow ? `/console/messages?flow=${encodeURIComponent(flow)}` : '/console/messages';
      return messagesPage(viewer, await view.messages(ws(request), filter, consolePaging(request.query)), path);
    });
    get('/console/messages/:id', 'A message, its HTML shown in a sandboxed frame', z.object({}), async (request, viewer) =>
      messagePage(viewer, await view.message(ws(request), request.params.id)),
    );
  };
}
