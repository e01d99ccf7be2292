import { readFileSync } from 'node:fs';
import { gunzipSync } from 'node:zlib';
import Fastify from 'fastify';
import { describe, expect, it } from 'vitest';
import { buildApp } from '../src/server/app.js';
import { DrainGate } from '../src/server/plugins/drain.js';
import { builtScriptPath, sdkRoutes } from '../src/server/routes/sdk/sdk-routes.js';
import { describeEachDatabase } from './helpers/harness.js';
import { serializerCompiler, validatorCompiler } from '../src/server/openapi/route-schema.js';

const ORIGIN = 'http://shop.example';

describeEachDatabase('GET /emk.js', (h) => {
  const built = readFileSync(builtScriptPath());
  const get = (headers: Record<string, string> = {}, url = '/emk.js?s=site_1') => h().request({ method: 'GET', url, headers });

  it('serves the built script as JavaScript, cacheable for five minutes, gzipped when accepted', async () => {
    const res = await get({ 'accept-encoding': 'gzip, deflate, br' });
    expect(res.statusCode).toBe(200);
    expect(res.headers['content-type']).toBe('application/javascript; charset=utf-8');
    expect(res.headers['cache-control']).toBe('public, max-age=300');
    expect(res.headers['content-encoding']).toBe('gzip');
    expect(res.headers.vary).toMatch(/accept-encoding/i);
    expect(res.headers.etag).toMatch(/^"[\w-]+"$/);
    expect(gunzipSync(res.rawPayload).equals(built)).toBe(true);
    expect(res.rawPayload.length).toBeLessThan(built.length);
  });

  it('plain bytes without Accept-Encoding, or with gzip;q=0; the same bytes for any site id', async () => {
    const variants: Array<Record<string, string>> = [{}, { 'accept-encoding': 'gzip;q=0, identity' }, { 'accept-encoding': 'br' }];
    for (const headers of variants) {
      const res = await get(headers);
      expect(res.statusCode).toBe(200);
      expect(res.headers['content-encoding']).toBeUndefined();
      expect(res.rawPayload.equals(built)).toBe(true);
    }
    const other = await get({}, '/emk.js?s=another');
    expect(other.rawPayload.equals(built)).toBe(true);
    expect((await get({ 'accept-encoding': '*' })).headers['content-encoding']).toBe('gzip');
  });

  it('answers 304 without a body to a matching If-None-Match; HEAD has the headers only', async () => {
    const { etag } = (await get()).headers as { etag: string };
    const revalidated = await get({ 'if-none-match': `W/"other", ${etag}` });
    expect(revalidated.statusCode).toBe(304);
    expect(revalidated.rawPayload.length).toBe(0);
    expect(revalidated.headers.etag).toBe(etag);
    expect(revalidated.headers['cache-control']).toBe('public, max-age=300');
    expect((await get({ 'if-none-match': '"stale"' })).statusCode).toBe(200);
    const head = await h().request({ method: 'HEAD', url: '/emk.js?s=x' });
    expect(head.statusCode).toBe(200);
    expect(head.headers['content-type']).toBe('application/javascript; charset=utf-8');
    expect(head.rawPayload.length).toBe(0);
  });

  it("the Collect API's 503 while draining is readable cross-origin, Retry-After exposed", async () => {
    const drain = new DrainGate();
    const app = await buildApp({ services: h().services, config: h().config, drain, logLevel: 'silent' });
    try {
      drain.start();
      const res = await app.inject({ method: 'POST', url: '/collect/event', headers: { origin: ORIGIN, 'content-type': 'text/plain' }, payload: '{}' });
      expect(res.statusCode).toBe(503);
      expect(res.headers['access-control-allow-origin']).toBe('*');
      expect(res.headers['access-control-expose-headers']).toBe('retry-after');
      expect(res.headers['retry-after']).toMatch(/^\d+$/);
    } finally {
      await app.close();
    }
  });
});

describeEachDatabase(
  'Collect 429 for the SDK',
  (h) => {
    it('the rate limit answer is readable cross-origin, Retry-After exposed', async () => {
      const ws = await h().workspace();
      const send = () =>
        h().request({
          method: 'POST',
          url: '/collect/event',
          headers: { origin: ORIGIN, 'content-type': 'text/plain;charset=UTF-8' },
          payload: JSON.stringify({ site_id: ws.siteId, event_name: 'x', anonymous_id: 'a1' }),
        });
      expect((await send()).statusCode).toBe(200);
      const limited = await send();
      expect(limited.statusCode).toBe(429);
      expect(limited.headers['access-control-allow-origin']).toBe('*');
      expect(limited.headers['access-control-expose-headers']).toBe('retry-after');
      expect(limited.headers['retry-after']).toMatch(/^\d+$/);
    });
  },
  { EMK_LIMIT_COLLECT_PER_IP_SITE: '1' },
);

describe('sdkRoutes without a built script', () => {
  it('answers 404 naming the build step instead of failing the server', async () => {
    // A bare Fastify with the app's schema compilers: routes describe themselves with zod schemas.
    const app = Fastify();
    app.setValidatorCompiler(validatorCompiler);
    app.setSerializerCompiler(serializerCompiler);
    await app.register(sdkRoutes({ scriptPath: '/nonexistent/emk.js' }));
    const res = await app.inject({ method: 'GET', url: '/emk.js?s=x' });
    expect(res.statusCode).toBe(404);
    expect(res.json().error).toMatch(/npm run build/);
    await app.close();
  });
});
