import type { LightMyRequestResponse } from 'fastify';
import { expect, it } from 'vitest';
import { chromiumOnDemand, startShop } from './helpers/browser.js';
import { describeEachDatabase, type Harness } from './helpers/harness.js';

/**
 * The HTML pages (consent pages, /docs) cannot be framed, are not sniffed and send no referrer; the JSON API,
 * the Collect API, the SDK script and the health checks are left as they were.
 */

/** Launched by the one test that needs it, so the others run (and fail alone) without it. */
const chromium = chromiumOnDemand();

function expectPageHeaders(res: LightMyRequestResponse, what: string): void {
  expect(res.headers['x-frame-options'], what).toBe('DENY');
  expect(res.headers['x-content-type-options'], what).toBe('nosniff');
  expect(res.headers['referrer-policy'], what).toBe('no-referrer');
  // TLS (and so HSTS) is the job of what stands in front of emk.
  expect(res.headers['strict-transport-security'], what).toBeUndefined();
}

/** What helmet would add (`nosniff` is left out: the SDK route sends it of its own accord, harmlessly). */
const HELMET_HEADERS = [
  'x-frame-options',
  'content-security-policy',
  'referrer-policy',
  'cross-origin-resource-policy',
  'cross-origin-opener-policy',
  'strict-transport-security',
];

/** The /docs page itself (swagger-ui answers /docs with the page or a redirect to it). */
async function docsPage(h: Harness): Promise<LightMyRequestResponse> {
  const res = await h.request({ method: 'GET', url: '/docs' });
  if (res.statusCode !== 302) return res;
  expectPageHeaders(res, 'the /docs redirect');
  return h.request({ method: 'GET', url: String(res.headers.location).replace(/^\.\//, '/docs/') });
}

describeEachDatabase('security headers', (h) => {
  it('consent pages: no framing, nosniff, no referrer, and a policy that allows only their own style and form', async () => {
    for (const [method, url] of [
      ['GET', '/cp/unsubscribe/no-such-token'],
      ['POST', '/cp/unsubscribe/no-such-token'],
      ['GET', '/cp/preferences/no-such-token'],
      ['POST', '/cp/preferences/no-such-token'],
    ] as const) {
      const res = await h().request({ method, url, headers: { 'content-type': 'application/x-www-form-urlencoded' }, payload: 'status=subscribed' });
      expect(res.statusCode, url).toBe(404);
      expect(res.headers['content-type']).toMatch(/^text\/html/);
      expectPageHeaders(res, `${method} ${url}`);
      const csp = String(res.headers['content-security-policy']);
      for (const directive of ["frame-ancestors 'none'", "default-src 'none'", "style-src 'unsafe-inline'", "form-action 'self'", "base-uri 'none'"]) {
        expect(csp, url).toContain(directive);
      }
    }
    // A refused form value is still an answer of the page's route: the same headers.
    const bad = await h().request({ method: 'POST', url: '/cp/preferences/t', headers: { 'content-type': 'application/x-www-form-urlencoded' }, payload: 'status=maybe' });
    expect(bad.statusCode).toBe(400);
    expectPageHeaders(bad, 'a 400 of the preferences form');
  });

  it('/docs and its assets: no framing, nosniff, no referrer; swagger-ui runs as shipped (no script policy)', async () => {
    const page = await docsPage(h());
    expect(page.statusCode).toBe(200);
    expect(page.headers['content-type']).toMatch(/text\/html/);
    expectPageHeaders(page, '/docs');
    expect(page.headers['content-security-policy']).toBeUndefined();
    const asset = await h().request({ method: 'GET', url: '/docs/static/swagger-ui.css' });
    expect(asset.statusCode).toBe(200);
    expectPageHeaders(asset, '/docs/static/swagger-ui.css');
  });

  it('JSON and script replies carry none of the page headers (the SDK script must load on a shop’s page)', async () => {
    const ws = await h().workspace('headers');
    const replies: [string, LightMyRequestResponse][] = [
      ['GET /api/v1/contacts', await h().request({ method: 'GET', url: '/api/v1/contacts', key: ws.apiKey })],
      ['POST /collect/event', await h().request({ method: 'POST', url: '/collect/event', json: { site_id: ws.siteId, event_name: 'page_view', anonymous_id: 'a' } })],
      ['GET /emk.js', await h().request({ method: 'GET', url: '/emk.js' })],
      ['GET /healthz', await h().request({ method: 'GET', url: '/healthz' })],
      ['GET /openapi.json', await h().request({ method: 'GET', url: '/openapi.json' })],
      ['POST /api/v1/auth/login', await h().request({ method: 'POST', url: '/api/v1/auth/login', json: { email: 'a@example.com', password: 'wrong-password' } })],
      ['GET /nowhere', await h().request({ method: 'GET', url: '/nowhere' })],
    ];
    expect(replies[2]![1].statusCode).toBe(200);
    for (const [what, res] of replies) {
      expect(res.statusCode, what).toBeLessThan(500);
      for (const name of HELMET_HEADERS) expect(res.headers[name], `${what}: ${name}`).toBeUndefined();
    }
  });

  it('in a real browser: /docs renders under its policy, and a consent page in another site’s frame does not load', async () => {
    await h().app.listen({ port: 0, host: '127.0.0.1' });
    const origin = `http://127.0.0.1:${(h().app.server.address() as { port: number }).port}`;
    const shop = await startShop();
    const context = await (await chromium()).newContext();
    try {
      const page = await context.newPage();
      const violations: string[] = [];
      page.on('console', (message) => {
        if (/Content Security Policy|Refused to/i.test(message.text())) violations.push(message.text());
      });
      await page.goto(`${origin}/docs`);
      await page.waitForSelector('.swagger-ui .info .title');
      expect(await page.textContent('.swagger-ui .info .title')).toContain('emk');
      expect(violations).toEqual([]);

      // A shop page (another origin) frames the unsubscribe page: the browser refuses to show it.
      await page.goto(shop.page('/framed', `<h1>framing</h1><iframe src="${origin}/cp/unsubscribe/no-such-token"></iframe>`));
      const frame = await (await page.waitForSelector('iframe')).contentFrame();
      await page.waitForLoadState('load');
      const framed = frame ? await frame.content().catch(() => '') : '';
      expect(framed).not.toContain('This link is not valid');
      // The same page opened directly renders.
      await page.goto(`${origin}/cp/unsubscribe/no-such-token`);
      expect(await page.textContent('h1')).toBe('This link is not valid');
    } finally {
      await context.close();
      await shop.close();
    }
  }, 60_000);
});
