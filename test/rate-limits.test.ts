import type { LightMyRequestResponse } from 'fastify';
import { expect, it } from 'vitest';
import { describeEachDatabase, NO_LIMITS, type Harness } from './helpers/harness.js';

/**
 * The spec's Limits table through HTTP. Each suite turns on one scope with a small limit (the harness turns
 * every other scope off) and uses client addresses and site ids of its own, so budgets never overlap.
 */

let ipCounter = 0;
/** A client address no other test uses. */
const nextIp = () => {
  ipCounter++;
  return `10.${ipCounter >> 16}.${(ipCounter >> 8) & 255}.${ipCounter & 255}`;
};

const header = (res: LightMyRequestResponse, name: string) => {
  const value = res.headers[name];
  return value === undefined ? undefined : String(value);
};

/** A response inside the budget: not refused, and the RateLimit-* headers of the tightest budget. */
function expectPassed(res: LightMyRequestResponse, limit: number, remaining: number): void {
  expect(res.statusCode, res.body).not.toBe(429);
  expect(header(res, 'ratelimit-limit')).toBe(String(limit));
  expect(header(res, 'ratelimit-remaining')).toBe(String(remaining));
  expectReset(res);
  expect(header(res, 'retry-after')).toBeUndefined();
}

function expectReset(res: LightMyRequestResponse): void {
  const reset = header(res, 'ratelimit-reset');
  expect(reset).toMatch(/^\d+$/);
  expect(Number(reset)).toBeGreaterThanOrEqual(1);
  expect(Number(reset)).toBeLessThanOrEqual(60);
}

/** The spec's 429: `{error:"rate limit exceeded"}` (plus request_id), JSON, Retry-After in whole seconds. */
function expectRateLimited(res: LightMyRequestResponse, limit: number): void {
  expect(res.statusCode, res.body).toBe(429);
  expect(header(res, 'content-type')).toMatch(/^application\/json\b/);
  const body = res.json();
  expect(Object.keys(body).sort()).toEqual(['error', 'request_id']);
  expect(body.error).toBe('rate limit exceeded');
  expect(body.request_id).toBe(header(res, 'x-request-id'));
  const retryAfter = header(res, 'retry-after');
  expect(retryAfter).toMatch(/^[1-9]\d*$/);
  // The longest possible wait: a full window now and all of the next one.
  expect(Number(retryAfter)).toBeLessThanOrEqual(120);
  expect(header(res, 'ratelimit-limit')).toBe(String(limit));
  expect(header(res, 'ratelimit-remaining')).toBe('0');
  expectReset(res);
}

function expectUnlimited(res: LightMyRequestResponse): void {
  expect(res.statusCode, res.body).not.toBe(429);
  for (const name of ['ratelimit-limit', 'ratelimit-remaining', 'ratelimit-reset', 'retry-after']) {
    expect(header(res, name), name).toBeUndefined();
  }
}

let emailCounter = 0;
function collect(h: Harness, siteId: string, ip: string, path: '/collect/event' | '/collect/identify' = '/collect/event') {
  const json =
    path === '/collect/event'
      ? { site_id: siteId, event_name: 'page_view', anonymous_id: `anon-${ip}` }
      : { site_id: siteId, email: `visitor${++emailCounter}@example.com` };
  return h.request({ method: 'POST', url: path, remoteAddress: ip, json });
}

function webhook(h: Harness, integrationId: string, ip: string, platform = 'website') {
  return h.request({
    method: 'POST',
    url: `/ecom/${platform}/${integrationId}`,
    remoteAddress: ip,
    headers: { authorization: 'Bearer not-checked-here' },
    json: { event_type: 'customer_created', email: 'buyer@example.com', external_id: `e-${Math.random()}` },
  });
}

