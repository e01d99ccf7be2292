import type { LightMyRequestResponse } from 'fastify';
import { expect, it } from 'vitest';
import { describeEachDatabase, type TestWorkspace } from './helpers/harness.js';

const MiB = 1024 * 1024;

let emailCounter = 0;
/** A unique address per call, so no test depends on another's contacts. */
const uniqueEmail = (tag = 'err') => `${tag}-${process.pid}-${++emailCounter}@example.com`;

/**
 * The error envelope (docs/api/README.md, Errors): the status, a JSON content type, `{error, request_id}` with `request_id`
 * equal to the `X-Request-Id` header.
 */
function expectError(res: LightMyRequestResponse, status: number, error?: string | RegExp) {
  expect(res.statusCode, res.body.slice(0, 300)).toBe(status);
  expect(res.headers['content-type']).toMatch(/^application\/json/);
  const body = res.json();
  expect(typeof body.error).toBe('string');
  expect(body.error.length).toBeGreaterThan(0);
  if (typeof error === 'string') expect(body.error).toBe(error);
  else if (error) expect(body.error).toMatch(error);
  const header = res.headers['x-request-id'];
  expect(typeof header).toBe('string');
  expect(body.request_id).toBe(header);
  return body as { error: string; request_id: string };
}

/** 400 whose message starts with the spec's generic `invalid request` and names the field. */
function expectInvalid(res: LightMyRequestResponse, field: string) {
  const body = expectError(res, 400, /^invalid request/);
  expect(body.error).toContain(field);
  return body;
}

