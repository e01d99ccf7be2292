import { expect, it } from 'vitest';
import { describeEachDatabase, type TestWorkspace } from './helpers/harness.js';

describeEachDatabase('contacts', (h) => {
  const identify = (ws: TestWorkspace, body: Record<string, unknown>) =>
    h().request({ method: 'POST', url: '/collect/identify', json: { site_id: ws.siteId, ...body } });
  const getContact = (ws: TestWorkspace, id: string) =>
    h().request({ method: 'GET', url: `/api/v1/contacts/${id}`, key: ws.apiKey });

  it('identify creates a contact and answers {contact_id, email}', async () => {
    const ws = await h().workspace();
    const res = await identify(ws, { email: 'ann@example.com', properties: { first_name: 'Ann' } });
    expect(res.statusCode).toBe(200);
    const body = res.json();
    expect(Object.keys(body).sort()).toEqual(['contact_id', 'email']);
    expect(body.email).toBe('ann@example.com');
    const contact = (await getContact(ws, body.contact_id)).json();
    expect(contact).toMatchObject({
      id: body.contact_id,
      email: 'ann@example.com',
      properties: { first_name: 'Ann' },
      subscription_status: 'non_subscribed',
      anonymous_ids: [],
      lifetime_revenue: 0,
      orders_count: 0,
    });
    expect(Date.parse(contact.created_at)).not.toBeNaN();
    expect(Date.parse(contact.updated_at)).not.toBeNaN();
  });

  it('one contact per email, case-insensitively', async () => {
    const ws = await h().workspace();
    const first = (await identify(ws, { email: 'Bob@Example.com' })).json();
    const second = (await identify(ws, { email: ' bob@example.COM ' })).json();
    expect(second.contact_id).toBe(first.contact_id);
    const list = (await h().request({ method: 'GET', url: '/api/v1/contacts', key: ws.apiKey })).json();
    expect(list.meta.total).toBe(1);
  });

  it('identify sets properties on create or where empty, never overwrites a value', async () => {
    const ws = await h().workspace();
    const { contact_id } = (
      await identify(ws, { email: 'c@example.com', properties: { first_name: 'Cat', last_name: '', phone: null } })
    ).json();
    await identify(ws, {
      email: 'c@example.com',
      properties: { first_name: 'Other', last_name: 'Smith', phone: '+441', city: 'Leeds' },
    });
    const contact = (await getContact(ws, contact_id)).json();
    expect(contact.properties).toEqual({ first_name: 'Cat', last_name: 'Smith', phone: '+441', city: 'Leeds' });
  });

  it('50 concurrent identifies of one new email make one contact', async () => {
    const ws = await h().workspace();
    const replies = await Promise.all(
      Array.from({ length: 50 }, (_, i) =>
        identify(ws, { email: i % 2 ? 'race@example.com' : 'RACE@example.com', properties: { n: i } }),
      ),
    );
    expect(replies.every((r) => r.statusCode === 200)).toBe(true);
    expect(new Set(replies.map((r) => r.json().contact_id)).size).toBe(1);
    const rows = await h().services.db.knex('contacts').where({ workspace_id: ws.id });
    expect(rows).toHaveLength(1);
  });

  it('identify merges anonymous_id and attaches the events recorded under it earlier', async () => {
    const ws = await h().workspace();
    for (const name of ['viewed_product', 'my_custom']) {
      const res = await h().request({
        method: 'POST',
        url: '/collect/event',
        json: { site_id: ws.siteId, event_name: name, anonymous_id: 'anon-1', properties: { product_id: 'p1' } },
      });
      expect(res.statusCode).toBe(200);
    }
    const { contact_id } = (await identify(ws, { email: 'd@example.com', anonymous_id: 'anon-1' })).json();
    const events = (
      await h().request({ method: 'GET', url: `/api/v1/events?contact_id=${contact_id}`, key: ws.apiKey })
    ).json();
    expect(events.data.map((e: { event_name: string }) => e.event_name).sort()).toEqual(['my_custom', 'viewed_product']);
    expect((await getContact(ws, contact_id)).json().anonymous_ids).toEqual(['anon-1']);

    // Later anonymous events of the same visitor go straight to the contact.
    await h().request({
      method: 'POST',
      url: '/collect/event',
      json: { site_id: ws.siteId, event_name: 'later', anonymous_id: 'anon-1' },
    });
    const after = (
      await h().request({ method: 'GET', url: `/api/v1/events?contact_id=${contact_id}`, key: ws.apiKey })
    ).json();
    expect(after.meta.total).toBe(3);
  });

  it('an anonymous id already identified keeps its contact: no data moves to another contact', async () => {
    const ws = await h().workspace();
    await h().request({ method: 'POST', url: '/collect/event', json: { site_id: ws.siteId, event_name: 'x', anonymous_id: 'shared' } });
    const first = (await identify(ws, { email: 'e1@example.com', anonymous_id: 'shared' })).json();
    const second = (await identify(ws, { email: 'e2@example.com', anonymous_id: 'shared' })).json();
    expect((await getContact(ws, first.contact_id)).json().anonymous_ids).toEqual(['shared']);
    expect((await getContact(ws, second.contact_id)).json().anonymous_ids).toEqual([]);
    const firstEvents = await h().request({ method: 'GET', url: `/api/v1/events?contact_id=${first.contact_id}`, key: ws.apiKey });
    expect(firstEvents.json().meta.total).toBe(1);
  });

  it('POST /contacts creates (201) then reconciles by email (200) without changing status', async () => {
    const ws = await h().workspace();
    const created = await h().request({
      method: 'POST',
      url: '/api/v1/contacts',
      key: ws.apiKey,
      json: { email: 'F@example.com', properties: { first_name: 'Fay', tier: 'gold' }, subscription_status: 'subscribed' },
    });
    expect(created.statusCode).toBe(201);
    expect(created.json()).toMatchObject({ email: 'F@example.com', subscription_status: 'subscribed', source: 'api' });

    const again = await h().request({
      method: 'POST',
      url: '/api/v1/contacts',
      key: ws.apiKey,
      json: { email: 'f@example.com', properties: { tier: 'platinum' }, subscription_status: 'unsubscribed' },
    });
    expect(again.statusCode).toBe(200);
    expect(again.json().id).toBe(created.json().id);
    expect(again.json().subscription_status).toBe('subscribed');
    expect(again.json().properties).toEqual({ first_name: 'Fay', tier: 'platinum' });
  });

  it('POST /contacts without a status creates non_subscribed', async () => {
    const ws = await h().workspace();
    const res = await h().request({ method: 'POST', url: '/api/v1/contacts', key: ws.apiKey, json: { email: 'g@example.com' } });
    expect(res.statusCode).toBe(201);
    expect(res.json().subscription_status).toBe('non_subscribed');
  });

  it('PATCH merges properties and changes consent, recording each change with time and origin', async () => {
    const ws = await h().workspace();
    const { id } = (
      await h().request({ method: 'POST', url: '/api/v1/contacts', key: ws.apiKey, json: { email: 'h@example.com', properties: { a: 1, b: 2 } } })
    ).json();
    const patched = await h().request({
      method: 'PATCH',
      url: `/api/v1/contacts/${id}`,
      key: ws.apiKey,
      json: { properties: { b: 3, c: 4 }, subscription_status: 'subscribed' },
    });
    expect(patched.statusCode).toBe(200);
    expect(patched.json()).toMatchObject({ properties: { a: 1, b: 3, c: 4 }, subscription_status: 'subscribed' });
    await h().request({ method: 'PATCH', url: `/api/v1/contacts/${id}`, key: ws.apiKey, json: { subscription_status: 'unsubscribed' } });
    // The same status again is no change.
    await h().request({ method: 'PATCH', url: `/api/v1/contacts/${id}`, key: ws.apiKey, json: { subscription_status: 'unsubscribed' } });
    const changes = await h().services.db.knex('subscription_changes').where({ contact_id: id }).orderBy('id');
    expect(changes.map((c) => [c.from_status, c.to_status, c.origin])).toEqual([
      [null, 'non_subscribed', 'create:api'],
      ['non_subscribed', 'subscribed', 'api:update'],
      ['subscribed', 'unsubscribed', 'api:update'],
    ]);
    expect(changes.every((c) => Number(c.created_at) > 0)).toBe(true);
  });

  it('PATCH refuses an unknown status naming the field, and changes nothing', async () => {
    const ws = await h().workspace();
    const { id } = (
      await h().request({ method: 'POST', url: '/api/v1/contacts', key: ws.apiKey, json: { email: 'i@example.com', properties: { a: 1 } } })
    ).json();
    const res = await h().request({
      method: 'PATCH',
      url: `/api/v1/contacts/${id}`,
      key: ws.apiKey,
      json: { properties: { a: 2 }, subscription_status: 'maybe' },
    });
    expect(res.statusCode).toBe(400);
    expect(res.json().error).toMatch(/subscription_status/);
    expect((await getContact(ws, id)).json().properties).toEqual({ a: 1 });
  });

  it('PATCH and GET of an unknown id answer 404 {error:"not found"}', async () => {
    const ws = await h().workspace();
    for (const method of ['GET', 'PATCH'] as const) {
      const res = await h().request({ method, url: '/api/v1/contacts/nope', key: ws.apiKey, ...(method === 'PATCH' ? { json: {} } : {}) });
      expect(res.statusCode).toBe(404);
      expect(res.json().error).toBe('not found');
    }
  });

  it('lists with page, perPage (clamped to 500) and a case-insensitive email filter', async () => {
    const ws = await h().workspace();
    for (let i = 0; i < 5; i++) {
      await h().request({ method: 'POST', url: '/api/v1/contacts', key: ws.apiKey, json: { email: `list${i}@example.com` } });
    }
    const page2 = (await h().request({ method: 'GET', url: '/api/v1/contacts?page=2&perPage=2', key: ws.apiKey })).json();
    expect(page2.meta).toEqual({ page: 2, perPage: 2, total: 5 });
    expect(page2.data).toHaveLength(2);
    const page1 = (await h().request({ method: 'GET', url: '/api/v1/contacts?page=1&perPage=2', key: ws.apiKey })).json();
    expect(page1.data.map((c: { id: string }) => c.id)).not.toContain(page2.data[0].id);
    const clamped = (await h().request({ method: 'GET', url: '/api/v1/contacts?perPage=9999', key: ws.apiKey })).json();
    expect(clamped.meta.perPage).toBe(500);
    const byEmail = (await h().request({ method: 'GET', url: '/api/v1/contacts?email=LIST3@EXAMPLE.COM', key: ws.apiKey })).json();
    expect(byEmail.data.map((c: { email: string }) => c.email)).toEqual(['list3@example.com']);
    const bad = await h().request({ method: 'GET', url: '/api/v1/contacts?page=0', key: ws.apiKey });
    expect(bad.statusCode).toBe(400);
    expect(bad.json().error).toMatch(/page/);
  });

  it("a workspace's key never sees another workspace's contacts", async () => {
    const mine = await h().workspace('mine');
    const theirs = await h().workspace('theirs');
    const { contact_id } = (await identify(theirs, { email: 'secret@example.com' })).json();
    expect((await getContact(mine, contact_id)).statusCode).toBe(404);
    const list = (await h().request({ method: 'GET', url: '/api/v1/contacts?email=secret@example.com', key: mine.apiKey })).json();
    expect(list.data).toEqual([]);
    const patch = await h().request({ method: 'PATCH', url: `/api/v1/contacts/${contact_id}`, key: mine.apiKey, json: { properties: { x: 1 } } });
    expect(patch.statusCode).toBe(404);
    // Same email in two workspaces: two contacts.
    const own = (await identify(mine, { email: 'secret@example.com' })).json();
    expect(own.contact_id).not.toBe(contact_id);
  });
});