describeEachDatabase(
  'rate limit: Collect per IP',
  (h) => {
    it('the request past the limit gets 429 with the spec body and headers; other IPs are unaffected', async () => {
      const ws1 = await h().workspace('ip-1');
      const ws2 = await h().workspace('ip-2');
      const ip = nextIp();
      // One budget per address across sites and across /collect/* endpoints.
      expectPassed(await collect(h(), ws1.siteId, ip), 3, 2);
      expectPassed(await collect(h(), ws2.siteId, ip, '/collect/identify'), 3, 1);
      const third = await collect(h(), ws1.siteId, ip);
      expect(third.statusCode).toBe(200);
      expectPassed(third, 3, 0);
      expectRateLimited(await collect(h(), ws2.siteId, ip), 3);
      expectRateLimited(await collect(h(), ws1.siteId, ip, '/collect/identify'), 3);

      const other = await collect(h(), ws1.siteId, nextIp());
      expect(other.statusCode).toBe(200);
      expectPassed(other, 3, 2);
    });

    it('a refused request writes nothing', async () => {
      const ws = await h().workspace('ip-nowrite');
      const ip = nextIp();
      for (let i = 0; i < 3; i++) expect((await collect(h(), ws.siteId, ip, '/collect/identify')).statusCode).toBe(200);
      expectRateLimited(await collect(h(), ws.siteId, ip, '/collect/identify'), 3);
      const contacts = await h().request({ method: 'GET', url: '/api/v1/contacts', key: ws.apiKey });
      expect(contacts.json().meta.total).toBe(3);
    });

    it('X-Forwarded-For is not trusted by default: a client cannot pick a fresh address per request', async () => {
      const ws = await h().workspace('ip-xff');
      const ip = nextIp();
      const spoofed = (n: number) =>
        h().request({
          method: 'POST',
          url: '/collect/event',
          remoteAddress: ip,
          headers: { 'x-forwarded-for': `198.51.100.${n}` },
          json: { site_id: ws.siteId, event_name: 'page_view', anonymous_id: 'xff' },
        });
      for (let n = 1; n <= 3; n++) expectPassed(await spoofed(n), 3, 3 - n);
      expectRateLimited(await spoofed(4), 3);
    });

    it('CORS preflights do not spend the budget', async () => {
      const ws = await h().workspace('ip-options');
      const ip = nextIp();
      for (let i = 0; i < 5; i++) {
        const preflight = await h().request({
          method: 'OPTIONS',
          url: '/collect/event',
          remoteAddress: ip,
          headers: { origin: 'https://shop.test', 'access-control-request-method': 'POST' },
        });
        expect(preflight.statusCode).toBe(204);
      }
      expectPassed(await collect(h(), ws.siteId, ip), 3, 2);
    });
  },
  { EMK_LIMIT_COLLECT_PER_IP: '3' },
);

describeEachDatabase(
  'rate limit: Collect per site_id',
  (h) => {
    it('two IPs share one site budget; another site has its own', async () => {
      const ws = await h().workspace('site-1');
      const otherWs = await h().workspace('site-2');
      const [a, b] = [nextIp(), nextIp()];
      const remaining: string[] = [];
      for (let i = 0; i < 4; i++) {
        const res = await collect(h(), ws.siteId, i % 2 ? b : a);
        expect(res.statusCode).toBe(200);
        expect(header(res, 'ratelimit-limit')).toBe('4');
        remaining.push(header(res, 'ratelimit-remaining')!);
      }
      expect(remaining).toEqual(['3', '2', '1', '0']);
      expectRateLimited(await collect(h(), ws.siteId, a), 4);
      expectRateLimited(await collect(h(), ws.siteId, b, '/collect/identify'), 4);
      // A third address is refused too: the budget is the site's.
      expectRateLimited(await collect(h(), ws.siteId, nextIp()), 4);

      // Each site_id has an independent budget.
      const other = await collect(h(), otherWs.siteId, a);
      expect(other.statusCode).toBe(200);
      expectPassed(other, 4, 3);
    });
  },
  { EMK_LIMIT_COLLECT_PER_SITE: '4' },
);

describeEachDatabase(
  'rate limit: Collect per IP and site_id',
  (h) => {
    it('one IP on one site is limited; the same IP on another site and another IP on the same site are not', async () => {
      const ws = await h().workspace('ipsite-1');
      const otherWs = await h().workspace('ipsite-2');
      const [ip, otherIp] = [nextIp(), nextIp()];
      for (let i = 0; i < 3; i++) {
        const res = await collect(h(), ws.siteId, ip, i === 1 ? '/collect/identify' : '/collect/event');
        expect(res.statusCode).toBe(200);
        expectPassed(res, 3, 2 - i);
      }
      expectRateLimited(await collect(h(), ws.siteId, ip), 3);

      for (let i = 0; i < 3; i++) expectPassed(await collect(h(), otherWs.siteId, ip), 3, 2 - i);
      expectRateLimited(await collect(h(), otherWs.siteId, ip), 3);
      for (let i = 0; i < 3; i++) expectPassed(await collect(h(), ws.siteId, otherIp), 3, 2 - i);
      expectRateLimited(await collect(h(), ws.siteId, otherIp), 3);
    });
  },
  { EMK_LIMIT_COLLECT_PER_IP_SITE: '3' },
);

