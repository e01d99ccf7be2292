import type { LightMyRequestResponse } from 'fastify';
import { expect, it, vi } from 'vitest';
import { describeEachDatabase, type Harness } from './helpers/harness.js';

/**
 * Every limit keys on the route Fastify matched, not on how the URL was spelled: a percent-encoded letter reaches
 * the same route and spends the same budget; a double slash or another case reaches no route (404) but spends the
 * budget of the family it spells all the same, so no spelling is a way around a limit.
 */

let ipCounter = 0;
/** A client address no other test uses. */
const nextIp = () => `10.77.${++ipCounter >> 8}.${ipCounter & 255}`;

const remainingOf = (res: LightMyRequestResponse) => res.headers['ratelimit-remaining'];

/**
 * Sends one request per spelling (a budget of exactly that many), then each spelling once more: every one
 * spends the same budget, and past it every spelling is refused.
 */
async function expectOneBudget(spellings: string[], send: (url: string) => Promise<LightMyRequestResponse>): Promise<void> {
  const remaining = [];
  for (const url of spellings) {
    const res = await send(url);
    expect(res.statusCode, `${url}: ${res.body}`).not.toBe(429);
    remaining.push(remainingOf(res));
  }
  expect(remaining).toEqual(spellings.map((_, i) => String(spellings.length - 1 - i)));
  for (const url of spellings) {
    const res = await send(url);
    expect(res.statusCode, `${url}: ${res.body}`).toBe(429);
    expect(res.json().error).toBe('rate limit exceeded');
  }
}

/** The first letter of `id` as a percent escape: another spelling of the same path segment. */
const encodeFirst = (id: string) => `%${id.charCodeAt(0).toString(16).padStart(2, '0')}${id.slice(1)}`;

const AUTH_SPELLINGS = [
  '/api/v1/auth/login',
  '/api/v1/%61uth/login',
  '/api/v1/auth/%6Cogin',
  '/%61%70%69/v1/auth/login',
  '//api/v1/auth/login',
  '/api//v1/auth/login',
  '/API/v1/auth/login',
  '/api/v1/Auth/Login',
  '/api/v1/auth/login/',
  '/api%2Fv1%2Fauth%2Flogin',
];

describeEachDatabase(
  'rate limit by route: auth',
  (h) => {
    const PASSWORD = 'correct horse battery';
    let account: Promise<string> | undefined;
    /** A user whose password is known, registered through the service (spending no HTTP budget). */
    const user = () =>
      (account ??= (async () => {
        const email = `owner${Math.random().toString(36).slice(2)}@example.com`;
        await h().services.users.register({ email, password: PASSWORD, workspace_name: 'Spelling shop' });
        return email;
      })());
    const login = async (url: string, ip: string, password = 'wrong-password') =>
      h().request({ method: 'POST', url, remoteAddress: ip, json: { email: await user(), password } });

    it('every spelling of /api/v1/auth/login spends the one budget: the 11th request by any spelling is 429', async () => {
      expect(AUTH_SPELLINGS).toHaveLength(10);
      const ip = nextIp();
      await expectOneBudget(AUTH_SPELLINGS, (url) => login(url, ip));
    });

    it('an encoded spelling reaches the login itself, and past the budget the right password through it is 429', async () => {
      const ip = nextIp();
      // Inside the budget the encoded spelling is the real route: the right password logs in.
      const first = await login('/api/v1/%61uth/login', ip, PASSWORD);
      expect(first.statusCode, first.body).toBe(200);
      expect(first.json().access_token).toEqual(expect.any(String));
      for (let i = 0; i < 9; i++) expect((await login('/api/v1/auth/login', ip)).statusCode).toBe(401);
      for (const url of ['/api/v1/%61uth/login', '/api/v1/auth/%6cogin', '/api/v1/auth/login']) {
        const refused = await login(url, ip, PASSWORD);
        expect(refused.statusCode, url).toBe(429);
        expect(refused.json()).not.toHaveProperty('access_token');
      }
    });

    it('a refused login never reaches the password check (the budget is spent before scrypt runs)', async () => {
      const ip = nextIp();
      const spy = vi.spyOn(h().services.users, 'login');
      try {
        for (let i = 0; i < 10; i++) expect((await login(AUTH_SPELLINGS[i]!, ip)).statusCode).not.toBe(429);
        const reached = spy.mock.calls.length;
        // Only the spellings that route reach the handler at all: encoded letters do, a double slash or another case does not.
        expect(reached).toBe(4);
        for (const url of AUTH_SPELLINGS) expect((await login(url, ip, PASSWORD)).statusCode).toBe(429);
        expect(spy.mock.calls.length).toBe(reached);
      } finally {
        spy.mockRestore();
      }
    });
  },
  { EMK_LIMIT_AUTH_PER_IP: '10' },
);

