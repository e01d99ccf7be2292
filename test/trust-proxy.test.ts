import type { LightMyRequestResponse } from 'fastify';
import { expect, it } from 'vitest';
import { loadConfig } from '../src/domain/config.js';
import { describeEachDatabase, type Harness } from './helpers/harness.js';

/**
 * EMK_TRUST_PROXY takes a hop count or the proxies' addresses/CIDRs. Per-address budgets must stay on the
 * address the trusted proxy saw, whatever a client writes into X-Forwarded-For itself.
 */

const PROXY = '10.66.0.1';

/** One auth request (budget 3 per address) from `remoteAddress`, carrying `forwardedFor` if given. */
function login(h: Harness, remoteAddress: string, forwardedFor?: string): Promise<LightMyRequestResponse> {
  return h.request({
    method: 'POST',
    url: '/api/v1/auth/login',
    remoteAddress,
    headers: forwardedFor === undefined ? {} : { 'x-forwarded-for': forwardedFor },
    json: { email: 'who@example.com', password: 'wrong-password' },
  });
}

/** Spends a budget of 3 and expects the 4th request to be refused. */
async function expectSpentAfterThree(send: (n: number) => Promise<LightMyRequestResponse>): Promise<void> {
  for (let n = 1; n <= 3; n++) {
    const res = await send(n);
    expect(res.statusCode, res.body).toBe(401);
    expect(res.headers['ratelimit-remaining']).toBe(String(3 - n));
  }
  expect((await send(4)).statusCode).toBe(429);
}

describeEachDatabase(
  'trust proxy: a hop count',
  (h) => {
    it('with 1 hop a client cannot pick its address: the budget stays on the address the proxy appended', async () => {
      const real = '198.51.100.10';
      // The client writes a fresh address of its own each time; the proxy appends the one it saw.
      await expectSpentAfterThree((n) => login(h(), PROXY, `1.2.3.${n}, ${real}`));
      // Another client behind the same proxy has a budget of its own: the proxy's entry is believed.
      const other = await login(h(), PROXY, `1.2.3.4, 198.51.100.11`);
      expect(other.statusCode).toBe(401);
      expect(other.headers['ratelimit-remaining']).toBe('2');
    });

    it('with 1 hop and no X-Forwarded-For the budget is the peer’s', async () => {
      await expectSpentAfterThree(() => login(h(), '198.51.100.12'));
    });
  },
  { EMK_TRUST_PROXY: '1', EMK_LIMIT_AUTH_PER_IP: '3' },
);

describeEachDatabase(
  'trust proxy: a list of addresses',
  (h) => {
    it('X-Forwarded-For is honoured from a listed proxy (an address or a CIDR)', async () => {
      for (const [i, proxy] of ['192.0.2.1', '10.66.3.4'].entries()) {
        for (let n = 1; n <= 4; n++) {
          const res = await login(h(), proxy, `203.0.113.${10 * i + n}`);
          expect(res.statusCode).toBe(401);
          expect(res.headers['ratelimit-remaining']).toBe('2');
        }
      }
      await expectSpentAfterThree(() => login(h(), '10.66.3.5', '203.0.113.50'));
    });

    it('from any other address X-Forwarded-For is ignored: rotating it does not escape the budget', async () => {
      await expectSpentAfterThree((n) => login(h(), '198.51.100.20', `203.0.113.${100 + n}`));
    });

    it('behind two listed proxies, entries a client wrote before them are not believed', async () => {
      await expectSpentAfterThree((n) => login(h(), '192.0.2.1', `1.2.3.${n}, 203.0.113.60, 10.66.9.9`));
    });
  },
  { EMK_TRUST_PROXY: '192.0.2.1, 10.66.0.0/16', EMK_LIMIT_AUTH_PER_IP: '3' },
);

describeEachDatabase('trust proxy: the setting', () => {
  it('false, 0 and unset trust no proxy; a number is hops; a list is addresses, CIDRs or proxy-addr’s range names', () => {
    for (const value of [undefined, '', 'false', '0']) expect(loadConfig({ EMK_TRUST_PROXY: value }).trustProxy).toBe(false);
    expect(loadConfig({ EMK_TRUST_PROXY: '1' }).trustProxy).toEqual({ hops: 1 });
    expect(loadConfig({ EMK_TRUST_PROXY: '2' }).trustProxy).toEqual({ hops: 2 });
    expect(loadConfig({ EMK_TRUST_PROXY: '10.0.0.1' }).trustProxy).toEqual({ addresses: ['10.0.0.1'] });
    expect(loadConfig({ EMK_TRUST_PROXY: ' 10.0.0.0/8 ,fd00::/8, loopback' }).trustProxy).toEqual({
      addresses: ['10.0.0.0/8', 'fd00::/8', 'loopback'],
    });
  });

  it('true (trust every hop) is refused at start with a message naming EMK_TRUST_PROXY', () => {
    expect(() => loadConfig({ EMK_TRUST_PROXY: 'true' })).toThrow(/EMK_TRUST_PROXY must be a hop count .*true trusted every hop/);
  });

  it('anything else is refused naming EMK_TRUST_PROXY and the wrong entry', () => {
    for (const [value, wrong] of [
      ['10.0.0.0/33', '10.0.0.0/33'],
      ['10.0.0.1, proxy.internal', 'proxy.internal'],
      ['11', '11'],
      ['1.2.3.4/8/1', '1.2.3.4/8/1'],
      ['yes', 'yes'],
    ]) {
      expect(() => loadConfig({ EMK_TRUST_PROXY: value }), value).toThrow(`EMK_TRUST_PROXY must be false, a hop count from 1 to 10 or a comma-separated list of addresses/CIDRs (not "${wrong}")`);
    }
  });
});
