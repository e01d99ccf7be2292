import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { Validator } from '@seriousme/openapi-schema-validator';
import { expect, inject, it } from 'vitest';
import { loadConfig } from '../src/domain/config.js';
import { createServices } from '../src/domain/create-services.js';
import { openDatabase } from '../src/domain/db/database.js';
import { buildApp } from '../src/server/app.js';
import { DOCUMENTATION_ROUTES } from '../src/server/openapi/openapi-plugin.js';
import { describeEachDatabase, NO_LIMITS } from './helpers/harness.js';
import { adminDatabase, databaseUrlWithName } from './helpers/test-databases.js';

type Operation = { security?: Array<Record<string, string[]>>; tags?: string[]; summary?: string; responses?: Record<string, unknown> };

/** Every route Fastify registers on a fresh app, as `METHOD /path` in OpenAPI's `{param}` spelling. */
async function registeredRoutes(databaseUrl: string): Promise<string[]> {
  const routes: string[] = [];
  const services = createServices(openDatabase(databaseUrl));
  const app = await buildApp({
    services,
    config: loadConfig({ ...NO_LIMITS, EMK_DATABASE_URL: databaseUrl }),
    logLevel: 'silent',
    onRoute: (route) => {
      for (const method of [route.method].flat()) {
        if (method !== 'HEAD') routes.push(`${method} ${route.url.replace(/:(\w+)/g, '{$1}')}`);
      }
    },
  });
  await app.close();
  await services.close();
  return routes;
}