describeEachDatabase(
  'rate limit by route: consent pages',
  (h) => {
    it('encoded, double-slash and case spellings of /cp/* spend the one budget per address', async () => {
      const ip = nextIp();
      await expectOneBudget(
        ['/cp/unsubscribe/some-token', '/%63p/unsubscribe/some-token', '/cp/%70references/t', '//cp/unsubscribe/t', '/CP/preferences/t', '/cp//unsubscribe/t'],
        (url) => h().request({ method: 'GET', url, remoteAddress: ip }),
      );
    });
  },
  { EMK_LIMIT_CP_PER_IP: '6' },
);

function webhook(h: Harness, url: string, ip: string) {
  return h.request({
    method: 'POST',
    url,
    remoteAddress: ip,
    headers: { authorization: 'Bearer not-checked-here' },
    json: { event_type: 'customer_created', email: 'buyer@example.com', external_id: `e-${Math.random()}` },
  });
}

describeEachDatabase(
  'rate limit by route: integration webhook',
  (h) => {
    it('per integration: an encoded platform, path or integration id spends the integration’s budget', async () => {
      const { integrationId: id } = await h().workspace('spelling-webhook');
      await expectOneBudget(
        [`/ecom/website/${id}`, `/%65com/website/${id}`, `/ecom/web%73ite/${id}`, `/ecom/website/${encodeFirst(id)}`, `//ecom/website/${id}`, `/ecom//website/${id}`],
        (url) => webhook(h(), url, nextIp()),
      );
    });

    it('per address: every spelling spends the address’s budget', async () => {
      const ip = nextIp();
      // Another integration each time: only the per-address budget is shared.
      const ids = Array.from({ length: 6 }, () => crypto.randomUUID());
      const spellings = [`/ecom/website/${ids[0]}`, `/%65com/website/${ids[1]}`, `//ecom/website/${ids[2]}`, `/ECOM/website/${ids[3]}`, `/Ecom/shopify/${ids[4]}`, `/ecom/website/${ids[5]}/`];
      const remaining = [];
      for (const url of spellings) {
        const res = await webhook(h(), url, ip);
        expect(res.statusCode, `${url}: ${res.body}`).not.toBe(429);
        remaining.push(remainingOf(res));
      }
      expect(remaining).toEqual(['5', '4', '3', '2', '1', '0']);
      expect((await webhook(h(), `/%65com/website/${crypto.randomUUID()}`, ip)).statusCode).toBe(429);
      expect((await webhook(h(), `//ECOM/website/${crypto.randomUUID()}`, ip)).statusCode).toBe(429);
    });
  },
  { EMK_LIMIT_WEBHOOK_PER_INTEGRATION: '6', EMK_LIMIT_WEBHOOK_PER_IP: '6' },
);

describeEachDatabase(
  'rate limit by route: Collect API and Segment ingest',
  (h) => {
    it('encoded, double-slash and case spellings of /collect/* spend the one budget per address', async () => {
      const ws = await h().workspace('spelling-collect');
      const ip = nextIp();
      await expectOneBudget(['/collect/event', '/%63ollect/event', '/collect/%65vent', '/%63ollect/identify', '//collect/event', '/COLLECT/event', '/collect//event'], (url) =>
        h().request({
          method: 'POST',
          url,
          remoteAddress: ip,
          json: url.endsWith('identify')
            ? { site_id: ws.siteId, email: 'visitor@example.com' }
            : { site_id: ws.siteId, event_name: 'page_view', anonymous_id: 'spelling' },
        }),
      );
    });

    it('encoded, double-slash and case spellings of /v1/* spend the one budget per address', async () => {
      const ws = await h().workspace('spelling-segment');
      const ip = nextIp();
      const authorization = `Basic ${Buffer.from(`${ws.siteId}:`).toString('base64')}`;
      await expectOneBudget(['/v1/track', '/%761/track', '/v1/%74rack', '/v1/%74', '//v1/track', '/V1/track', '/v1//track'], (url) =>
        h().request({ method: 'POST', url, remoteAddress: ip, headers: { authorization }, json: { type: 'track', event: 'Viewed', anonymousId: 'a1' } }),
      );
    });
  },
  { EMK_LIMIT_COLLECT_PER_IP: '7' },
);
