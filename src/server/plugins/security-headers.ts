import fastifyHelmet from '@fastify/helmet';
import type { FastifyInstance, FastifyReply } from 'fastify';

/**
 * What every HTML page sends (helmet's defaults, with these changes): no framing (`X-Frame-Options: DENY`: no
 * clickjacking of the unsubscribe button), no referrer (a consent page's URL holds its token), and no HSTS (TLS
 * is the job of what stands in front: docs/operations.md). No Content-Security-Policy by default: swagger-ui's
 * page (`/docs`) keeps its scripts and styles as the package ships them (helmet's policy cannot be reduced to
 * `frame-ancestors` alone without a default-src).
 */
const PAGE_HEADERS = {
  contentSecurityPolicy: false,
  xFrameOptions: { action: 'deny' as const },
  referrerPolicy: { policy: 'no-referrer' as const },
  strictTransportSecurity: false,
};

/**
 * The consent pages are the server's own markup: one inline style block and a form that posts back to the same
 * URL, no script, image or font. Their policy allows just that, and no framing (`frame-ancestors`, the successor
 * of X-Frame-Options).
 */
const CONSENT_PAGE_CSP = {
  contentSecurityPolicy: {
    useDefaults: false,
    directives: {
      defaultSrc: ["'none'"],
      styleSrc: ["'unsafe-inline'"],
      formAction: ["'self'"],
      baseUri: ["'none'"],
      frameAncestors: ["'none'"],
    },
  },
};

/**
 * The console and the landing page (referrer sent within the origin only): the server's own markup, with inline styles and an inline SVG, forms that post
 * to the console, no script. Images only as `data:` URLs: a message shown in the console's sandboxed frame (which
 * inherits this policy) loads no remote image, so its open pixel is never fetched. Framed by nothing.
 */
const CONSOLE_PAGE_CSP = {
  // Browsers then send the console's forms' real `Origin` (under `no-referrer` it is `null`), which sign-in checks.
  referrerPolicy: { policy: 'same-origin' as const },
  contentSecurityPolicy: {
    useDefaults: false,
    directives: {
      defaultSrc: ["'none'"],
      styleSrc: ["'unsafe-inline'"],
      imgSrc: ['data:'],
      formAction: ["'self'"],
      baseUri: ["'none'"],
      frameAncestors: ["'none'"],
    },
  },
};

/** HTML pages, by the route Fastify matched: the consent pages, the console and landing page, and the API documentation (swagger-ui). */
const isConsentPage = (pattern: string) => pattern.startsWith('/cp/');
const isConsolePage = (pattern: string) => pattern === '/' || pattern === '/console' || pattern.startsWith('/console/');
const isDocsPage = (pattern: string) => pattern === '/docs' || pattern.startsWith('/docs/');

/**
 * Security headers on the HTML pages only (`@fastify/helmet`). The JSON API, the Collect API, the SDK script and
 * the tracking pixel and links are left as they were: helmet's `Cross-Origin-Resource-Policy: same-origin` would
 * stop a shop's page from loading the SDK, and a JSON reply has nothing to frame.
 */
export async function registerSecurityHeaders(app: FastifyInstance): Promise<void> {
  await app.register(fastifyHelmet, { global: false, ...PAGE_HEADERS });
  app.addHook('onRequest', async (request, reply) => {
    const pattern = request.routeOptions.url;
    if (pattern === undefined) return;
    if (isConsentPage(pattern)) reply.helmet(CONSENT_PAGE_CSP);
    else if (isConsolePage(pattern)) reply.helmet(CONSOLE_PAGE_CSP);
    else if (isDocsPage(pattern)) reply.helmet();
  });
}

/**
 * A message's preview page (GET …/preview.html): the mail as its recipient sees it, so its own inline styles and
 * `<style>` elements, its images from anywhere (the shop's CDN) and web fonts apply, but no script runs, no form
 * posts, nothing frames it, and it is never cached (it holds a contact's data).
 */
export const PREVIEW_PAGE_CSP = [
  "default-src 'none'",
  "img-src http: https: data:",
  "style-src 'unsafe-inline' https:",
  'font-src https: data:',
  "form-action 'none'",
  "base-uri 'none'",
  "frame-ancestors 'none'",
].join('; ');

/** Sends a rendered message as a preview page, with the policy above. */
export function sendPreviewPage(reply: FastifyReply, html: string): FastifyReply {
  return reply
    .header('content-type', 'text/html; charset=utf-8')
    .header('content-security-policy', PREVIEW_PAGE_CSP)
    .header('x-content-type-options', 'nosniff')
    .header('referrer-policy', 'no-referrer')
    .header('cache-control', 'no-store')
    .send(html);
}