describeEachDatabase(
  'rate limit: webhook per integration',
  (h) => {
    it('one integration is limited across client addresses; another integration has its own budget', async () => {
      const ws1 = await h().workspace('wh-1');
      const ws2 = await h().workspace('wh-2');
      for (let i = 0; i < 3; i++) expectPassed(await webhook(h(), ws1.integrationId, nextIp()), 3, 2 - i);
      expectRateLimited(await webhook(h(), ws1.integrationId, nextIp()), 3);
      expectRateLimited(await webhook(h(), ws1.integrationId, nextIp()), 3);

      for (let i = 0; i < 3; i++) expectPassed(await webhook(h(), ws2.integrationId, nextIp()), 3, 2 - i);
      expectRateLimited(await webhook(h(), ws2.integrationId, nextIp()), 3);
    });

    it('an unknown integration id is limited too (the limit comes before the lookup)', async () => {
      const id = `unknown-${Math.random().toString(36).slice(2)}`;
      for (let i = 0; i < 3; i++) expectPassed(await webhook(h(), id, nextIp()), 3, 2 - i);
      expectRateLimited(await webhook(h(), id, nextIp()), 3);
    });
  },
  { EMK_LIMIT_WEBHOOK_PER_INTEGRATION: '3' },
);

describeEachDatabase(
  'rate limit: webhook per IP',
  (h) => {
    it('one address is limited across integrations and platforms; another address is not', async () => {
      const workspaces = [await h().workspace('whip-1'), await h().workspace('whip-2'), await h().workspace('whip-3')];
      const ip = nextIp();
      expectPassed(await webhook(h(), workspaces[0]!.integrationId, ip), 3, 2);
      expectPassed(await webhook(h(), workspaces[1]!.integrationId, ip), 3, 1);
      expectPassed(await webhook(h(), 'another-integration', ip, 'shopify'), 3, 0);
      expectRateLimited(await webhook(h(), workspaces[2]!.integrationId, ip), 3);

      expectPassed(await webhook(h(), workspaces[2]!.integrationId, nextIp()), 3, 2);
    });
  },
  { EMK_LIMIT_WEBHOOK_PER_IP: '3' },
);

describeEachDatabase(
  'rate limit: auth per IP',
  (h) => {
    const auth = (path: string, ip: string) =>
      h().request({
        method: 'POST',
        url: `/api/v1/auth/${path}`,
        remoteAddress: ip,
        json: path === 'refresh' ? { refresh_token: 'nope' } : { email: 'who@example.com', password: 'wrong-password' },
      });

    it('register, login and refresh share one budget per address', async () => {
      const ip = nextIp();
      expectPassed(await auth('login', ip), 3, 2);
      expectPassed(await auth('register', ip), 3, 1);
      expectPassed(await auth('refresh', ip), 3, 0);
      expectRateLimited(await auth('login', ip), 3);
      expectRateLimited(await auth('refresh', ip), 3);

      expectPassed(await auth('login', nextIp()), 3, 2);
    });
  },
  { EMK_LIMIT_AUTH_PER_IP: '3' },
);

describeEachDatabase(
  'rate limit: consent pages per IP',
  (h) => {
    it('/cp/* pages share one budget per address', async () => {
      const ip = nextIp();
      expectPassed(await h().request({ method: 'GET', url: '/cp/unsubscribe/some-token', remoteAddress: ip }), 3, 2);
      expectPassed(await h().request({ method: 'POST', url: '/cp/unsubscribe/some-token', remoteAddress: ip }), 3, 1);
      expectPassed(await h().request({ method: 'GET', url: '/cp/preferences/other-token', remoteAddress: ip }), 3, 0);
      expectRateLimited(await h().request({ method: 'GET', url: '/cp/preferences/other-token', remoteAddress: ip }), 3);

      expectPassed(await h().request({ method: 'GET', url: '/cp/unsubscribe/some-token', remoteAddress: nextIp() }), 3, 2);
    });
  },
  { EMK_LIMIT_CP_PER_IP: '3' },
);

describeEachDatabase(
  'rate limit: the management API',
  (h) => {
    it('is not limited and carries no RateLimit headers, even with every scope at 1', async () => {
      const ws = await h().workspace('mgmt');
      const ip = nextIp();
      for (let i = 0; i < 15; i++) {
        const res = await h().request({ method: 'GET', url: '/api/v1/contacts', key: ws.apiKey, remoteAddress: ip });
        expect(res.statusCode).toBe(200);
        expectUnlimited(res);
      }
      const created = await h().request({
        method: 'POST',
        url: '/api/v1/contacts',
        key: ws.apiKey,
        remoteAddress: ip,
        json: { email: 'mgmt@example.com' },
      });
      expect(created.statusCode).toBe(201);
      expectUnlimited(created);
      // Meanwhile the limits are live: the same address is refused on /collect/* after one request.
      expectPassed(await collect(h(), ws.siteId, ip), 1, 0);
      expectRateLimited(await collect(h(), ws.siteId, ip), 1);
    });
  },
  {
    EMK_LIMIT_WEBHOOK_PER_INTEGRATION: '1',
    EMK_LIMIT_WEBHOOK_PER_IP: '1',
    EMK_LIMIT_COLLECT_PER_IP: '1',
    EMK_LIMIT_COLLECT_PER_SITE: '1',
    EMK_LIMIT_COLLECT_PER_IP_SITE: '1',
    EMK_LIMIT_AUTH_PER_IP: '1',
    EMK_LIMIT_CP_PER_IP: '1',
  },
);

