import type { LightMyRequestResponse } from 'fastify';
import { expect, it } from 'vitest';
import { describeEachDatabase, type TestWorkspace } from './helpers/harness.js';

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;
const ORIGIN = 'https://shop.example.org';

let emailCounter = 0;
const uniqueEmail = (tag = 'collect') => `${tag}-${process.pid}-${++emailCounter}@example.com`;

interface EventRecord {
  id: string;
  contact_id: string | null;
  event_name: string;
  properties: Record<string, unknown>;
  source: string | null;
  created_at: string;
}

/** The CORS header a browser needs to read a Collect API answer from another origin. */
function expectCors(res: LightMyRequestResponse) {
  expect(['*', ORIGIN]).toContain(res.headers['access-control-allow-origin']);
}

describeEachDatabase('Collect API', (h) => {
  const identify = (body: Record<string, unknown>, headers: Record<string, string> = {}) =>
    h().request({ method: 'POST', url: '/collect/identify', json: body, headers: { origin: ORIGIN, ...headers } });
  const collect = (body: Record<string, unknown>, headers: Record<string, string> = {}) =>
    h().request({ method: 'POST', url: '/collect/event', json: body, headers: { origin: ORIGIN, ...headers } });
  const events = async (ws: TestWorkspace, query = ''): Promise<{ data: EventRecord[]; meta: { total: number } }> => {
    const res = await h().request({ method: 'GET', url: `/api/v1/events${query}`, key: ws.apiKey });
    expect(res.statusCode).toBe(200);
    return res.json();
  };
  const contactsByEmail = async (ws: TestWorkspace, email: string) => {
    const res = await h().request({ method: 'GET', url: `/api/v1/contacts?email=${encodeURIComponent(email)}`, key: ws.apiKey });
    expect(res.statusCode).toBe(200);
    return res.json().data as Array<{ id: string; email: string; subscription_status: string; anonymous_ids: string[] }>;
  };
  const getContact = async (ws: TestWorkspace, id: string) =>
    h().request({ method: 'GET', url: `/api/v1/contacts/${id}`, key: ws.apiKey });

  // ---------------------------------------------------------------- identify

  it('identify answers exactly {contact_id: <uuid>, email} and creates the contact', async () => {
    const ws = await h().workspace();
    const email = uniqueEmail('id');
    const res = await identify({ site_id: ws.siteId, email, properties: { first_name: 'Ann', last_name: 'Lee', phone: '+4412' } });
    expect(res.statusCode).toBe(200);
    expect(res.headers['content-type']).toMatch(/^application\/json/);
    const body = res.json();
    expect(Object.keys(body).sort()).toEqual(['contact_id', 'email']);
    expect(body.contact_id).toMatch(UUID);
    expect(body.email).toBe(email);
    const contact = (await getContact(ws, body.contact_id)).json();
    expect(contact).toMatchObject({ id: body.contact_id, email, properties: { first_name: 'Ann', last_name: 'Lee', phone: '+4412' } });
  });

  it('identify of a known email answers the same contact, and links later events to it', async () => {
    const ws = await h().workspace();
    const email = uniqueEmail('again');
    const first = (await identify({ site_id: ws.siteId, email })).json();
    const second = (await identify({ site_id: ws.siteId, email: email.toUpperCase() })).json();
    expect(second.contact_id).toBe(first.contact_id);
    expect((await collect({ site_id: ws.siteId, event_name: 'after_identify', email })).statusCode).toBe(200);
    const list = await events(ws, `?contact_id=${first.contact_id}`);
    expect(list.data.map((e) => e.event_name)).toEqual(['after_identify']);
    expect(await contactsByEmail(ws, email)).toHaveLength(1);
  });

  it('identify with anonymous_id merges it into the contact and attaches that visitor’s earlier events', async () => {
    const ws = await h().workspace();
    const anon = `anon-${process.pid}-${Date.now()}`;
    expect((await collect({ site_id: ws.siteId, event_name: 'viewed_product', anonymous_id: anon })).statusCode).toBe(200);
    const before = await events(ws);
    expect(before.data).toHaveLength(1);
    expect(before.data[0]!.contact_id).toBeNull();

    const { contact_id } = (await identify({ site_id: ws.siteId, email: uniqueEmail('anon'), anonymous_id: anon })).json();
    expect((await getContact(ws, contact_id)).json().anonymous_ids).toEqual([anon]);
    const after = await events(ws, `?contact_id=${contact_id}`);
    expect(after.data.map((e) => e.event_name)).toEqual(['viewed_product']);
  });

  it('identify in one workspace never touches a contact of the same email in another', async () => {
    const a = await h().workspace('a');
    const b = await h().workspace('b');
    const email = uniqueEmail('two');
    const inA = (await identify({ site_id: a.siteId, email, properties: { first_name: 'A' } })).json();
    const inB = (await identify({ site_id: b.siteId, email, properties: { first_name: 'B' } })).json();
    expect(inB.contact_id).not.toBe(inA.contact_id);
    expect((await getContact(a, inA.contact_id)).json().properties).toEqual({ first_name: 'A' });
    expect((await getContact(b, inB.contact_id)).json().properties).toEqual({ first_name: 'B' });
    expect((await getContact(a, inB.contact_id)).statusCode).toBe(404);
  });

  // ---------------------------------------------------------------- event

  it('event by contact_id answers exactly {success:true} and stores the event on that contact', async () => {
    const ws = await h().workspace();
    const { contact_id } = (await identify({ site_id: ws.siteId, email: uniqueEmail('cid') })).json();
    const properties = { product_id: 'p-1', price: 19.99, tags: ['a', 'b'], nested: { ok: true, none: null } };
    const started = Date.now();
    const res = await collect({ site_id: ws.siteId, event_name: 'wishlist_added', contact_id, properties });
    expect(res.statusCode).toBe(200);
    expect(res.json()).toEqual({ success: true });

    const list = await events(ws);
    expect(list.data).toHaveLength(1);
    const event = list.data[0]!;
    expect(event).toMatchObject({ contact_id, event_name: 'wishlist_added', properties });
    expect(typeof event.id).toBe('string');
    const at = Date.parse(event.created_at);
    expect(at).toBeGreaterThanOrEqual(started - 1000);
    expect(at).toBeLessThanOrEqual(Date.now() + 1000);
  });

  it('event without properties is stored with an empty properties object', async () => {
    const ws = await h().workspace();
    const email = uniqueEmail('noprops');
    expect((await collect({ site_id: ws.siteId, event_name: 'ping', email })).statusCode).toBe(200);
    const list = await events(ws);
    expect(list.data[0]!.properties).toEqual({});
  });

  it('event by a known email attaches to that contact (case-insensitively) and creates no other', async () => {
    const ws = await h().workspace();
    const email = uniqueEmail('Known');
    const { contact_id } = (await identify({ site_id: ws.siteId, email })).json();
    const res = await collect({ site_id: ws.siteId, event_name: 'cart_viewed', email: email.toUpperCase(), properties: { n: 1 } });
    expect(res.json()).toEqual({ success: true });
    const list = await events(ws);
    expect(list.data.map((e) => [e.contact_id, e.event_name])).toEqual([[contact_id, 'cart_viewed']]);
    const all = (await h().request({ method: 'GET', url: '/api/v1/contacts', key: ws.apiKey })).json();
    expect(all.meta.total).toBe(1);
  });

  it('event by an unseen email creates a non-subscribed contact and attaches the event to it', async () => {
    const ws = await h().workspace();
    const email = uniqueEmail('unseen');
    const res = await collect({ site_id: ws.siteId, event_name: 'form_submitted', email, properties: { form: 'newsletter' } });
    expect(res.json()).toEqual({ success: true });
    const found = await contactsByEmail(ws, email);
    expect(found).toHaveLength(1);
    expect(found[0]!.email).toBe(email);
    // Tracking is not consent.
    expect(found[0]!.subscription_status).toBe('non_subscribed');
    const list = await events(ws, `?contact_id=${found[0]!.id}`);
    expect(list.data.map((e) => e.event_name)).toEqual(['form_submitted']);
    expect(list.data[0]!.properties).toEqual({ form: 'newsletter' });
    // A second event of the same new email: still one contact.
    await collect({ site_id: ws.siteId, event_name: 'form_submitted', email: ` ${email.toUpperCase()} ` });
    expect(await contactsByEmail(ws, email)).toHaveLength(1);
    expect((await events(ws, `?contact_id=${found[0]!.id}`)).meta.total).toBe(2);
  });

  it('event by an anonymous_id alone is stored without a contact; once identified, later events go to the contact', async () => {
    const ws = await h().workspace();
    const anon = `visitor-${process.pid}-${Date.now()}`;
    const res = await collect({ site_id: ws.siteId, event_name: 'active_on_site', anonymous_id: anon, properties: { url: '/a' } });
    expect(res.json()).toEqual({ success: true });
    let list = await events(ws);
    expect(list.data).toHaveLength(1);
    expect(list.data[0]).toMatchObject({ contact_id: null, event_name: 'active_on_site', properties: { url: '/a' } });
    const contactsBefore = (await h().request({ method: 'GET', url: '/api/v1/contacts', key: ws.apiKey })).json();
    expect(contactsBefore.meta.total).toBe(0);

    const { contact_id } = (await identify({ site_id: ws.siteId, email: uniqueEmail('vis'), anonymous_id: anon })).json();
    await collect({ site_id: ws.siteId, event_name: 'active_on_site', anonymous_id: anon, properties: { url: '/b' } });
    list = await events(ws, `?contact_id=${contact_id}`);
    expect(list.data.map((e) => e.properties.url).sort()).toEqual(['/a', '/b']);
  });

  it('an anonymous visitor carrying an identity token (_ir_id) is that token’s contact; a bad token is ignored', async () => {
    const ws = await h().workspace();
    const { contact_id } = (await identify({ site_id: ws.siteId, email: uniqueEmail('tok') })).json();
    const token = await h().services.identityTokens.mint(ws.id, { contactId: contact_id, campaignId: 'c-1' });
    for (const field of ['identity_token', '_ir_id', '_emk']) {
      const res = await collect({ site_id: ws.siteId, event_name: 'active_on_site', anonymous_id: 'a-tok', [field]: token, properties: { via: field } });
      expect(res.json()).toEqual({ success: true });
    }
    expect((await events(ws, `?contact_id=${contact_id}`)).data.map((e) => e.properties.via).sort()).toEqual(['_emk', '_ir_id', 'identity_token']);
    // Tampered, or minted by another workspace: the event stays anonymous.
    const other = await h().workspace();
    const foreign = await h().services.identityTokens.mint(other.id, { contactId: contact_id });
    await collect({ site_id: ws.siteId, event_name: 'active_on_site', anonymous_id: 'a-tok', identity_token: `${token}x`, properties: { via: 'bad' } });
    await collect({ site_id: ws.siteId, event_name: 'active_on_site', anonymous_id: 'a-tok', identity_token: foreign, properties: { via: 'foreign' } });
    const anonymous = (await events(ws)).data.filter((e) => e.contact_id === null).map((e) => e.properties.via).sort();
    expect(anonymous).toEqual(['bad', 'foreign']);
  });

  it('contact_id wins over email when both are sent', async () => {
    const ws = await h().workspace();
    const { contact_id } = (await identify({ site_id: ws.siteId, email: uniqueEmail('owner') })).json();
    const otherEmail = uniqueEmail('other');
    await collect({ site_id: ws.siteId, event_name: 'both', contact_id, email: otherEmail });
    const list = await events(ws);
    expect(list.data.map((e) => e.contact_id)).toEqual([contact_id]);
    expect(await contactsByEmail(ws, otherEmail)).toEqual([]);
  });

  it('a contact_id of another workspace is 404 and nothing is stored anywhere', async () => {
    const mine = await h().workspace('mine');
    const theirs = await h().workspace('theirs');
    const { contact_id } = (await identify({ site_id: theirs.siteId, email: uniqueEmail('theirs') })).json();
    const res = await collect({ site_id: mine.siteId, event_name: 'sneaky', contact_id });
    expect(res.statusCode).toBe(404);
    expect(res.headers['content-type']).toMatch(/^application\/json/);
    expect(typeof res.json().error).toBe('string');
    expectCors(res);
    expect((await events(mine)).meta.total).toBe(0);
    expect((await events(theirs)).meta.total).toBe(0);
    const stored = await h().services.db.knex('events').where({ event_name: 'sneaky' });
    expect(stored).toHaveLength(0);
  });

  it('an unknown contact_id is 404 and nothing is stored', async () => {
    const ws = await h().workspace();
    const res = await collect({ site_id: ws.siteId, event_name: 'ghost', contact_id: '01900000-0000-7000-8000-000000000000' });
    expect(res.statusCode).toBe(404);
    expect(typeof res.json().error).toBe('string');
    expect((await events(ws)).meta.total).toBe(0);
  });

  // ---------------------------------------------------------------- site_id and required fields

  it('an unknown site_id is 404 {error} on identify and event, and creates nothing', async () => {
    const ws = await h().workspace();
    const email = uniqueEmail('nosite');
    for (const res of [
      await identify({ site_id: 'site_does_not_exist', email }),
      await collect({ site_id: 'site_does_not_exist', event_name: 'x', email }),
      await collect({ site_id: `${ws.siteId}x`, event_name: 'x', email }),
    ]) {
      expect(res.statusCode).toBe(404);
      expect(res.headers['content-type']).toMatch(/^application\/json/);
      const body = res.json();
      expect(typeof body.error).toBe('string');
      expect(body.error.length).toBeGreaterThan(0);
      expectCors(res);
    }
    const anywhere = await h().services.db.knex('contacts').whereRaw('lower(email) = ?', [email.toLowerCase()]);
    expect(anywhere).toHaveLength(0);
    expect((await events(ws)).meta.total).toBe(0);
  });

  it('the workspace API key is not a site_id, and a site_id is not an API key', async () => {
    const ws = await h().workspace();
    const res = await identify({ site_id: ws.apiKey.slice(0, 64), email: uniqueEmail('swap') });
    expect(res.statusCode).toBe(404);
    const mgmt = await h().request({ method: 'GET', url: '/api/v1/events', key: ws.siteId });
    expect(mgmt.statusCode).toBe(401);
  });

  it('missing site_id, email or event_name is 400 whose error names the field', async () => {
    const ws = await h().workspace();
    const email = uniqueEmail('missing');
    const cases: Array<[LightMyRequestResponse, string]> = [
      [await identify({ email }), 'site_id'],
      [await identify({ site_id: ws.siteId }), 'email'],
      [await identify({ site_id: ws.siteId, properties: { first_name: 'X' } }), 'email'],
      [await collect({ event_name: 'x', email }), 'site_id'],
      [await collect({ site_id: ws.siteId, email }), 'event_name'],
      [await collect({ site_id: ws.siteId, contact_id: 'whatever' }), 'event_name'],
    ];
    for (const [res, field] of cases) {
      expect(res.statusCode, res.body).toBe(400);
      expect(res.headers['content-type']).toMatch(/^application\/json/);
      expect(res.json().error).toMatch(/^invalid request/);
      expect(res.json().error).toContain(field);
      expectCors(res);
    }
    expect(await contactsByEmail(ws, email)).toEqual([]);
  });

  it('a request with two faults gets the first in the body’s order: a bad site_id before a bad event, a bad event before an unknown site', async () => {
    const email = uniqueEmail('faults');
    const badBoth = await collect({ site_id: 42, email });
    expect(badBoth.statusCode).toBe(400);
    expect(badBoth.json().error).toMatch(/^invalid request: site_id /);
    const unknownSiteBadEvent = await collect({ site_id: 'site_does_not_exist', email });
    expect(unknownSiteBadEvent.statusCode).toBe(400);
    expect(unknownSiteBadEvent.json().error).toMatch(/^invalid request: event_name /);
    const unknownSiteBadEmail = await identify({ site_id: 'site_does_not_exist', email: 'not-an-email' });
    expect(unknownSiteBadEmail.statusCode).toBe(400);
    expect(unknownSiteBadEmail.json().error).toMatch(/^invalid request: email /);
  });

  it('an event with none of email, contact_id or anonymous_id is 400 naming them, and stores nothing', async () => {
    const ws = await h().workspace();
    for (const body of [
      { site_id: ws.siteId, event_name: 'orphan' },
      { site_id: ws.siteId, event_name: 'orphan', properties: { a: 1 } },
    ]) {
      const res = await collect(body);
      expect(res.statusCode).toBe(400);
      const error = res.json().error as string;
      expect(error).toMatch(/^invalid request/);
      for (const field of ['email', 'contact_id', 'anonymous_id']) expect(error).toContain(field);
      expectCors(res);
    }
    expect((await events(ws)).meta.total).toBe(0);
  });

  // ---------------------------------------------------------------- sendBeacon (text/plain)

  it('accepts the body as text/plain (navigator.sendBeacon) and parses it as JSON', async () => {
    const ws = await h().workspace();
    const email = uniqueEmail('beacon');
    const beacon = (url: string, body: Record<string, unknown>) =>
      h().request({
        method: 'POST',
        url,
        payload: JSON.stringify(body),
        headers: { 'content-type': 'text/plain;charset=UTF-8', origin: ORIGIN },
      });
    const identified = await beacon('/collect/identify', { site_id: ws.siteId, email, properties: { first_name: 'Bea' } });
    expect(identified.statusCode).toBe(200);
    expect(identified.json().email).toBe(email);
    expectCors(identified);
    const contactId = identified.json().contact_id;
    expect((await getContact(ws, contactId)).json().properties).toEqual({ first_name: 'Bea' });

    const tracked = await beacon('/collect/event', { site_id: ws.siteId, event_name: 'product_viewed', email, properties: { sku: 'S1' } });
    expect(tracked.statusCode).toBe(200);
    expect(tracked.json()).toEqual({ success: true });
    const list = await events(ws, `?contact_id=${contactId}`);
    expect(list.data.map((e) => [e.event_name, e.properties])).toEqual([['viewed_product', { sku: 'S1' }]]);

    // Validation applies the same to text/plain bodies.
    const invalid = await beacon('/collect/event', { site_id: ws.siteId, email });
    expect(invalid.statusCode).toBe(400);
    expect(invalid.json().error).toContain('event_name');
  });

  // ---------------------------------------------------------------- CORS

  it('answers a CORS preflight with 204, allow-origin, POST among the methods and content-type among the headers', async () => {
    for (const url of ['/collect/identify', '/collect/event']) {
      for (const requestHeaders of [undefined, 'content-type', 'Content-Type, X-Requested-With']) {
        const res = await h().request({
          method: 'OPTIONS',
          url,
          headers: {
            origin: ORIGIN,
            'access-control-request-method': 'POST',
            ...(requestHeaders ? { 'access-control-request-headers': requestHeaders } : {}),
          },
        });
        expect(res.statusCode, `${url} ${requestHeaders}`).toBe(204);
        expectCors(res);
        const methods = String(res.headers['access-control-allow-methods']).split(',').map((m) => m.trim().toUpperCase());
        expect(methods).toContain('POST');
        const allowed = String(res.headers['access-control-allow-headers']).split(',').map((m) => m.trim().toLowerCase());
        expect(allowed).toContain('content-type');
        expect(res.body).toBe('');
      }
    }
  });

  it('every Collect API answer carries access-control-allow-origin: success, 400, 404, 415 and 413', async () => {
    const ws = await h().workspace();
    const email = uniqueEmail('cors');
    const replies: Array<[LightMyRequestResponse, number]> = [
      [await identify({ site_id: ws.siteId, email }), 200],
      [await collect({ site_id: ws.siteId, event_name: 'x', email }), 200],
      [await collect({ site_id: ws.siteId, email }), 400],
      [await identify({ site_id: ws.siteId, email: 'nope' }), 400],
      [await collect({ site_id: 'site_unknown', event_name: 'x', email }), 404],
      [
        await h().request({
          method: 'POST',
          url: '/collect/event',
          payload: '{not json',
          headers: { 'content-type': 'application/json', origin: ORIGIN },
        }),
        400,
      ],
      [
        await h().request({
          method: 'POST',
          url: '/collect/event',
          payload: '<xml/>',
          headers: { 'content-type': 'application/xml', origin: ORIGIN },
        }),
        415,
      ],
      [
        await h().request({
          method: 'POST',
          url: '/collect/event',
          payload: JSON.stringify({ site_id: ws.siteId, event_name: 'x', email, properties: { b: 'x'.repeat(5 * 1024 * 1024 + 10) } }),
          headers: { 'content-type': 'text/plain', origin: ORIGIN },
        }),
        413,
      ],
    ];
    for (const [res, status] of replies) {
      expect(res.statusCode, res.body.slice(0, 200)).toBe(status);
      expectCors(res);
      if (status >= 400) expect(res.headers['content-type']).toMatch(/^application\/json/);
    }
  });

  // ---------------------------------------------------------------- event names

  it('standard event aliases are normalised to their canonical names; canonical names stay as they are', async () => {
    const ws = await h().workspace();
    const email = uniqueEmail('alias');
    const expected: Record<string, string> = {
      product_viewed: 'viewed_product',
      viewed_product: 'viewed_product',
      category_viewed: 'collection_viewed',
      collection_viewed: 'collection_viewed',
      searched: 'search_submitted',
      search: 'search_submitted',
      search_submitted: 'search_submitted',
      product_added_to_cart: 'added_to_cart',
      added_to_cart: 'added_to_cart',
      product_removed_from_cart: 'removed_from_cart',
      removed_from_cart: 'removed_from_cart',
      checkout_started: 'started_checkout',
      started_checkout: 'started_checkout',
      cart_viewed: 'cart_viewed',
      checkout_completed: 'checkout_completed',
      active_on_site: 'active_on_site',
      product_clicked: 'product_clicked',
      form_submitted: 'form_submitted',
    };
    for (const sent of Object.keys(expected)) {
      const res = await collect({ site_id: ws.siteId, event_name: sent, email, properties: { sent } });
      expect(res.statusCode, sent).toBe(200);
    }
    const list = await events(ws, '?perPage=100');
    expect(list.data).toHaveLength(Object.keys(expected).length);
    const stored = Object.fromEntries(list.data.map((e) => [e.properties.sent as string, e.event_name]));
    expect(stored).toEqual(expected);

    // Filtering by an alias finds the canonical events.
    const viewed = await events(ws, '?event_name=product_viewed');
    expect(viewed.data.map((e) => e.properties.sent).sort()).toEqual(['product_viewed', 'viewed_product']);
  });

  it('custom event names are kept exactly as sent', async () => {
    const ws = await h().workspace();
    const email = uniqueEmail('custom');
    const names = [
      'Viewed Product',
      'viewed-product',
      'product_viewed_v2',
      'my_product_viewed',
      'searches',
      'Placed Order',
      'subscription.renewed',
      'Größe gewählt',
      '注文 🛒',
    ];
    for (const name of names) {
      const res = await collect({ site_id: ws.siteId, event_name: name, email, properties: { sent: name } });
      expect(res.statusCode, name).toBe(200);
    }
    const list = await events(ws, '?perPage=100');
    const stored = Object.fromEntries(list.data.map((e) => [e.properties.sent as string, e.event_name]));
    expect(stored).toEqual(Object.fromEntries(names.map((n) => [n, n])));
    const one = await events(ws, `?event_name=${encodeURIComponent('Viewed Product')}`);
    expect(one.data.map((e) => e.event_name)).toEqual(['Viewed Product']);
  });

  // ---------------------------------------------------------------- isolation

  it('events collected for one site are never listed by another workspace', async () => {
    const a = await h().workspace('a');
    const b = await h().workspace('b');
    const email = uniqueEmail('iso');
    await collect({ site_id: a.siteId, event_name: 'only_a', email });
    await collect({ site_id: b.siteId, event_name: 'only_b', email });
    expect((await events(a)).data.map((e) => e.event_name)).toEqual(['only_a']);
    expect((await events(b)).data.map((e) => e.event_name)).toEqual(['only_b']);
    const [inA] = await contactsByEmail(a, email);
    const [inB] = await contactsByEmail(b, email);
    expect(inA!.id).not.toBe(inB!.id);
  });
});
