import { spawn } from 'node:child_process';
import type { LightMyRequestResponse } from 'fastify';
import { beforeAll, expect, it } from 'vitest';
import { CONSOLE_ABSOLUTE_MS, CONSOLE_IDLE_MS } from '../src/domain/users/user-service.js';
import { buildApp } from '../src/server/app.js';
import { EMK_BIN, type CliResult } from './helpers/cli.js';
import { consoleShop, HOSTILE_NAME, type ConsoleShop } from './helpers/console.js';
import { describeEachDatabase } from './helpers/harness.js';

/** Every value of `data-metric="name"` on the page, in document order. */
const metrics = (page: string, name: string) => [...page.matchAll(new RegExp(`data-metric="${name}" data-value="([^"]*)"`, 'g'))].map((m) => Number(m[1]));
/** The part of the page inside the element that carries `attribute="value"` (a table row). */
/** The built `emk` with `input` on its stdin (no terminal). */
function emkWithInput(args: string[], input: string): Promise<CliResult> {
  return new Promise((done) => {
    const child = spawn(process.execPath, [EMK_BIN, ...args]);
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d) => (stdout += d));
    child.stderr.on('data', (d) => (stderr += d));
    child.on('close', (code) => done({ code, stdout, stderr }));
    child.stdin.end(input);
  });
}
const row = (page: string, attribute: string, value: string) => new RegExp(`<tr ${attribute}="${value}">(.*?)</tr>`, 's').exec(page)?.[1] ?? '';