describeEachDatabase('error handling', (h) => {
  const post = (url: string, json: unknown, key?: string) =>
    h().request({ method: 'POST', url, json, ...(key ? { key } : {}) });
  const raw = (url: string, payload: string, contentType: string | undefined, key?: string) =>
    h().request({
      method: 'POST',
      url,
      payload,
      ...(key ? { key } : {}),
      headers: contentType ? { 'content-type': contentType } : {},
    });
  const countEvents = async (ws: TestWorkspace) =>
    (await h().request({ method: 'GET', url: '/api/v1/events', key: ws.apiKey })).json().meta.total as number;
  const countContacts = async (ws: TestWorkspace) =>
    (await h().request({ method: 'GET', url: '/api/v1/contacts', key: ws.apiKey })).json().meta.total as number;
  const newContact = async (ws: TestWorkspace, properties: Record<string, unknown> = {}) => {
    const res = await post('/api/v1/contacts', { email: uniqueEmail('c'), properties }, ws.apiKey);
    expect(res.statusCode).toBe(201);
    return res.json().id as string;
  };

  // ---------------------------------------------------------------- X-Request-Id

  it('every response carries X-Request-Id: the caller’s value echoed, on success and on error', async () => {
    const ws = await h().workspace();
    const cases: Array<[string, () => Promise<LightMyRequestResponse>, number]> = [
      ['ok-get', () => h().request({ method: 'GET', url: '/api/v1/events', key: ws.apiKey, headers: { 'x-request-id': 'ok-get' } }), 200],
      [
        'collect-ok',
        () =>
          h().request({
            method: 'POST',
            url: '/collect/event',
            json: { site_id: ws.siteId, event_name: 'x', email: uniqueEmail() },
            headers: { 'x-request-id': 'collect-ok' },
          }),
        200,
      ],
      ['no-key', () => h().request({ method: 'GET', url: '/api/v1/events', headers: { 'x-request-id': 'no-key' } }), 401],
      ['unknown-path', () => h().request({ method: 'GET', url: '/nowhere', headers: { 'x-request-id': 'unknown-path' } }), 404],
      [
        'bad-json',
        () =>
          h().request({
            method: 'POST',
            url: '/collect/identify',
            payload: '{',
            headers: { 'content-type': 'application/json', 'x-request-id': 'bad-json' },
          }),
        400,
      ],
      [
        'preflight',
        () =>
          h().request({
            method: 'OPTIONS',
            url: '/collect/event',
            headers: { origin: 'https://shop.test', 'access-control-request-method': 'POST', 'x-request-id': 'preflight' },
          }),
        204,
      ],
    ];
    for (const [id, send, status] of cases) {
      const res = await send();
      expect(res.statusCode, id).toBe(status);
      expect(res.headers['x-request-id'], id).toBe(id);
      if (status >= 400) expect(res.json().request_id, id).toBe(id);
    }
  });

  it('without X-Request-Id each response gets a fresh generated id, also in error bodies', async () => {
    const ws = await h().workspace();
    const ids = new Set<string>();
    for (let i = 0; i < 3; i++) {
      const ok = await h().request({ method: 'GET', url: '/api/v1/contacts', key: ws.apiKey });
      expect(ok.statusCode).toBe(200);
      const okId = ok.headers['x-request-id'];
      expect(typeof okId).toBe('string');
      ids.add(okId as string);
      const bad = expectError(await h().request({ method: 'GET', url: '/api/v1/contacts' }), 401);
      expect(bad.request_id.length).toBeGreaterThanOrEqual(8);
      ids.add(bad.request_id);
    }
    expect(ids.size).toBe(6);
  });

  // ---------------------------------------------------------------- malformed JSON

  it('malformed JSON is 400 {error, request_id} on the Collect and management APIs', async () => {
    const ws = await h().workspace();
    const contactId = await newContact(ws);
    const bad = ['{', '{"site_id":', "{'site_id':'x'}", '{"a":1,}', 'undefined', 'NaN', '{"a":1}}', '[1,2', '{"a":"\\x41"}'];
    const routes: Array<[string, string, string?]> = [
      ['POST', '/collect/identify'],
      ['POST', '/collect/event'],
      ['POST', '/api/v1/events', ws.apiKey],
      ['POST', '/api/v1/contacts', ws.apiKey],
      ['PATCH', `/api/v1/contacts/${contactId}`, ws.apiKey],
      ['POST', '/api/v1/api-keys', ws.apiKey],
    ];
    for (const [method, url, key] of routes) {
      for (const payload of bad) {
        const res = await h().request({
          method: method as 'POST',
          url,
          payload,
          ...(key ? { key } : {}),
          headers: { 'content-type': 'application/json' },
        });
        expectError(res, 400, /^invalid request/);
      }
    }
    expect(await countEvents(ws)).toBe(0);
    expect(await countContacts(ws)).toBe(1);
  });

  it('the body sent as text/plain must be JSON too: garbage is 400, not 500', async () => {
    const ws = await h().workspace();
    for (const url of ['/collect/identify', '/collect/event']) {
      expectError(await raw(url, `site_id=${ws.siteId}&email=a@b.c`, 'text/plain;charset=UTF-8'), 400, /^invalid request/);
    }
    expect(await countContacts(ws)).toBe(0);
  });

  // ---------------------------------------------------------------- wrong types, nulls, arrays

  it('Collect API: wrong types, nulls and arrays are 400 naming the field, and store nothing', async () => {
    const ws = await h().workspace();
    const site = ws.siteId;
    const email = uniqueEmail();
    const identifyCases: Array<[Record<string, unknown>, string]> = [
      [{ site_id: 123, email }, 'site_id'],
      [{ site_id: null, email }, 'site_id'],
      [{ site_id: [site], email }, 'site_id'],
      [{ site_id: { id: site }, email }, 'site_id'],
      [{ site_id: site, email: 42 }, 'email'],
      [{ site_id: site, email: null }, 'email'],
      [{ site_id: site, email: [email] }, 'email'],
      [{ site_id: site, email: { address: email } }, 'email'],
      [{ site_id: site, email: true }, 'email'],
      [{ site_id: site, email, properties: 'first_name=Ann' }, 'properties'],
      [{ site_id: site, email, properties: [] }, 'properties'],
      [{ site_id: site, email, properties: [{ first_name: 'Ann' }] }, 'properties'],
      [{ site_id: site, email, properties: null }, 'properties'],
      [{ site_id: site, email, properties: 7 }, 'properties'],
      [{ site_id: site, email, anonymous_id: 5 }, 'anonymous_id'],
      [{ site_id: site, email, anonymous_id: ['a'] }, 'anonymous_id'],
    ];
    for (const [body, field] of identifyCases) {
      expectInvalid(await post('/collect/identify', body), field);
    }
    const eventCases: Array<[Record<string, unknown>, string]> = [
      [{ site_id: site, event_name: 5, email }, 'event_name'],
      [{ site_id: site, event_name: null, email }, 'event_name'],
      [{ site_id: site, event_name: ['a'], email }, 'event_name'],
      [{ site_id: site, event_name: { name: 'a' }, email }, 'event_name'],
      [{ site_id: site, event_name: 'x', email: 5 }, 'email'],
      [{ site_id: site, event_name: 'x', email: null }, 'email'],
      [{ site_id: site, event_name: 'x', contact_id: 123 }, 'contact_id'],
      [{ site_id: site, event_name: 'x', contact_id: null }, 'contact_id'],
      [{ site_id: site, event_name: 'x', anonymous_id: true }, 'anonymous_id'],
      [{ site_id: site, event_name: 'x', anonymous_id: { id: 1 } }, 'anonymous_id'],
      [{ site_id: site, event_name: 'x', email, properties: [] }, 'properties'],
      [{ site_id: site, event_name: 'x', email, properties: 'a=1' }, 'properties'],
      [{ site_id: site, event_name: 'x', email, properties: 3.5 }, 'properties'],
      [{ site_id: site, event_name: 'x', email, properties: false }, 'properties'],
    ];
    for (const [body, field] of eventCases) {
      expectInvalid(await post('/collect/event', body), field);
    }
    expect(await countContacts(ws)).toBe(0);
    expect(await countEvents(ws)).toBe(0);
  });

  it('management API: wrong types, nulls and arrays are 400 naming the field, and store nothing', async () => {
    const ws = await h().workspace();
    const contactId = await newContact(ws, { a: 1 });
    const eventCases: Array<[Record<string, unknown>, string]> = [
      [{ contact_id: 1, event_name: 'x' }, 'contact_id'],
      [{ contact_id: null, event_name: 'x' }, 'contact_id'],
      [{ contact_id: [contactId], event_name: 'x' }, 'contact_id'],
      [{ contact_id: contactId, event_name: 7 }, 'event_name'],
      [{ contact_id: contactId, event_name: [] }, 'event_name'],
      [{ contact_id: contactId, event_name: 'x', properties: [] }, 'properties'],
      [{ contact_id: contactId, event_name: 'x', properties: 'p' }, 'properties'],
      [{ contact_id: contactId, event_name: 'x', properties: null }, 'properties'],
      [{ contact_id: contactId, event_name: 'x', source: 5 }, 'source'],
      [{ contact_id: contactId, event_name: 'x', source: { name: 'crm' } }, 'source'],
    ];
    for (const [body, field] of eventCases) {
      expectInvalid(await post('/api/v1/events', body, ws.apiKey), field);
    }
    const contactCases: Array<[Record<string, unknown>, string]> = [
      [{ email: 5 }, 'email'],
      [{ email: null }, 'email'],
      [{ email: ['x@example.com'] }, 'email'],
      [{ email: uniqueEmail(), properties: [] }, 'properties'],
      [{ email: uniqueEmail(), properties: 'x' }, 'properties'],
      [{ email: uniqueEmail(), subscription_status: 1 }, 'subscription_status'],
      [{ email: uniqueEmail(), subscription_status: null }, 'subscription_status'],
    ];
    for (const [body, field] of contactCases) {
      expectInvalid(await post('/api/v1/contacts', body, ws.apiKey), field);
    }
    for (const [body, field] of [
      [{ properties: [] }, 'properties'],
      [{ properties: 'x' }, 'properties'],
      [{ subscription_status: ['subscribed'] }, 'subscription_status'],
    ] as const) {
      expectInvalid(await h().request({ method: 'PATCH', url: `/api/v1/contacts/${contactId}`, key: ws.apiKey, json: body }), field);
    }
    expectInvalid(await post('/api/v1/api-keys', { name: 5 }, ws.apiKey), 'name');
    expect(await countEvents(ws)).toBe(0);
    expect(await countContacts(ws)).toBe(1);
    const contact = (await h().request({ method: 'GET', url: `/api/v1/contacts/${contactId}`, key: ws.apiKey })).json();
    expect(contact.properties).toEqual({ a: 1 });
  });

  it('a body that is not an object (array, string, number, null, boolean) is 400 naming the body', async () => {
    const ws = await h().workspace();
    const contactId = await newContact(ws);
    const bodies = [[{ site_id: ws.siteId, email: uniqueEmail() }], [], '"text"', '42', 'null', 'true'];
    const routes: Array<[string, string, string?]> = [
      ['POST', '/collect/identify'],
      ['POST', '/collect/event'],
      ['POST', '/api/v1/events', ws.apiKey],
      ['POST', '/api/v1/contacts', ws.apiKey],
      ['PATCH', `/api/v1/contacts/${contactId}`, ws.apiKey],
    ];
    for (const [method, url, key] of routes) {
      for (const body of bodies) {
        const res = await h().request({
          method: method as 'POST',
          url,
          payload: typeof body === 'string' ? body : JSON.stringify(body),
          ...(key ? { key } : {}),
          headers: { 'content-type': 'application/json' },
        });
        expectInvalid(res, 'body');
      }
    }
    expect(await countContacts(ws)).toBe(1);
    expect(await countEvents(ws)).toBe(0);
  });

  // ---------------------------------------------------------------- empty bodies

  it('no body, an empty body and a blank body are 400 naming the body', async () => {
    const ws = await h().workspace();
    const routes: Array<[string, string?]> = [
      ['/collect/identify'],
      ['/collect/event'],
      ['/api/v1/events', ws.apiKey],
      ['/api/v1/contacts', ws.apiKey],
    ];
    for (const [url, key] of routes) {
      expectInvalid(await h().request({ method: 'POST', url, ...(key ? { key } : {}) }), 'body');
      expectInvalid(await raw(url, '', 'application/json', key), 'body');
      expectInvalid(await raw(url, '  \n ', 'application/json', key), 'body');
      expectInvalid(await raw(url, '', 'text/plain', key), 'body');
    }
    expect(await countContacts(ws)).toBe(0);
  });

  it('an empty object is 400 naming the first missing required field', async () => {
    const ws = await h().workspace();
    expectInvalid(await post('/collect/identify', {}), 'site_id is required');
    expectInvalid(await post('/collect/event', {}), 'site_id is required');
    expectInvalid(await post('/collect/identify', { site_id: ws.siteId }), 'email is required');
    expectInvalid(await post('/collect/event', { site_id: ws.siteId, email: uniqueEmail() }), 'event_name is required');
    expectInvalid(await post('/api/v1/events', {}, ws.apiKey), 'is required');
    expect((await post('/api/v1/events', {}, ws.apiKey)).json().error).toMatch(/(contact_id|event_name) is required/);
    expectInvalid(await post('/api/v1/contacts', {}, ws.apiKey), 'email is required');
    expectInvalid(await post('/api/v1/events', { event_name: 'x' }, ws.apiKey), 'contact_id is required');
    const contactId = await newContact(ws);
    expectInvalid(await post('/api/v1/events', { contact_id: contactId }, ws.apiKey), 'event_name is required');
  });

  it('empty and blank strings in required fields are 400 naming the field', async () => {
    const ws = await h().workspace();
    expectInvalid(await post('/collect/identify', { site_id: '', email: uniqueEmail() }), 'site_id');
    expectInvalid(await post('/collect/identify', { site_id: ws.siteId, email: '' }), 'email');
    expectInvalid(await post('/collect/identify', { site_id: ws.siteId, email: '   ' }), 'email');
    expectInvalid(await post('/collect/identify', { site_id: ws.siteId, email: 'not-an-email' }), 'email');
    expectInvalid(await post('/collect/event', { site_id: ws.siteId, event_name: '', email: uniqueEmail() }), 'event_name');
    expectInvalid(await post('/collect/event', { site_id: ws.siteId, event_name: ' \t ', email: uniqueEmail() }), 'event_name');
    expect(await countContacts(ws)).toBe(0);
  });

  // ---------------------------------------------------------------- huge input

  it('over-long strings are 400 naming the field, never 500', async () => {
    const ws = await h().workspace();
    const contactId = await newContact(ws);
    const longEmail = `${'a'.repeat(388)}@example.com`; // 400 characters
    expect(longEmail).toHaveLength(400);
    expectInvalid(await post('/collect/event', { site_id: ws.siteId, event_name: 'n'.repeat(300), email: uniqueEmail() }), 'event_name');
    expectInvalid(await post('/collect/identify', { site_id: ws.siteId, email: longEmail }), 'email');
    expectInvalid(await post('/collect/event', { site_id: ws.siteId, event_name: 'x', email: longEmail }), 'email');
    expectInvalid(await post('/collect/identify', { site_id: 's'.repeat(1000), email: uniqueEmail() }), 'site_id');
    expectInvalid(await post('/collect/identify', { site_id: ws.siteId, email: uniqueEmail(), anonymous_id: 'a'.repeat(1000) }), 'anonymous_id');
    expectInvalid(await post('/collect/event', { site_id: ws.siteId, event_name: 'x', contact_id: 'c'.repeat(1000) }), 'contact_id');
    expectInvalid(await post('/collect/event', { site_id: ws.siteId, event_name: 'x', anonymous_id: 'a'.repeat(1000) }), 'anonymous_id');
    expectInvalid(await post('/api/v1/events', { contact_id: contactId, event_name: 'n'.repeat(300) }, ws.apiKey), 'event_name');
    expectInvalid(await post('/api/v1/events', { contact_id: contactId, event_name: 'x', source: 's'.repeat(300) }, ws.apiKey), 'source');
    expectInvalid(await post('/api/v1/contacts', { email: longEmail }, ws.apiKey), 'email');
    expectInvalid(await post('/api/v1/contacts', { email: uniqueEmail(), source: 's'.repeat(300) }, ws.apiKey), 'source');
    expectInvalid(
      await h().request({ method: 'GET', url: `/api/v1/events?event_name=${'n'.repeat(300)}`, key: ws.apiKey }),
      'event_name',
    );
    expect(await countEvents(ws)).toBe(0);
    expect(await countContacts(ws)).toBe(1);
  });

  it('length limits count characters, not UTF-16 units or bytes: 255 emoji fit an event name, 256 do not', async () => {
    const ws = await h().workspace();
    const email = uniqueEmail();
    const fits = '🎉'.repeat(255);
    const res = await post('/collect/event', { site_id: ws.siteId, event_name: fits, email });
    expect(res.statusCode).toBe(200);
    expectInvalid(await post('/collect/event', { site_id: ws.siteId, event_name: `${fits}🎉`, email }), 'event_name');
    const events = (await h().request({ method: 'GET', url: '/api/v1/events', key: ws.apiKey })).json();
    expect(events.data.map((e: { event_name: string }) => e.event_name)).toEqual([fits]);
  });

  it('a 4 MiB properties value is accepted and stored whole', async () => {
    const ws = await h().workspace();
    const blob = 'b'.repeat(4 * MiB);
    const email = uniqueEmail('big');
    const res = await post('/collect/event', { site_id: ws.siteId, event_name: 'big_payload', email, properties: { blob } });
    expect(res.statusCode).toBe(200);
    const events = (await h().request({ method: 'GET', url: '/api/v1/events?event_name=big_payload', key: ws.apiKey })).json();
    expect(events.data).toHaveLength(1);
    expect(events.data[0].properties.blob.length).toBe(blob.length);
    expect(events.data[0].properties.blob === blob).toBe(true);

    const contact = await post('/api/v1/contacts', { email: uniqueEmail('bigc'), properties: { notes: blob } }, ws.apiKey);
    expect(contact.statusCode).toBe(201);
    const read = (await h().request({ method: 'GET', url: `/api/v1/contacts/${contact.json().id}`, key: ws.apiKey })).json();
    expect(read.properties.notes === blob).toBe(true);
  });

  it('a body over 5 MiB is 413 {"error":"payload too large"} and stores nothing', async () => {
    const ws = await h().workspace();
    const contactId = await newContact(ws);
    const blob = 'x'.repeat(5 * MiB + 1024);
    const collect = JSON.stringify({ site_id: ws.siteId, event_name: 'too_big', email: uniqueEmail(), properties: { blob } });
    expectError(await raw('/collect/event', collect, 'application/json'), 413, 'payload too large');
    expectError(await raw('/collect/event', collect, 'text/plain'), 413, 'payload too large');
    expectError(
      await raw('/collect/identify', JSON.stringify({ site_id: ws.siteId, email: uniqueEmail(), properties: { blob } }), 'application/json'),
      413,
      'payload too large',
    );
    const management = JSON.stringify({ contact_id: contactId, event_name: 'too_big', properties: { blob } });
    expectError(await raw('/api/v1/events', management, 'application/json', ws.apiKey), 413, 'payload too large');
    expect(await countEvents(ws)).toBe(0);
    expect(await countContacts(ws)).toBe(1);
  });

  it('deeply nested properties are refused with 400, never a 500', async () => {
    const ws = await h().workspace();
    const depth = 5000;
    const deep = `${'{"a":'.repeat(depth)}1${'}'.repeat(depth)}`;
    const deepArray = `${'['.repeat(depth)}${']'.repeat(depth)}`;
    // The last one also carries an escaped NUL deep inside: the NUL check must not overflow the stack either.
    const deepWithNul = `${'['.repeat(depth)}"\\u0000"${']'.repeat(depth)}`;
    const contactId = await newContact(ws);
    for (const nested of [deep, deepArray, deepWithNul]) {
      const collect = `{"site_id":"${ws.siteId}","event_name":"deep","email":"${uniqueEmail()}","properties":{"n":${nested}}}`;
      expectInvalid(await raw('/collect/event', collect, 'application/json'), 'properties');
      const identify = `{"site_id":"${ws.siteId}","email":"${uniqueEmail()}","properties":{"n":${nested}}}`;
      expectInvalid(await raw('/collect/identify', identify, 'application/json'), 'properties');
      const event = `{"contact_id":"${contactId}","event_name":"deep","properties":{"n":${nested}}}`;
      expectInvalid(await raw('/api/v1/events', event, 'application/json', ws.apiKey), 'properties');
    }
    // Ordinary nesting is fine.
    const modest = `${'{"a":'.repeat(20)}1${'}'.repeat(20)}`;
    const ok = `{"site_id":"${ws.siteId}","event_name":"modest","email":"${uniqueEmail()}","properties":{"n":${modest}}}`;
    expect((await raw('/collect/event', ok, 'application/json')).statusCode).toBe(200);
    expect(await countEvents(ws)).toBe(1);
    expect(await countContacts(ws)).toBe(2);
  });

  // ---------------------------------------------------------------- unicode

  const UNICODE_VALUES = {
    emoji: '😀🎉 👩‍👩‍👧‍👦 🏳️‍🌈 👍🏽',
    cjk: '日本語の商品名・中文・한국어',
    rtl: 'مرحبا بالعالم — שלום',
    nfc: '\u00e9',
    nfd: 'e\u0301',
    astral: '𝔘𝔫𝔦𝔠𝔬𝔡𝔢 𐍈 𠜎',
    escapes: 'quote " backslash \\ slash / newline \n tab \t',
    controls: '\u0001\u001f\u007f',
    separators: '\u2028\u2029',
    specials: '\ufffd\ufeff',
    nested: { '🔑': ['☃', { 'ключ': 'значение' }], 'clé': 'été' },
  };

  it('unicode and emoji round-trip exactly through collect events (names, keys and values)', async () => {
    const ws = await h().workspace();
    const email = uniqueEmail('uni');
    const eventName = 'café ☕ 注文 🛒';
    const res = await post('/collect/event', { site_id: ws.siteId, event_name: eventName, email, properties: UNICODE_VALUES });
    expect(res.statusCode).toBe(200);
    const list = (
      await h().request({ method: 'GET', url: `/api/v1/events?event_name=${encodeURIComponent(eventName)}`, key: ws.apiKey })
    ).json();
    expect(list.data).toHaveLength(1);
    const event = list.data[0];
    expect(event.event_name).toBe(eventName);
    expect(event.properties).toEqual(UNICODE_VALUES);
    // Composed and decomposed forms stay as sent: no normalisation.
    expect(event.properties.nfc).not.toBe(event.properties.nfd);
    expect(event.properties.nfd).toHaveLength(2);
  });

  it('unicode and emoji round-trip exactly through contacts (properties; an IDN domain kept in its envelope form), and email matching is case-insensitive', async () => {
    const ws = await h().workspace();
    // The local part of an address is ASCII (RFC 5321: the address rule, docs/security.md); a Unicode one is refused.
    const refused = await post('/collect/identify', { site_id: ws.siteId, email: `Zoë.日本.${process.pid}@example.com` });
    expect(refused.statusCode).toBe(400);
    expect(refused.json().error).toMatch(/email/);
    const email = `Zoe.${process.pid}@Exämple.com`;
    const stored = `Zoe.${process.pid}@xn--exmple-cua.com`;
    const identified = await post('/collect/identify', {
      site_id: ws.siteId,
      email,
      properties: { first_name: 'Zoë 🦄', last_name: 'Ñúñez-O’Brien', ...UNICODE_VALUES },
    });
    expect(identified.statusCode).toBe(200);
    expect(identified.json().email).toBe(stored);
    const contactId = identified.json().contact_id;
    const contact = (await h().request({ method: 'GET', url: `/api/v1/contacts/${contactId}`, key: ws.apiKey })).json();
    expect(contact.email).toBe(stored);
    expect(contact.properties).toEqual({ first_name: 'Zoë 🦄', last_name: 'Ñúñez-O’Brien', ...UNICODE_VALUES });

    for (const spelling of [email.toUpperCase(), stored.toUpperCase()]) {
      const found = (await h().request({ method: 'GET', url: `/api/v1/contacts?email=${encodeURIComponent(spelling)}`, key: ws.apiKey })).json();
      expect(found.data.map((c: { id: string }) => c.id)).toEqual([contactId]);
    }
    const again = await post('/collect/identify', { site_id: ws.siteId, email: email.toLowerCase() });
    expect(again.json().contact_id).toBe(contactId);

    const patched = await h().request({
      method: 'PATCH',
      url: `/api/v1/contacts/${contactId}`,
      key: ws.apiKey,
      json: { properties: { '城市': 'Zürich 🇨🇭' } },
    });
    expect(patched.statusCode).toBe(200);
    expect(patched.json().properties['城市']).toBe('Zürich 🇨🇭');
  });

  // ---------------------------------------------------------------- NUL and unpaired surrogates

  it('a \\u0000 anywhere in a JSON body is 400 (never 500) and stores nothing', async () => {
    const ws = await h().workspace();
    const contactId = await newContact(ws);
    const email = uniqueEmail('nul');
    // Written as JSON text: `\\u0000` is the six-character escape a client sends.
    const bodies: Array<[string, string, string?]> = [
      ['/collect/event', `{"site_id":"${ws.siteId}","event_name":"a\\u0000b","email":"${email}"}`],
      ['/collect/event', `{"site_id":"${ws.siteId}","event_name":"x","email":"${email}","properties":{"v":"a\\u0000"}}`],
      ['/collect/event', `{"site_id":"${ws.siteId}","event_name":"x","email":"${email}","properties":{"k\\u0000":1}}`],
      ['/collect/event', `{"site_id":"${ws.siteId}","event_name":"x","email":"${email}","properties":{"a":[{"b":["\\u0000"]}]}}`],
      ['/collect/event', `{"site_id":"${ws.siteId}","event_name":"x","anonymous_id":"anon\\u0000"}`],
      ['/collect/identify', `{"site_id":"${ws.siteId}","email":"nul\\u0000${email}"}`],
      ['/collect/identify', `{"site_id":"${ws.siteId}\\u0000","email":"${email}"}`],
      ['/collect/identify', `{"site_id":"${ws.siteId}","email":"${email}","properties":{"first_name":"\\u0000"}}`],
      ['/api/v1/events', `{"contact_id":"${contactId}","event_name":"x","properties":{"v":"\\u0000"}}`, ws.apiKey],
      ['/api/v1/events', `{"contact_id":"${contactId}","event_name":"x","source":"s\\u0000"}`, ws.apiKey],
      ['/api/v1/contacts', `{"email":"${email}","properties":{"v":"\\u0000"}}`, ws.apiKey],
    ];
    for (const [url, payload, key] of bodies) {
      expectError(await raw(url, payload, 'application/json', key), 400, /^invalid request/);
    }
    // The same through text/plain (sendBeacon).
    expectError(await raw(...(bodies[0]!.slice(0, 2) as [string, string]), 'text/plain'), 400, /^invalid request/);
    const patch = await h().request({
      method: 'PATCH',
      url: `/api/v1/contacts/${contactId}`,
      key: ws.apiKey,
      payload: '{"properties":{"v":"\\u0000"}}',
      headers: { 'content-type': 'application/json' },
    });
    expectError(patch, 400, /^invalid request/);
    expect(await countEvents(ws)).toBe(0);
    expect(await countContacts(ws)).toBe(1);
    const contact = (await h().request({ method: 'GET', url: `/api/v1/contacts/${contactId}`, key: ws.apiKey })).json();
    expect(contact.properties).toEqual({});
  });

  it('an unpaired UTF-16 surrogate in a JSON body is 400, while a proper pair is stored', async () => {
    const ws = await h().workspace();
    const email = uniqueEmail('sur');
    for (const escape of ['\\ud800', '\\udfff', '\\ud83dx']) {
      const payload = `{"site_id":"${ws.siteId}","event_name":"x","email":"${email}","properties":{"v":"${escape}"}}`;
      expectError(await raw('/collect/event', payload, 'application/json'), 400, /^invalid request/);
    }
    const pair = `{"site_id":"${ws.siteId}","event_name":"pair","email":"${email}","properties":{"v":"\\ud83d\\ude00"}}`;
    expect((await raw('/collect/event', pair, 'application/json')).statusCode).toBe(200);
    const events = (await h().request({ method: 'GET', url: '/api/v1/events', key: ws.apiKey })).json();
    expect(events.data).toHaveLength(1);
    expect(events.data[0].properties.v).toBe('😀');
  });

  it('a NUL in a query parameter is 400 naming it, never 500 (and the same on both databases)', async () => {
    const ws = await h().workspace();
    const cases: Array<[string, string]> = [
      ['/api/v1/events?event_name=a%00b', 'event_name'],
      ['/api/v1/events?contact_id=a%00b', 'contact_id'],
      ['/api/v1/contacts?email=a%00b%40example.com', 'email'],
    ];
    for (const [url, field] of cases) {
      const res = await h().request({ method: 'GET', url, key: ws.apiKey });
      expect(res.statusCode, `${url}: ${res.body}`).toBe(400);
      expectInvalid(res, field);
    }
  });

  it('a NUL in a path id is a 4xx JSON error, never 500', async () => {
    const ws = await h().workspace();
    for (const [method, url] of [
      ['GET', '/api/v1/contacts/a%00b'],
      ['PATCH', '/api/v1/contacts/a%00b'],
      ['DELETE', '/api/v1/api-keys/a%00b'],
    ] as const) {
      const res = await h().request({ method, url, key: ws.apiKey, ...(method === 'PATCH' ? { json: { properties: {} } } : {}) });
      expect([400, 404], `${method} ${url}: ${res.body}`).toContain(res.statusCode);
      expectError(res, res.statusCode);
    }
  });

  it('a malformed percent-encoding in the path is 400 with the error envelope and X-Request-Id', async () => {
    const ws = await h().workspace();
    for (const url of ['/api/v1/contacts/%E0%A4%A', '/api/v1/contacts/%ED%A0%80', '/collect/%zz']) {
      const res = await h().request({ method: 'GET', url, key: ws.apiKey, headers: { 'x-request-id': 'bad-url-1' } });
      expectError(res, 400, /^invalid request/);
      expect(res.headers['x-request-id']).toBe('bad-url-1');
    }
  });

  it('a path id longer than any real id is the contract 404 {"error":"not found"}, not a framework 414', async () => {
    const ws = await h().workspace();
    const long = 'x'.repeat(150);
    expectError(await h().request({ method: 'GET', url: `/api/v1/contacts/${long}`, key: ws.apiKey }), 404, 'not found');
    expectError(await h().request({ method: 'DELETE', url: `/api/v1/api-keys/${long}`, key: ws.apiKey }), 404, 'not found');
  });

  // ---------------------------------------------------------------- content types

  it('an unsupported content type is 415 JSON, not 500, on both APIs', async () => {
    const ws = await h().workspace();
    const json = JSON.stringify({ site_id: ws.siteId, email: uniqueEmail() });
    for (const contentType of ['application/xml', 'application/x-www-form-urlencoded', 'multipart/form-data; boundary=x', 'image/png']) {
      expectError(await raw('/collect/identify', json, contentType), 415);
      expectError(await raw('/collect/event', json, contentType), 415);
      expectError(await raw('/api/v1/contacts', JSON.stringify({ email: uniqueEmail() }), contentType, ws.apiKey), 415);
    }
    // A body with no content type at all.
    expectError(await raw('/collect/identify', json, undefined), 415);
    expect(await countContacts(ws)).toBe(0);
  });

  it('application/json with a charset or in other letter case is accepted', async () => {
    const ws = await h().workspace();
    for (const contentType of ['application/json; charset=utf-8', 'Application/JSON', 'text/plain;charset=UTF-8']) {
      const email = uniqueEmail('ct');
      const res = await raw('/collect/identify', JSON.stringify({ site_id: ws.siteId, email }), contentType);
      expect(res.statusCode, contentType).toBe(200);
      expect(res.json().email).toBe(email);
    }
    expect(await countContacts(ws)).toBe(3);
  });

  // ---------------------------------------------------------------- authentication

  it('a missing X-API-Key is 401 {"error":"missing api key"}; a wrong one is 401 {"error":"invalid api key"}', async () => {
    const ws = await h().workspace();
    const routes: Array<[string, string]> = [
      ['GET', '/api/v1/events'],
      ['POST', '/api/v1/events'],
      ['GET', '/api/v1/contacts'],
      ['POST', '/api/v1/contacts'],
      ['GET', '/api/v1/api-keys'],
    ];
    for (const [method, url] of routes) {
      const json = method === 'POST' ? { email: uniqueEmail() } : undefined;
      expectError(await h().request({ method: method as 'GET', url, ...(json ? { json } : {}) }), 401, 'missing api key');
      for (const key of ['emk_wrong', `${ws.apiKey}x`, ws.apiKey.slice(0, -1), ws.siteId, ws.integrationKey]) {
        expectError(await h().request({ method: method as 'GET', url, key, ...(json ? { json } : {}) }), 401, 'invalid api key');
      }
    }
    expect(await countContacts(ws)).toBe(0);
  });

  it('authentication comes before body parsing: no key and a broken body is still 401', async () => {
    expectError(await raw('/api/v1/events', '{', 'application/json'), 401, 'missing api key');
    expectError(await raw('/api/v1/events', '<a/>', 'application/xml', 'emk_wrong'), 401, 'invalid api key');
  });

  it('a revoked key stops working at once; the other keys of the workspace keep working', async () => {
    const ws = await h().workspace();
    const created = await post('/api/v1/api-keys', { name: 'second' }, ws.apiKey);
    expect(created.statusCode).toBe(201);
    const second = created.json();
    expect(second.key).toMatch(/^emk_/);
    expect(second.key).not.toBe(ws.apiKey);
    expect((await h().request({ method: 'GET', url: '/api/v1/contacts', key: second.key })).statusCode).toBe(200);

    const listed = (await h().request({ method: 'GET', url: '/api/v1/api-keys', key: ws.apiKey })).json();
    expect(listed.data).toHaveLength(2);
    expect(JSON.stringify(listed)).not.toContain(second.key);
    expect(JSON.stringify(listed)).not.toContain(ws.apiKey);

    const revoked = await h().request({ method: 'DELETE', url: `/api/v1/api-keys/${second.id}`, key: ws.apiKey });
    expect(revoked.statusCode).toBe(204);
    expectError(await h().request({ method: 'GET', url: '/api/v1/contacts', key: second.key }), 401, 'invalid api key');
    expectError(await post('/api/v1/contacts', { email: uniqueEmail() }, second.key), 401, 'invalid api key');
    expect((await h().request({ method: 'GET', url: '/api/v1/contacts', key: ws.apiKey })).statusCode).toBe(200);
    const after = (await h().request({ method: 'GET', url: '/api/v1/api-keys', key: ws.apiKey })).json();
    const entry = after.data.find((k: { id: string }) => k.id === second.id);
    expect(entry.revoked_at).not.toBeNull();
    expect(Date.parse(entry.revoked_at)).not.toBeNaN();
  });

  it('a key can revoke itself; the next request with it is 401', async () => {
    const ws = await h().workspace();
    const keys = (await h().request({ method: 'GET', url: '/api/v1/api-keys', key: ws.apiKey })).json();
    expect(keys.data).toHaveLength(1);
    const res = await h().request({ method: 'DELETE', url: `/api/v1/api-keys/${keys.data[0].id}`, key: ws.apiKey });
    expect(res.statusCode).toBe(204);
    expectError(await h().request({ method: 'GET', url: '/api/v1/events', key: ws.apiKey }), 401, 'invalid api key');
  });

  it('revoking an unknown key, or another workspace’s key, is 404 and the key keeps working', async () => {
    const mine = await h().workspace('mine');
    const theirs = await h().workspace('theirs');
    expectError(await h().request({ method: 'DELETE', url: '/api/v1/api-keys/no-such-key', key: mine.apiKey }), 404, 'not found');
    const theirKeys = (await h().request({ method: 'GET', url: '/api/v1/api-keys', key: theirs.apiKey })).json();
    const res = await h().request({ method: 'DELETE', url: `/api/v1/api-keys/${theirKeys.data[0].id}`, key: mine.apiKey });
    expectError(res, 404, 'not found');
    expect((await h().request({ method: 'GET', url: '/api/v1/events', key: theirs.apiKey })).statusCode).toBe(200);
  });

  // ---------------------------------------------------------------- unknown paths and ids

  it('an unknown path is 404 {"error":"not found"} with a JSON content type', async () => {
    const ws = await h().workspace();
    expectError(await h().request({ method: 'GET', url: '/nope' }), 404, 'not found');
    expectError(await h().request({ method: 'POST', url: '/nope', json: {} }), 404, 'not found');
    expectError(await h().request({ method: 'GET', url: '/api/v1/nope', key: ws.apiKey }), 404, 'not found');
    expectError(await h().request({ method: 'GET', url: '/api/v2/contacts', key: ws.apiKey }), 404, 'not found');
    expectError(await h().request({ method: 'GET', url: '/collect/nope' }), 404, 'not found');
    // A known path with a method it does not serve.
    expectError(await h().request({ method: 'GET', url: '/collect/event' }), 404, 'not found');
    expectError(await h().request({ method: 'PUT', url: '/collect/identify', json: {} }), 404, 'not found');
  });

  it('an unknown contact id is 404 {"error":"not found"}', async () => {
    const ws = await h().workspace();
    const unknown = '01900000-0000-7000-8000-000000000000';
    expectError(await h().request({ method: 'GET', url: `/api/v1/contacts/${unknown}`, key: ws.apiKey }), 404, 'not found');
    expectError(
      await h().request({ method: 'PATCH', url: `/api/v1/contacts/${unknown}`, key: ws.apiKey, json: { properties: { a: 1 } } }),
      404,
      'not found',
    );
    const event = await post('/api/v1/events', { contact_id: unknown, event_name: 'x' }, ws.apiKey);
    expectError(event, 404);
    expect(await countEvents(ws)).toBe(0);
  });

  it('an X-Request-Id with spaces and punctuation is echoed as sent; one over 200 characters is replaced', async () => {
    const sent = 'trace 42/abc; span=7';
    const res = await h().request({ method: 'GET', url: '/nowhere', headers: { 'x-request-id': sent } });
    expect(res.headers['x-request-id']).toBe(sent);
    expect(res.json().request_id).toBe(sent);
    const long = 'x'.repeat(201);
    const replaced = await h().request({ method: 'GET', url: '/nowhere', headers: { 'x-request-id': long } });
    expect(replaced.headers['x-request-id']).not.toBe(long);
    expect(replaced.json().request_id).toBe(replaced.headers['x-request-id']);
  });

  it('__proto__ keys in a body are dropped, never applied, and the rest is stored', async () => {
    const ws = await h().workspace();
    const res = await h().request({
      method: 'POST',
      url: '/collect/identify',
      headers: { 'content-type': 'application/json' },
      payload: `{"site_id":"${ws.siteId}","email":"proto@example.com","properties":{"__proto__":{"admin":true},"first_name":"P"}}`,
    });
    expect(res.statusCode).toBe(200);
    const contact = (
      await h().request({ method: 'GET', url: `/api/v1/contacts/${res.json().contact_id}`, key: ws.apiKey })
    ).json();
    expect(contact.properties).toEqual({ first_name: 'P' });
    expect(({} as { admin?: boolean }).admin).toBeUndefined();
  });
});
