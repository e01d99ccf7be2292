import { expect, it } from 'vitest';
import { NotFoundError, UnauthorizedError } from '../src/domain/errors.js';
import { hashSecret } from '../src/domain/shared/ids.js';
import { describeEachDatabase, type TestWorkspace } from './helpers/harness.js';

describeEachDatabase('integrations', (h) => {
  const api = (ws: TestWorkspace, method: 'GET' | 'POST' | 'PATCH', url: string, json?: unknown) =>
    h().request({ method, url: `/api/v1${url}`, key: ws.apiKey, ...(json !== undefined ? { json } : {}) });
  const authenticate = (id: string, authorization: string | undefined, platform = 'website') =>
    h().services.integrations.authenticateWebhook(id, platform, authorization);
  const bearer = (key: string) => `Bearer ${key}`;
  const notFound = { message: 'integration not found', httpStatus: 404 };
  const unauthorized = { message: 'invalid api key', httpStatus: 401 };

  it('POST creates a website integration: 201 with the contract shape and a key stored only as a hash', async () => {
    const ws = await h().workspace();
    const res = await api(ws, 'POST', '/integrations', { platform: 'website', domain: 'second.example' });
    expect(res.statusCode).toBe(201);
    const body = res.json();
    expect(Object.keys(body).sort()).toEqual(['active', 'api_key', 'created_at', 'domain', 'id', 'platform']);
    expect(body).toMatchObject({ platform: 'website', domain: 'second.example', active: true });
    expect(body.api_key).toMatch(/^whk_[A-Za-z0-9]{40}$/);
    expect(Date.parse(body.created_at)).not.toBeNaN();
    const row = await h().services.db.knex('integrations').where({ id: body.id }).first();
    expect(row.workspace_id).toBe(ws.id);
    expect(row.api_key_hash).toBe(hashSecret(body.api_key));
    expect(JSON.stringify(row)).not.toContain(body.api_key);
    // The new key opens the webhook of the new integration.
    await expect(authenticate(body.id, bearer(body.api_key))).resolves.toMatchObject({ id: body.id, domain: 'second.example' });
  });

  it('POST keeps the domain as a bare host, and refuses a bad domain or platform naming the field', async () => {
    const ws = await h().workspace();
    const normalised = await api(ws, 'POST', '/integrations', { platform: 'website', domain: ' https://Shop.Example.COM/path ' });
    expect(normalised.statusCode).toBe(201);
    expect(normalised.json().domain).toBe('shop.example.com');
    for (const [json, field] of [
      [{ platform: 'website' }, /domain is required/],
      [{ platform: 'website', domain: 'not a domain' }, /domain/],
      [{ platform: 'website', domain: '' }, /domain/],
      [{ platform: 'web site!', domain: 'x.example' }, /platform/],
      [{ platform: 7, domain: 'x.example' }, /platform/],
    ] as const) {
      const res = await api(ws, 'POST', '/integrations', json);
      expect(res.statusCode, JSON.stringify(json)).toBe(400);
      expect(res.json().error).toMatch(field);
    }
    const list = (await api(ws, 'GET', '/integrations')).json();
    expect(list.data).toHaveLength(2);
  });

  it('GET lists the workspace integrations, never a key or its hash', async () => {
    const ws = await h().workspace();
    const other = await h().workspace('other');
    const created = (await api(ws, 'POST', '/integrations', { platform: 'website', domain: 'b.example' })).json();
    const res = await api(ws, 'GET', '/integrations');
    expect(res.statusCode).toBe(200);
    const body = res.json();
    expect(body.data.map((i: { id: string }) => i.id)).toEqual([ws.integrationId, created.id]);
    expect(body.meta).toEqual({ page: 1, perPage: 50, total: 2 });
    for (const integration of body.data) {
      expect(Object.keys(integration).sort()).toEqual(['active', 'created_at', 'domain', 'id', 'platform']);
    }
    expect(res.body).not.toContain(ws.integrationKey);
    expect(res.body).not.toContain(created.api_key);
    expect(res.body).not.toContain(hashSecret(created.api_key));
    expect(res.body).not.toContain(other.integrationId);
    const page2 = (await api(ws, 'GET', '/integrations?page=2&perPage=1')).json();
    expect(page2.data.map((i: { id: string }) => i.id)).toEqual([created.id]);
  });

  it('the management routes need the workspace key', async () => {
    const ws = await h().workspace();
    expect((await h().request({ method: 'GET', url: '/api/v1/integrations' })).statusCode).toBe(401);
    const withWebhookKey = await h().request({ method: 'GET', url: '/api/v1/integrations', key: ws.integrationKey });
    expect(withWebhookKey.statusCode).toBe(401);
  });

  it('authenticateWebhook accepts the integration key and names the workspace, platform and domain', async () => {
    const ws = await h().workspace();
    await expect(authenticate(ws.integrationId, bearer(ws.integrationKey))).resolves.toEqual({
      id: ws.integrationId,
      workspaceId: ws.id,
      platform: 'website',
      domain: 'shop.test',
    });
    // The scheme is case-insensitive (RFC 9110); surrounding spaces do not matter.
    await expect(authenticate(ws.integrationId, `bearer ${ws.integrationKey}`)).resolves.toMatchObject({ workspaceId: ws.id });
    await expect(authenticate(ws.integrationId, `  BEARER   ${ws.integrationKey} `)).resolves.toMatchObject({ workspaceId: ws.id });
  });

  it('authenticateWebhook: unknown id, another platform in the path, or an inactive integration → 404', async () => {
    const ws = await h().workspace();
    const key = bearer(ws.integrationKey);
    for (const id of ['00000000-0000-7000-8000-000000000000', 'nope', 'x'.repeat(500), '']) {
      const failure = authenticate(id, key);
      await expect(failure).rejects.toBeInstanceOf(NotFoundError);
      await expect(failure).rejects.toMatchObject(notFound);
    }
    await expect(authenticate(ws.integrationId, key, 'shopify')).rejects.toMatchObject(notFound);
    await expect(authenticate(ws.integrationId, key, 'Website')).rejects.toMatchObject(notFound);
    await h().services.integrations.update(ws.id, ws.integrationId, { active: false });
    await expect(authenticate(ws.integrationId, key)).rejects.toMatchObject(notFound);
    // 404 comes before the key check: an inactive integration answers 404 even without a key.
    await expect(authenticate(ws.integrationId, undefined)).rejects.toMatchObject(notFound);
  });

  it('authenticateWebhook: a missing, malformed or wrong key → 401 invalid api key', async () => {
    const ws = await h().workspace();
    const other = await h().workspace('other');
    const attempts: Array<string | undefined> = [
      undefined,
      '',
      'Bearer',
      'Bearer ',
      ws.integrationKey,
      `Basic ${ws.integrationKey}`,
      `Token ${ws.integrationKey}`,
      `Bearer ${ws.integrationKey} extra`,
      `Bearer ${ws.integrationKey}x`,
      `Bearer ${ws.integrationKey.slice(0, -1)}`,
      bearer(ws.apiKey),
      bearer(other.integrationKey),
      bearer(hashSecret(ws.integrationKey)),
    ];
    for (const authorization of attempts) {
      const failure = authenticate(ws.integrationId, authorization);
      await expect(failure, String(authorization)).rejects.toBeInstanceOf(UnauthorizedError);
      await expect(failure).rejects.toMatchObject(unauthorized);
    }
  });

  it('PATCH active:false closes the webhook at once (even with the lookup cached); active:true opens it again', async () => {
    const ws = await h().workspace();
    const key = bearer(ws.integrationKey);
    await authenticate(ws.integrationId, key); // warms the cache
    const off = await api(ws, 'PATCH', `/integrations/${ws.integrationId}`, { active: false });
    expect(off.statusCode).toBe(200);
    expect(off.json()).toMatchObject({ id: ws.integrationId, active: false, domain: 'shop.test', platform: 'website' });
    expect(off.json().api_key).toBeUndefined();
    await expect(authenticate(ws.integrationId, key)).rejects.toMatchObject(notFound);
    const listed = (await api(ws, 'GET', '/integrations')).json().data[0];
    expect(listed.active).toBe(false);

    const on = await api(ws, 'PATCH', `/integrations/${ws.integrationId}`, { active: true });
    expect(on.json().active).toBe(true);
    await expect(authenticate(ws.integrationId, key)).resolves.toMatchObject({ id: ws.integrationId });
  });

  it('PATCH changes the domain (seen by the webhook at once) and only the fields sent', async () => {
    const ws = await h().workspace();
    const key = bearer(ws.integrationKey);
    await authenticate(ws.integrationId, key);
    const res = await api(ws, 'PATCH', `/integrations/${ws.integrationId}`, { domain: 'New.Example' });
    expect(res.statusCode).toBe(200);
    expect(res.json()).toMatchObject({ domain: 'new.example', active: true });
    await expect(authenticate(ws.integrationId, key)).resolves.toMatchObject({ domain: 'new.example' });
    const same = await api(ws, 'PATCH', `/integrations/${ws.integrationId}`, {});
    expect(same.json()).toMatchObject({ domain: 'new.example', active: true });
  });

  it('PATCH refuses bad values naming the field and changes nothing; unknown or foreign ids are 404', async () => {
    const ws = await h().workspace();
    const other = await h().workspace('other');
    const bad = await api(ws, 'PATCH', `/integrations/${ws.integrationId}`, { active: 'no', domain: 'changed.example' });
    expect(bad.statusCode).toBe(400);
    expect(bad.json().error).toMatch(/active/);
    const badDomain = await api(ws, 'PATCH', `/integrations/${ws.integrationId}`, { active: false, domain: 'a b' });
    expect(badDomain.statusCode).toBe(400);
    expect(badDomain.json().error).toMatch(/domain/);
    const row = await h().services.db.knex('integrations').where({ id: ws.integrationId }).first();
    expect(row.domain).toBe('shop.test');
    await expect(authenticate(ws.integrationId, bearer(ws.integrationKey))).resolves.toBeDefined();

    for (const id of ['nope', other.integrationId]) {
      const res = await api(ws, 'PATCH', `/integrations/${id}`, { active: false });
      expect(res.statusCode).toBe(404);
      expect(res.json().error).toBe('not found');
    }
    // The other workspace's integration is untouched.
    await expect(authenticate(other.integrationId, bearer(other.integrationKey))).resolves.toBeDefined();
  });

  it('rotate-key answers a new key; the old one stops working at once, the new one works', async () => {
    const ws = await h().workspace();
    const old = bearer(ws.integrationKey);
    await authenticate(ws.integrationId, old); // warms the cache
    const res = await api(ws, 'POST', `/integrations/${ws.integrationId}/rotate-key`);
    expect(res.statusCode).toBe(200);
    const body = res.json();
    expect(body).toMatchObject({ id: ws.integrationId, platform: 'website', domain: 'shop.test', active: true });
    expect(body.api_key).toMatch(/^whk_[A-Za-z0-9]{40}$/);
    expect(body.api_key).not.toBe(ws.integrationKey);
    await expect(authenticate(ws.integrationId, old)).rejects.toMatchObject(unauthorized);
    await expect(authenticate(ws.integrationId, bearer(body.api_key))).resolves.toMatchObject({ workspaceId: ws.id });
    const row = await h().services.db.knex('integrations').where({ id: ws.integrationId }).first();
    expect(row.api_key_hash).toBe(hashSecret(body.api_key));
  });

  it("rotate-key of an unknown or another workspace's integration is 404 and changes nothing", async () => {
    const ws = await h().workspace();
    const other = await h().workspace('other');
    for (const id of ['nope', other.integrationId]) {
      const res = await api(ws, 'POST', `/integrations/${id}/rotate-key`);
      expect(res.statusCode).toBe(404);
    }
    await expect(authenticate(other.integrationId, bearer(other.integrationKey))).resolves.toBeDefined();
  });

  it('a change made by another process is seen once the short cache expires', async () => {
    const { createServices } = await import('../src/domain/create-services.js');
    const { openDatabase } = await import('../src/domain/db/database.js');
    const ws = await h().workspace();
    const key = bearer(ws.integrationKey);
    await authenticate(ws.integrationId, key);
    const second = createServices(openDatabase(h().database.url));
    try {
      await second.integrations.update(ws.id, ws.integrationId, { active: false });
      await expect(second.integrations.authenticateWebhook(ws.integrationId, 'website', key)).rejects.toMatchObject(notFound);
      // Still cached here for the rest of the 5 s: the change is not seen yet.
      h().clock.advance(4_900);
      await expect(authenticate(ws.integrationId, key)).resolves.toBeDefined();
      h().clock.advance(200);
      await expect(authenticate(ws.integrationId, key)).rejects.toMatchObject(notFound);
    } finally {
      await second.close();
    }
  });
});