describeEachDatabase('the operator console', (h) => {
  let shop: ConsoleShop;
  let origin = '';
  const form = (fields: Record<string, string>) => new URLSearchParams(fields).toString();
  const signIn = (fields: Record<string, string>, headers: Record<string, string> = { origin }) =>
    h().app.inject({ method: 'POST', url: '/console/sign-in', headers: { 'content-type': 'application/x-www-form-urlencoded', ...headers }, payload: form(fields) });
  const cookieOf = (reply: LightMyRequestResponse) => String(reply.headers['set-cookie'] ?? '');
  const session = async () => /emk_console=([^;]+)/.exec(cookieOf(await signIn({ email: shop.email, password: shop.password })))![1]!;
  const visit = (url: string, token: string) => h().app.inject({ method: 'GET', url, headers: { cookie: `emk_console=${token}` } });
  const api = async (url: string) => (await h().request({ method: 'GET', url: `/api/v1${url}`, key: shop.ws.apiKey })).json();

  let emptyLanding: LightMyRequestResponse;
  beforeAll(async () => {
    emptyLanding = await h().app.inject({ method: 'GET', url: '/' });
    shop = await consoleShop(h);
    origin = new URL(h().config.baseUrl).origin;
  });

  it('GET / on an empty database is a landing page that says to run emk seed or emk init, and links the console, /docs and /healthz', () => {
    const reply = emptyLanding;
    expect(reply.statusCode).toBe(200);
    expect(reply.headers['content-type']).toMatch(/^text\/html/);
    expect(reply.body).toContain('This database is empty');
    expect(reply.body).toContain('npx emk seed');
    expect(reply.body).toContain('npx emk init');
    for (const link of ['/console', '/docs', '/healthz']) expect(reply.body).toContain(`href="${link}"`);
    expect(reply.headers['content-security-policy']).toContain("default-src 'none'");
  });

  it('GET / with a workspace points to the console and how to get a password', async () => {
    const reply = await h().app.inject({ method: 'GET', url: '/' });
    expect(reply.body).toContain('This database has a workspace');
    expect(reply.body).toContain('emk users set-password');
  });

  it('a signed-out visit to any console page is sent to the sign-in page', async () => {
    for (const url of ['/console', '/console/campaigns', `/console/campaigns/${shop.campaignId}`, '/console/flows', '/console/segments', '/console/messages', `/console/messages/${shop.messageId}`]) {
      for (const cookie of [undefined, 'emk_console=emks_forged', 'emk_console=']) {
        const reply = await h().app.inject({ method: 'GET', url, headers: cookie ? { cookie } : {} });
        expect(reply.statusCode, `${url} ${cookie}`).toBe(303);
        expect(reply.headers.location).toBe('/console/sign-in');
      }
    }
    const form = await h().app.inject({ method: 'GET', url: '/console/sign-in' });
    expect(form.statusCode).toBe(200);
    expect(form.body).toContain('name="password"');
  });

  it('signing in sets an HttpOnly, SameSite=Strict session cookie scoped to /console and redirects to the console', async () => {
    const reply = await signIn({ email: shop.email.toUpperCase(), password: shop.password });
    expect(reply.statusCode).toBe(303);
    expect(reply.headers.location).toBe('/console');
    const cookie = cookieOf(reply);
    expect(cookie).toMatch(/^emk_console=emks_[A-Za-z0-9_-]{43}; /);
    expect(cookie).toContain('HttpOnly');
    expect(cookie).toContain('SameSite=Strict');
    expect(cookie).toContain('Path=/console');
    expect(cookie).toContain(`Max-Age=${CONSOLE_ABSOLUTE_MS / 1000}`);
    expect(cookie).not.toContain('Secure');
    const token = /emk_console=([^;]+)/.exec(cookie)![1]!;
    // Only the token's hash is stored.
    const stored = await h().services.knex('console_sessions').select('token_hash');
    expect(stored.map((s: { token_hash: string }) => s.token_hash)).not.toContain(token);
    const page = await visit('/console', token);
    expect(page.statusCode).toBe(200);
    expect(page.headers['cache-control']).toBe('no-store');
    expect(page.body).toContain(shop.email);
  });

  it('the cookie is Secure when the request came over TLS (EMK_BASE_URL https, or a trusted proxy said https)', async () => {
    const secure = await buildApp({ services: h().services, config: { ...h().config, baseUrl: 'https://emk.example' }, logLevel: 'silent' });
    try {
      const reply = await secure.inject({
        method: 'POST',
        url: '/console/sign-in',
        headers: { 'content-type': 'application/x-www-form-urlencoded', origin: 'https://emk.example' },
        payload: form({ email: shop.email, password: shop.password }),
      });
      expect(reply.statusCode).toBe(303);
      expect(cookieOf(reply)).toMatch(/; Secure$/);
    } finally {
      await secure.close();
    }
  });

  it('a wrong password or an unknown email shows the form again with 401 and sets no cookie; a missing field is a 400 naming it', async () => {
    for (const fields of [{ email: shop.email, password: 'wrong password' }, { email: 'nobody@example.com', password: shop.password }]) {
      const reply = await signIn(fields);
      expect(reply.statusCode).toBe(401);
      expect(reply.body).toContain('Wrong email or password.');
      expect(reply.headers['set-cookie']).toBeUndefined();
    }
    const noEmail = await signIn({ password: 'x' });
    expect(noEmail.statusCode).toBe(400);
    expect(noEmail.body).toMatch(/email/);
    const badEmail = await signIn({ email: 'not-an-email', password: 'x' });
    expect(badEmail.statusCode).toBe(400);
    expect(badEmail.body).toMatch(/email/);
    expect(badEmail.body).toContain('value="not-an-email"');
    const huge = await signIn({ email: shop.email, password: 'x'.repeat(5000) });
    expect(huge.statusCode).toBe(413);
  });

  it('a sign-in posted from another origin (or with no Origin and no same-origin Sec-Fetch-Site) is refused: 403, no session', async () => {
    const before = (await h().services.knex('console_sessions').count({ n: '*' }))[0]!.n;
    for (const headers of [{ origin: 'https://evil.example' }, { origin: 'null' }, {}, { 'sec-fetch-site': 'cross-site' }] as Array<Record<string, string>>) {
      const reply = await signIn({ email: shop.email, password: shop.password }, headers);
      expect(reply.statusCode, JSON.stringify(headers)).toBe(403);
      expect(reply.headers['set-cookie']).toBeUndefined();
    }
    expect((await h().services.knex('console_sessions').count({ n: '*' }))[0]!.n).toEqual(before);
    expect((await signIn({ email: shop.email, password: shop.password }, { 'sec-fetch-site': 'same-origin' })).statusCode).toBe(303);
    expect((await signIn({ email: shop.email, password: shop.password }, { origin: 'null', 'sec-fetch-site': 'same-origin' })).statusCode).toBe(303);
  });

  it('signing out ends the session on the server: the old cookie is sent to sign in; a cross-origin sign-out is refused', async () => {
    const token = await session();
    const forged = await h().app.inject({ method: 'POST', url: '/console/sign-out', headers: { cookie: `emk_console=${token}`, origin: 'https://evil.example' } });
    expect(forged.statusCode).toBe(403);
    expect((await visit('/console', token)).statusCode).toBe(200);
    const out = await h().app.inject({ method: 'POST', url: '/console/sign-out', headers: { cookie: `emk_console=${token}`, origin } });
    expect(out.statusCode).toBe(303);
    expect(out.headers.location).toBe('/console/sign-in');
    expect(cookieOf(out)).toContain('emk_console=; ');
    expect(cookieOf(out)).toContain('Max-Age=0');
    const after = await visit('/console', token);
    expect(after.statusCode).toBe(303);
    expect(after.headers.location).toBe('/console/sign-in');
  });

  it('a user’s new password (emk users set-password) ends its sessions', async () => {
    const token = await session();
    await h().services.users.setPasswordOf(shop.ws.id, { email: shop.email, password: shop.password });
    expect((await visit('/console', token)).statusCode).toBe(303);
    await expect(h().services.users.setPasswordOf(shop.ws.id, { email: shop.email, password: 'short' })).rejects.toThrow(/password/);
    await expect(h().services.users.setPasswordOf(shop.ws.id, { email: 'nobody@example.com', password: shop.password })).rejects.toThrow('user not found');
  });

  it('every page shows names as text: a campaign called <script> is escaped, never markup', async () => {
    const token = await session();
    for (const url of ['/console/campaigns', `/console/campaigns/${shop.campaignId}`, '/console/flows', `/console/flows/${shop.flowId}`, '/console/segments', '/console/messages']) {
      const page = await visit(url, token);
      expect(page.statusCode, url).toBe(200);
      expect(page.body, url).not.toContain('<script');
      expect(page.body, url).not.toContain('<b>all</b>');
      expect(page.body, url).not.toContain('<abandon>');
      expect(page.body, url).not.toContain('<i>favourites</i>');
    }
    const campaigns = (await visit('/console/campaigns', token)).body;
    expect(campaigns).toContain('&lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt; Autumn &amp; co');
    expect(HOSTILE_NAME).toContain('<script>');
  });

  it('the console’s numbers are the API’s for the same workspace', async () => {
    const token = await session();
    const overview = (await visit('/console', token)).body;
    expect(metrics(overview, 'contacts')).toEqual([(await api('/contacts?perPage=1')).meta.total]);
    expect(metrics(overview, 'subscribed')).toEqual([3]);
    expect(metrics(overview, 'events_30d')).toEqual([(await api('/events?perPage=1')).meta.total]);
    expect(metrics(overview, 'events_today')[0]).toBeGreaterThan(0);
    expect(metrics(overview, 'orders_30d')).toEqual([(await api('/ecommerce/orders?perPage=1')).meta.total]);
    const revenue = (await api('/reports/revenue')).data as Array<{ revenue: number; currency: string }>;
    expect(revenue.length).toBeGreaterThan(0);
    expect(metrics(overview, 'revenue')).toEqual([revenue.reduce((sum, r) => sum + r.revenue, 0)]);
    for (const name of ['jobs_ready', 'jobs_failed', 'outbox_pending', 'outbox_lag_seconds']) expect(metrics(overview, name), name).toHaveLength(1);

    const campaignReport = await api(`/campaigns/${shop.campaignId}/report`);
    expect(campaignReport).toMatchObject({ sent: 3, opens: 1, clicks: 1, orders: 1, revenue: 42.5 });
    const listed = row((await visit('/console/campaigns', token)).body, 'data-campaign', shop.campaignId);
    const detail = (await visit(`/console/campaigns/${shop.campaignId}`, token)).body;
    for (const name of ['sent', 'opens', 'clicks', 'orders', 'revenue']) {
      expect(metrics(listed, name), name).toEqual([campaignReport[name]]);
      expect(metrics(detail, name), name).toEqual([campaignReport[name]]);
    }
    for (const name of ['delivered', 'bounced', 'unsubscribed', 'failed', 'skipped']) expect(metrics(detail, name), name).toEqual([campaignReport[name]]);

    const flowReport = await api(`/flows/${shop.flowId}/report`);
    expect(flowReport.enrolled).toBe(1);
    const flowRow = row((await visit('/console/flows', token)).body, 'data-flow', shop.flowId);
    for (const name of ['enrolled', 'sent', 'opens', 'clicks', 'orders', 'revenue']) expect(metrics(flowRow, name), name).toEqual([flowReport[name]]);

    const segments = (await api('/segments')).data as Array<{ id: string; member_count: number }>;
    const segmentsPage = (await visit('/console/segments', token)).body;
    for (const segment of segments) expect(metrics(row(segmentsPage, 'data-segment', segment.id), 'member_count')).toEqual([segment.member_count]);
    expect(segments.find((s) => s.id === shop.segmentId)!.member_count).toBe(3);

    const messages = (await api('/messages?perPage=20')).data as Array<{ id: string }>;
    const messagesPage = (await visit('/console/messages', token)).body;
    expect([...messagesPage.matchAll(/data-message="([^"]+)"/g)].map((m) => m[1])).toEqual(messages.map((m) => m.id));
  });

  it('a flow’s page shows each step with the enrolments waiting at it', async () => {
    const token = await session();
    const page = (await visit(`/console/flows/${shop.flowId}`, token)).body;
    expect(metrics(row(page, 'data-step', '0'), 'waiting')).toEqual([1]);
    expect(metrics(row(page, 'data-step', '1'), 'waiting')).toEqual([0]);
    expect(row(page, 'data-step', '0')).toContain('Wait 600 minutes');
  });

  it('a campaign’s chart is an SVG with a path per series and a point on the day of the open, the click and the order', async () => {
    const token = await session();
    const page = (await visit(`/console/campaigns/${shop.campaignId}`, token)).body;
    for (const series of ['opens', 'clicks', 'revenue']) expect(page).toMatch(new RegExp(`<path data-series="${series}" d="M[0-9.]+,[0-9.]+( L[0-9.]+,[0-9.]+){29}"`));
    expect(page.match(/<circle /g)).toHaveLength(3);
    expect(page).toContain(`${new Date(h().clock()).toISOString().slice(0, 10)}: 42.5`);
  });

  it('a message is shown in a sandboxed frame (no scripts, no same origin) under a policy that loads no remote image', async () => {
    const token = await session();
    const reply = await visit(`/console/messages/${shop.messageId}`, token);
    expect(reply.statusCode).toBe(200);
    expect(reply.body).toMatch(/<iframe title="The message as sent" sandbox srcdoc="&lt;h1 style=&quot;color:#c2410c&quot;&gt;Autumn favourites/);
    const csp = String(reply.headers['content-security-policy']);
    expect(csp).toContain("default-src 'none'");
    expect(csp).toContain('img-src data:');
    expect(csp).toContain("frame-ancestors 'none'");
    expect(csp).not.toContain('script-src');
    // Same-origin referrers, so browsers send the sign-in form's real Origin.
    expect(reply.headers['referrer-policy']).toBe('same-origin');
    expect(reply.headers['x-frame-options']).toBe('DENY');
    // The API keeps its own headers: no page policy on JSON.
    expect((await h().request({ method: 'GET', url: '/api/v1/contacts', key: shop.ws.apiKey })).headers['content-security-policy']).toBeUndefined();
  });

  it('an unknown id is a 404 page; a malformed message filter a 400 page naming the field', async () => {
    const token = await session();
    const missing = await visit('/console/campaigns/00000000-0000-0000-0000-000000000000', token);
    expect(missing.statusCode).toBe(404);
    expect(missing.headers['content-type']).toMatch(/^text\/html/);
    const bad = await visit(`/console/messages?campaign=${'x'.repeat(40)}`, token);
    expect(bad.statusCode).toBe(400);
    expect(bad.body).toContain('campaign_id');
    expect((await visit('/console/campaigns?page=0', token)).statusCode).toBe(400);
  });

  it('sign-in spends the /api/v1/auth/* budget per address: past it, 429 with Retry-After', async () => {
    const limited = await buildApp({ services: h().services, config: { ...h().config, limits: { ...h().config.limits, authPerIp: 2 } }, logLevel: 'silent' });
    try {
      const post = () =>
        limited.inject({
          method: 'POST',
          url: '/console/sign-in',
          remoteAddress: '203.0.113.77',
          headers: { 'content-type': 'application/x-www-form-urlencoded', origin },
          payload: form({ email: shop.email, password: 'wrong password' }),
        });
      expect((await post()).statusCode).toBe(401);
      expect((await post()).statusCode).toBe(401);
      const refused = await post();
      expect(refused.statusCode).toBe(429);
      expect(refused.headers['retry-after']).toBeDefined();
      // The form itself is not limited.
      expect((await limited.inject({ method: 'GET', url: '/console/sign-in', remoteAddress: '203.0.113.77' })).statusCode).toBe(200);
    } finally {
      await limited.close();
    }
  });

  it('emk users set-password reads the password from stdin (--password-stdin), without a terminal it names the flag (exit 2)', { timeout: 60_000 }, async () => {
    const emk = (args: string[], input = '') => emkWithInput(['users', 'set-password', ...args, '--db', h().database.url, '--workspace', shop.ws.id], input);
    const set = await emk(['--email', shop.email, '--password-stdin'], 'a new long password\nignored line\n');
    expect(set.code, set.stderr).toBe(0);
    expect(set.stdout).toBe(`password set for ${shop.email} (owner): sign in at /console\n`);
    expect((await signIn({ email: shop.email, password: 'a new long password' })).statusCode).toBe(303);
    expect((await signIn({ email: shop.email, password: shop.password })).statusCode).toBe(401);
    const noFlag = await emk(['--email', shop.email]);
    expect(noFlag.code).toBe(2);
    expect(noFlag.stderr).toMatch(/^emk: missing --password-stdin/);
    // Back to the password the other tests sign in with (the service's own checks: short password, unknown email, above).
    await h().services.users.setPasswordOf(shop.ws.id, { email: shop.email, password: shop.password });
  });

  // Last: they move the harness's clock.
  it('a session ends after 12 hours without a page, and 7 days after sign-in however used', async () => {
    const idle = await session();
    h().clock.advance(CONSOLE_IDLE_MS - 60_000);
    expect((await visit('/console', idle)).statusCode).toBe(200);
    h().clock.advance(CONSOLE_IDLE_MS - 60_000);
    // Seen 11 h 59 min ago: still on.
    expect((await visit('/console/segments', idle)).statusCode).toBe(200);
    h().clock.advance(CONSOLE_IDLE_MS);
    expect((await visit('/console', idle)).statusCode).toBe(303);

    const busy = await session();
    for (let spent = 0; spent + 11 * 3_600_000 < CONSOLE_ABSOLUTE_MS; spent += 11 * 3_600_000) {
      expect((await visit('/console/segments', busy)).statusCode).toBe(200);
      h().clock.advance(11 * 3_600_000);
    }
    h().clock.advance(CONSOLE_ABSOLUTE_MS);
    expect((await visit('/console/segments', busy)).statusCode).toBe(303);
  });
});