describeEachDatabase('routes that describe themselves', (h, dialect) => {
  const document = async () => {
    const res = await h().request({ method: 'GET', url: '/openapi.json' });
    expect(res.statusCode).toBe(200);
    return res.json() as { openapi: string; info: { version: string }; paths: Record<string, Record<string, Operation>>; components: { securitySchemes: Record<string, unknown> } };
  };

  it('the document is valid OpenAPI 3.1 (a maintained validator accepts it, every $ref resolves)', async () => {
    const validator = new Validator();
    const result = await validator.validate(await document());
    expect(result.errors ?? []).toEqual([]);
    expect(result.valid).toBe(true);
    expect(validator.version).toMatch(/^3\.1/);
    expect(() => validator.resolveRefs()).not.toThrow();
  });

  it("the document's version is package.json's", async () => {
    const { version } = JSON.parse(readFileSync(new URL('../package.json', import.meta.url), 'utf8')) as { version: string };
    expect((await document()).info.version).toBe(version);
  });

  it('GET /openapi.json lists every registered route (but its own page), each with its noun and credential', async () => {
    const doc = await document();
    expect(doc.openapi).toBe('3.1.0');
    expect(Object.keys(doc.components.securitySchemes).sort()).toEqual(['accessToken', 'apiKey', 'consoleSession', 'integrationKey', 'metricsToken', 'platformSignature', 'segmentWriteKey', 'siteId']);
    const documented = Object.entries(doc.paths).flatMap(([path, ops]) => Object.keys(ops).map((method) => `${method.toUpperCase()} ${path}`));
    const served = (await registeredRoutes(h().database.url)).filter(
      (route) => !DOCUMENTATION_ROUTES.some((prefix) => route.split(' ')[1]!.startsWith(prefix)),
    );
    expect(served.length).toBeGreaterThan(35);
    expect(served.filter((route) => !documented.includes(route))).toEqual([]);
    expect(documented.filter((route) => !served.includes(route))).toEqual([]);

    const credentialOf = (method: string, path: string) => doc.paths[path]![method]!.security;
    expect(credentialOf('post', '/api/v1/contacts')).toEqual([{ apiKey: [] }, { accessToken: [] }]);
    expect(credentialOf('post', '/api/v1/auth/login')).toEqual([]);
    expect(credentialOf('post', '/ecom/{platform}/{integrationId}')).toEqual([{ integrationKey: [] }]);
    expect(credentialOf('post', '/ecom/shopify/{integrationId}')).toEqual([{ platformSignature: [] }]);
    expect(credentialOf('post', '/collect/event')).toEqual([{ siteId: [] }]);
    expect(credentialOf('get', '/emk.js')).toEqual([{ siteId: [] }]);
    expect(credentialOf('post', '/v1/batch')).toEqual([{ segmentWriteKey: [] }]);
    expect(credentialOf('get', '/healthz')).toEqual([]);
    expect(credentialOf('get', '/metrics')).toEqual([{ metricsToken: [] }, {}]);
    for (const [path, ops] of Object.entries(doc.paths)) {
      for (const [method, op] of Object.entries(ops)) {
        expect(op.tags?.length, `${method} ${path}`).toBe(1);
        expect(op.summary, `${method} ${path}`).toBeTruthy();
        if (path.startsWith('/api/v1/') && !path.startsWith('/api/v1/auth/')) {
          expect(op.security, `${method} ${path}`).toEqual([{ apiKey: [] }, { accessToken: [] }]);
        }
      }
    }
  });

  it('request and reply schemas come from the domain: fields, requirement and error replies are documented', async () => {
    const doc = await document();
    const create = doc.paths['/api/v1/ecommerce/orders']!.post! as Operation & {
      requestBody: { content: { 'application/json': { schema: { required: string[]; properties: Record<string, unknown> } } } };
    };
    const body = create.requestBody.content['application/json'].schema;
    expect(body.required.sort()).toEqual(['contact_id', 'currency', 'order_number', 'ordered_at', 'platform', 'status', 'total_amount']);
    expect(Object.keys(body.properties)).toEqual(expect.arrayContaining(['external_id', 'items']));
    expect(Object.keys(create.responses!).sort()).toEqual(['201', '400', '401', '404']);
    const list = doc.paths['/api/v1/contacts']!.get! as Operation & { parameters: Array<{ name: string; in: string }> };
    expect(list.parameters.map((p) => `${p.in}:${p.name}`).sort()).toEqual(['query:email', 'query:page', 'query:perPage']);
    // The webhook's body is documented, never validated: any body still gets its 200.
    const webhook = doc.paths['/ecom/{platform}/{integrationId}']!.post! as Operation & { requestBody: unknown };
    expect(JSON.stringify(webhook.requestBody)).toContain('event_type');
  });

  it('a request the route schema refuses keeps the contract body: 400 {error: "invalid request: <field> …", request_id}', async () => {
    const ws = await h().workspace();
    const res = await h().request({ method: 'POST', url: '/api/v1/contacts', key: ws.apiKey, json: { email: 42 } });
    expect(res.statusCode).toBe(400);
    expect(res.json()).toEqual({ error: 'invalid request: email must be a string (got number)', request_id: res.headers['x-request-id'] });
    const query = await h().request({ method: 'GET', url: '/api/v1/contacts?page=0', key: ws.apiKey });
    expect(query.json().error).toBe('invalid request: page must be at least 1');
    // A batch with a bad row is not refused whole: the row is reported, the rest written.
    const batch = await h().request({ method: 'POST', url: '/api/v1/events/batch', key: ws.apiKey, json: { events: [{ email: 'nobody@example.com' }] } });
    expect(batch.statusCode).toBe(200);
    expect(batch.json().errors[0].error).toBe('invalid request: event_name is required');
  });

  it('GET /docs is a readable page whose scripts and styles come from the installed package, not a CDN', async () => {
    let res = await h().request({ method: 'GET', url: '/docs' });
    if (res.statusCode === 302) res = await h().request({ method: 'GET', url: String(res.headers.location).replace(/^\.\//, '/docs/') });
    expect(res.statusCode).toBe(200);
    expect(res.headers['content-type']).toMatch(/text\/html/);
    const assets = [...res.body.matchAll(/(?:src|href)="([^"]+)"/g)].map((m) => m[1]!);
    expect(assets.length).toBeGreaterThan(0);
    expect(assets.filter((a) => /^(https?:)?\/\//.test(a))).toEqual([]);
    for (const asset of assets.filter((a) => /\.(js|css)$/.test(a))) {
      const url = asset.startsWith('/') ? asset : `/docs/${asset.replace(/^\.\//, '')}`;
      expect((await h().request({ method: 'GET', url })).statusCode, url).toBe(200);
    }
  });

  it('GET /healthz answers while alive; GET /readyz answers 200 on a migrated database and 503 on one that is not', async () => {
    expect((await h().request({ method: 'GET', url: '/healthz' })).json()).toEqual({ status: 'ok' });
    expect((await h().request({ method: 'GET', url: '/readyz' })).json()).toEqual({ status: 'ready' });

    // A database nobody migrated: the server answers, but is not ready.
    let url: string;
    let drop: () => Promise<void>;
    if (dialect === 'sqlite') {
      url = `sqlite:${join(inject('tmpDir'), `unmigrated-${process.pid}.db`)}`;
      drop = async () => {};
    } else {
      const name = `emk_t_unmigrated_${process.pid}`;
      const admin = adminDatabase(process.env.EMK_TEST_DATABASE_URL!);
      await admin.knex.raw('DROP DATABASE IF EXISTS ??', [name]);
      await admin.knex.raw('CREATE DATABASE ??', [name]);
      url = databaseUrlWithName(process.env.EMK_TEST_DATABASE_URL!, name);
      drop = async () => {
        await admin.knex.raw('DROP DATABASE IF EXISTS ?? WITH (FORCE)', [name]);
        await admin.close();
      };
    }
    const services = createServices(openDatabase(url));
    const app = await buildApp({ services, config: loadConfig({ ...NO_LIMITS, EMK_DATABASE_URL: url }), logLevel: 'silent' });
    try {
      const res = await app.inject({ method: 'GET', url: '/readyz' });
      expect(res.statusCode).toBe(503);
      expect(res.json().error).toMatch(/^not ready: \d+ migrations not applied/);
      expect(res.headers['retry-after']).toBe('5');
      expect((await app.inject({ method: 'GET', url: '/healthz' })).statusCode).toBe(200);
    } finally {
      await app.close();
      await services.close();
      await drop();
    }
  });
});