describeEachDatabase('contacts across processes', (h) => {
  it('two service instances (separate pools, like two processes) racing on one new email make one contact', async () => {
    const { createServices } = await import('../src/domain/create-services.js');
    const { openDatabase } = await import('../src/domain/db/database.js');
    const ws = await h().workspace();
    const second = createServices(openDatabase(h().database.url));
    try {
      const calls = Array.from({ length: 50 }, (_, i) =>
        (i % 2 ? second : h().services).contacts.identify(ws.id, { email: `Racer@example.com`, properties: { i } }),
      );
      const results = await Promise.all(calls);
      expect(new Set(results.map((r) => r.contact_id)).size).toBe(1);
      expect(await h().services.db.knex('contacts').where({ workspace_id: ws.id })).toHaveLength(1);
    } finally {
      await second.close();
    }
  });
});

describeEachDatabase('the workspace contact limit', (h) => {
  it('no new contact past the limit: identify, POST /contacts and collect events are 403; sync reports the row; existing contacts still work', async () => {
    const ws = await h().workspace();
    const first = (await h().request({ method: 'POST', url: '/collect/identify', json: { site_id: ws.siteId, email: 'one@example.com' } })).json();
    const patched = await h().request({ method: 'PATCH', url: '/api/v1/settings', key: ws.apiKey, json: { contact_limit: 1 } });
    expect(patched.statusCode).toBe(200);

    const identify = await h().request({ method: 'POST', url: '/collect/identify', json: { site_id: ws.siteId, email: 'two@example.com' } });
    expect(identify.statusCode).toBe(403);
    expect(identify.json().error).toBe('contact limit reached');
    const created = await h().request({ method: 'POST', url: '/api/v1/contacts', key: ws.apiKey, json: { email: 'three@example.com' } });
    expect(created.statusCode).toBe(403);
    const event = await h().request({
      method: 'POST',
      url: '/collect/event',
      json: { site_id: ws.siteId, email: 'four@example.com', event_name: 'viewed_product' },
    });
    expect(event.statusCode).toBe(403);
    const sync = await h().request({
      method: 'POST',
      url: '/api/v1/ecommerce/sync-historical-orders',
      key: ws.apiKey,
      json: {
        orders: [
          { email: 'five@example.com', external_id: 'x', order_number: 'x', total_amount: 5, currency: 'EUR', ordered_at: '2026-01-01T00:00:00Z' },
        ],
      },
    });
    expect(sync.json()).toMatchObject({ inserted: 0, errors: [{ index: 0, external_id: 'x', error: 'contact limit reached' }] });

    expect(await h().services.db.knex('contacts').where({ workspace_id: ws.id })).toHaveLength(1);
    expect(await h().services.db.knex('events').where({ workspace_id: ws.id })).toHaveLength(0);
    const again = await h().request({ method: 'POST', url: '/collect/identify', json: { site_id: ws.siteId, email: 'ONE@example.com', properties: { a: 1 } } });
    expect(again.statusCode).toBe(200);
    expect(again.json().contact_id).toBe(first.contact_id);
    const own = await h().request({ method: 'POST', url: '/collect/event', json: { site_id: ws.siteId, email: 'one@example.com', event_name: 'x' } });
    expect(own.statusCode).toBe(200);
  });
});