describeEachDatabase(
  'rate limit: 0 disables a scope',
  (h) => {
    it('with Collect per IP at 0, one address reaches many sites; per IP+site still applies', async () => {
      const ip = nextIp();
      const sites = [];
      for (let i = 0; i < 6; i++) sites.push((await h().workspace(`zero-${i}`)).siteId);
      for (const siteId of sites) expectPassed(await collect(h(), siteId, ip), 2, 1);
      expectPassed(await collect(h(), sites[0]!, ip), 2, 0);
      expectRateLimited(await collect(h(), sites[0]!, ip), 2);
    });
  },
  { EMK_LIMIT_COLLECT_PER_IP: '0', EMK_LIMIT_COLLECT_PER_SITE: '0', EMK_LIMIT_COLLECT_PER_IP_SITE: '2' },
);

describeEachDatabase(
  'rate limit: every scope at 0',
  (h) => {
    it('nothing is refused and no RateLimit headers are sent', async () => {
      const ws = await h().workspace('all-zero');
      const ip = nextIp();
      for (let i = 0; i < 25; i++) expectUnlimited(await collect(h(), ws.siteId, ip));
      for (let i = 0; i < 15; i++) expectUnlimited(await webhook(h(), ws.integrationId, ip));
      for (let i = 0; i < 15; i++) {
        expectUnlimited(
          await h().request({ method: 'POST', url: '/api/v1/auth/login', remoteAddress: ip, json: { email: 'a@b.c', password: 'x' } }),
        );
      }
      for (let i = 0; i < 35; i++) expectUnlimited(await h().request({ method: 'GET', url: '/cp/unsubscribe/t', remoteAddress: ip }));
    });
  },
  NO_LIMITS,
);

/**
 * No EMK_LIMIT_* at all: the harness turns limits off by default, so its defaults are unset here
 * (an undefined value is what an absent environment variable looks like).
 */
const SPEC_DEFAULTS = Object.fromEntries(Object.keys(NO_LIMITS).map((name) => [name, undefined])) as unknown as Record<
  string,
  string
>;

describeEachDatabase(
  'rate limit: defaults from the spec',
  (h) => {
    it('configuration without EMK_LIMIT_* holds the Limits table', () => {
      expect(h().config.limits).toEqual({
        webhookPerIntegration: 300,
        webhookPerIp: 1200,
        collectPerIp: 1000,
        collectPerSite: 5000,
        collectPerIpSite: 200,
        authPerIp: 10,
        cpPerIp: 30,
      });
    });

    it('Collect reports 200 per IP and site_id, the tightest of its budgets', async () => {
      const ws = await h().workspace('defaults-collect');
      const res = await collect(h(), ws.siteId, nextIp());
      expect(res.statusCode).toBe(200);
      expectPassed(res, 200, 199);
    });

    it('the webhook reports 300 per integration', async () => {
      const ws = await h().workspace('defaults-webhook');
      const ip = nextIp();
      expectPassed(await webhook(h(), ws.integrationId, ip), 300, 299);
      expectPassed(await webhook(h(), ws.integrationId, ip), 300, 298);
    });

    it('auth allows 10 requests a minute per address, the 11th gets 429', async () => {
      const ip = nextIp();
      for (let i = 0; i < 10; i++) {
        expectPassed(
          await h().request({ method: 'POST', url: '/api/v1/auth/login', remoteAddress: ip, json: { email: 'a@b.c', password: 'x' } }),
          10,
          9 - i,
        );
      }
      expectRateLimited(
        await h().request({ method: 'POST', url: '/api/v1/auth/login', remoteAddress: ip, json: { email: 'a@b.c', password: 'x' } }),
        10,
      );
    });

    it('consent pages allow 30 requests a minute per address, the 31st gets 429', async () => {
      const ip = nextIp();
      for (let i = 0; i < 30; i++) {
        expectPassed(await h().request({ method: 'GET', url: `/cp/preferences/t${i}`, remoteAddress: ip }), 30, 29 - i);
      }
      expectRateLimited(await h().request({ method: 'GET', url: '/cp/preferences/t', remoteAddress: ip }), 30);
    });
  },
  SPEC_DEFAULTS,
);
