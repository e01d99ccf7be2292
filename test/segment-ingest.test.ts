import { Analytics } from '@segment/analytics-node';
import type { AddressInfo } from 'node:net';
import { beforeAll, expect, it } from 'vitest';
import type { Contact } from '../src/domain/contacts/contact.schema.js';
import type { EventRecord } from '../src/domain/events/event.schema.js';
import { describeEachDatabase, type TestWorkspace } from './helpers/harness.js';

let counter = 0;
const unique = (tag: string) => `${tag}-${process.pid}-${++counter}`;
const uniqueEmail = (tag = 'seg') => `${unique(tag)}@example.com`;
const basic = (user: string) => `Basic ${Buffer.from(`${user}:`).toString('base64')}`;

describeEachDatabase('Segment-compatible ingest', (h) => {
  let port = 0;
  beforeAll(async () => {
    await h().app.listen({ port: 0, host: '127.0.0.1' });
    port = (h().app.server.address() as AddressInfo).port;
  });

  const send = (path: string, ws: TestWorkspace | null, json: unknown, headers: Record<string, string> = {}) =>
    h().request({ method: 'POST', url: path, json, headers: { ...(ws ? { authorization: basic(ws.siteId) } : {}), ...headers } });
  const contactByEmail = async (ws: TestWorkspace, email: string): Promise<Contact | undefined> => {
    const res = await h().request({ method: 'GET', url: `/api/v1/contacts?email=${encodeURIComponent(email)}`, key: ws.apiKey });
    expect(res.statusCode).toBe(200);
    return res.json().data[0];
  };
  const events = async (ws: TestWorkspace, query = ''): Promise<EventRecord[]> => {
    const res = await h().request({ method: 'GET', url: `/api/v1/events${query}`, key: ws.apiKey });
    expect(res.statusCode).toBe(200);
    return res.json().data;
  };
  const eventRows = (ws: TestWorkspace) => h().services.db.knex('events').where({ workspace_id: ws.id }).orderBy('id');

  // ------------------------------------------------------------------ the real client

  it('the real @segment/analytics-node client sends identify, track, page and alias to a running emk', async () => {
    const ws = await h().workspace();
    const email = uniqueEmail('client');
    const userId = unique('user');
    const anonymousId = unique('anon');
    const analytics = new Analytics({ writeKey: ws.siteId, host: `http://127.0.0.1:${port}`, flushInterval: 60_000, maxRetries: 0 });
    const errors: unknown[] = [];
    analytics.on('error', (error) => errors.push(error));

    analytics.track({ anonymousId, event: 'Product Viewed', properties: { product_id: 'p-1', price: 9.5 } });
    analytics.identify({ userId, anonymousId, traits: { email, firstName: 'Ann', plan: 'gold' } });
    analytics.track({ userId, event: 'Product Added', properties: { product_id: 'p-1' } });
    analytics.page({ userId, name: 'Home', properties: { url: 'https://shop.test/', title: 'Shop', referrer: 'https://search.test/' } });
    analytics.alias({ previousId: unique('old'), userId });
    await analytics.closeAndFlush({ timeout: 20_000 });
    expect(errors).toEqual([]);

    const contact = await contactByEmail(ws, email);
    expect(contact).toMatchObject({ email, source: 'segment', properties: { first_name: 'Ann', plan: 'gold', user_id: userId } });
    expect(contact!.anonymous_ids).toContain(anonymousId);
    const stored = await events(ws, `?contact_id=${contact!.id}`);
    expect(stored.map((e) => e.event_name).sort()).toEqual(['active_on_site', 'added_to_cart', 'viewed_product']);
    expect(stored.find((e) => e.event_name === 'active_on_site')!.properties).toMatchObject({
      url: 'https://shop.test/',
      title: 'Shop',
      referrer: 'https://search.test/',
      name: 'Home',
    });
    expect(stored.every((e) => e.source === 'segment')).toBe(true);
    // Stored events fire their flow triggers, as /collect/event's do.
    const triggers = await h().services.db.knex('trigger_outbox').where({ workspace_id: ws.id, contact_id: contact!.id, subject_type: 'event' });
    expect(triggers.map((t) => t.event_name).sort()).toEqual(['active_on_site', 'added_to_cart', 'viewed_product']);
  });

  // ------------------------------------------------------------------ the write key

  it('takes the write key as the HTTP Basic user or as writeKey in the body; a wrong or missing key is 401', async () => {
    const ws = await h().workspace();
    const track = { anonymousId: unique('anon'), event: 'custom_thing' };
    expect((await send('/v1/track', ws, track)).json()).toEqual({ success: true });
    expect((await send('/v1/track', null, { ...track, writeKey: ws.siteId })).json()).toEqual({ success: true });
    expect(await eventRows(ws)).toHaveLength(2);

    for (const res of [
      await send('/v1/track', null, { ...track, writeKey: 'nope' }),
      await send('/v1/track', null, track, { authorization: basic('nope') }),
      await send('/v1/track', null, track),
      await send('/v1/batch', null, { batch: [{ type: 'track', ...track }], writeKey: `x${ws.siteId}` }),
      // The key is checked before the body.
      await send('/v1/identify', null, { writeKey: 'nope', traits: 42 }),
    ]) {
      expect(res.statusCode).toBe(401);
      expect(res.json().error).toMatch(/write key/);
    }
    expect(await eventRows(ws)).toHaveLength(2);
  });

  it("answers analytics.js's one-letter paths (text/plain bodies, writeKey inside, CORS) and accepts screen and group", async () => {
    const ws = await h().workspace();
    const anonymousId = unique('anon');
    const post = (url: string, body: unknown) =>
      h().app.inject({ method: 'POST', url, payload: JSON.stringify(body), headers: { 'content-type': 'text/plain', origin: 'https://shop.test' } });
    const track = await post('/v1/t', { type: 'track', event: 'Product Viewed', anonymousId, writeKey: ws.siteId, properties: { product_id: 'p' } });
    expect(track.statusCode).toBe(200);
    expect(track.headers['access-control-allow-origin']).toBe('*');
    expect((await post('/v1/p', { type: 'page', anonymousId, writeKey: ws.siteId, properties: { url: 'https://shop.test/x' } })).statusCode).toBe(200);
    expect((await post('/v1/s', { type: 'screen', anonymousId, writeKey: ws.siteId })).statusCode).toBe(200);
    expect((await post('/v1/group', { userId: 'u', groupId: 'g', writeKey: ws.siteId })).statusCode).toBe(200);
    const email = uniqueEmail('ajs');
    const batch = await post('/v1/b', { writeKey: ws.siteId, batch: [{ type: 'identify', anonymousId, traits: { email } }] });
    expect(batch.statusCode).toBe(200);
    const contact = (await contactByEmail(ws, email))!;
    expect((await events(ws, `?contact_id=${contact.id}`)).map((e) => e.event_name).sort()).toEqual(['active_on_site', 'viewed_product']);
  });

  // ------------------------------------------------------------------ dedupe

  it('a retried message (same messageId) is stored once, also across batch and single calls and within a batch', async () => {
    const ws = await h().workspace();
    const message = { anonymousId: unique('anon'), event: 'Cart Viewed', messageId: unique('msg') };
    expect((await send('/v1/track', ws, message)).statusCode).toBe(200);
    expect((await send('/v1/track', ws, message)).statusCode).toBe(200);
    expect((await send('/v1/batch', ws, { batch: [{ type: 'track', ...message }] })).statusCode).toBe(200);
    const twice = { type: 'track', anonymousId: message.anonymousId, event: 'Cart Viewed', messageId: unique('msg') };
    expect((await send('/v1/import', ws, { batch: [twice, twice] })).statusCode).toBe(200);
    const rows = await eventRows(ws);
    expect(rows.map((r) => r.event_name)).toEqual(['cart_viewed', 'cart_viewed']);
    expect(await h().services.db.knex('segment_messages').where({ workspace_id: ws.id })).toHaveLength(2);

    // Ids are per workspace: another workspace's message with that id is its own.
    const other = await h().workspace('Other shop');
    expect((await send('/v1/track', other, message)).statusCode).toBe(200);
    expect(await eventRows(other)).toHaveLength(1);
  });

  // ------------------------------------------------------------------ userId, anonymousId

  it('after an identify, calls carrying only the userId reach that contact', async () => {
    const ws = await h().workspace();
    const email = uniqueEmail('uid');
    const userId = unique('user');
    expect((await send('/v1/identify', ws, { userId, traits: { email } })).statusCode).toBe(200);
    expect((await send('/v1/track', ws, { userId, event: 'Checkout Started', properties: { value: 10 } })).statusCode).toBe(200);
    expect((await send('/v1/identify', ws, { userId, traits: { lastName: 'Lee' } })).statusCode).toBe(200);
    const contact = (await contactByEmail(ws, email))!;
    expect(contact.properties).toEqual({ user_id: userId, last_name: 'Lee' });
    expect((await events(ws, `?contact_id=${contact.id}`)).map((e) => e.event_name)).toEqual(['started_checkout']);
    // The lookup is the indexed side table, not the contacts' JSON.
    expect(await h().services.db.knex('contact_user_ids').where({ workspace_id: ws.id })).toMatchObject([{ user_id: userId, contact_id: contact.id }]);
  });

  it('events of a userId seen before its identify wait for it, then attach', async () => {
    const ws = await h().workspace();
    const userId = unique('user');
    expect((await send('/v1/track', ws, { userId, event: 'early' })).statusCode).toBe(200);
    expect((await eventRows(ws))[0]).toMatchObject({ contact_id: null });
    expect((await send('/v1/identify', ws, { userId, traits: { email: uniqueEmail('late') } })).statusCode).toBe(200);
    const rows = await eventRows(ws);
    expect(rows[0]!.contact_id).not.toBeNull();
  });

  it('anonymousId behaves as the Collect API anonymous_id: earlier events attach on identify', async () => {
    const ws = await h().workspace();
    const anonymousId = unique('anon');
    expect((await send('/v1/page', ws, { anonymousId, context: { page: { url: 'https://shop.test/a', title: 'A', referrer: '' } } })).statusCode).toBe(200);
    expect((await send('/v1/track', ws, { anonymousId, event: 'Products Searched', properties: { query: 'socks' } })).statusCode).toBe(200);
    const before = await eventRows(ws);
    expect(before.map((r) => r.contact_id)).toEqual([null, null]);

    const email = uniqueEmail('anon');
    expect((await send('/v1/identify', ws, { anonymousId, traits: { email } })).statusCode).toBe(200);
    const contact = (await contactByEmail(ws, email))!;
    expect(contact.anonymous_ids).toEqual([anonymousId]);
    const after = await events(ws, `?contact_id=${contact.id}`);
    expect(after.map((e) => e.event_name).sort()).toEqual(['active_on_site', 'search_submitted']);
    expect(after.find((e) => e.event_name === 'active_on_site')!.properties).toEqual({ url: 'https://shop.test/a', title: 'A', referrer: '' });
    // Later anonymous calls of that visitor go to the contact at once.
    expect((await send('/v1/track', ws, { anonymousId, event: 'Product Clicked' })).statusCode).toBe(200);
    expect((await events(ws, `?contact_id=${contact.id}&event_name=product_clicked`))).toHaveLength(1);
  });

  it('alias links previousId to the contact of userId', async () => {
    const ws = await h().workspace();
    const userId = unique('user');
    const previousId = unique('prev');
    expect((await send('/v1/track', ws, { anonymousId: previousId, event: 'before_alias' })).statusCode).toBe(200);
    const email = uniqueEmail('alias');
    expect((await send('/v1/identify', ws, { userId, traits: { email } })).statusCode).toBe(200);
    expect((await send('/v1/alias', ws, { previousId, userId })).statusCode).toBe(200);
    const contact = (await contactByEmail(ws, email))!;
    expect(contact.anonymous_ids).toEqual([previousId]);
    expect((await events(ws, `?contact_id=${contact.id}`)).map((e) => e.event_name)).toEqual(['before_alias']);
    // A previous user id named by alias reaches the contact too.
    const newUserId = unique('user');
    expect((await send('/v1/alias', ws, { previousId: userId, userId: newUserId })).statusCode).toBe(200);
    expect((await send('/v1/track', ws, { userId: newUserId, event: 'after_alias' })).statusCode).toBe(200);
    expect((await events(ws, `?contact_id=${contact.id}&event_name=after_alias`))).toHaveLength(1);
  });

  it('a track whose context.traits.email is unseen creates the contact', async () => {
    const ws = await h().workspace();
    const email = uniqueEmail('ctx');
    const res = await send('/v1/track', ws, { anonymousId: unique('anon'), event: 'Product List Viewed', context: { traits: { email } } });
    expect(res.statusCode).toBe(200);
    const contact = (await contactByEmail(ws, email))!;
    expect(contact.source).toBe('segment');
    expect((await events(ws, `?contact_id=${contact.id}`)).map((e) => e.event_name)).toEqual(['collection_viewed']);
  });

  // ------------------------------------------------------------------ names and times

  it("Segment's e-commerce names are emk's standard events; other names are kept", async () => {
    const ws = await h().workspace();
    const anonymousId = unique('anon');
    const names = {
      'Product Viewed': 'viewed_product',
      'Product Added': 'added_to_cart',
      'Checkout Started': 'started_checkout',
      'Products Searched': 'search_submitted',
      'Product Clicked': 'product_clicked',
      'Cart Viewed': 'cart_viewed',
      'Product List Viewed': 'collection_viewed',
      'Order Shipped Somewhere': 'Order Shipped Somewhere',
      product_viewed: 'viewed_product',
    };
    const batch = Object.keys(names).map((event) => ({ type: 'track', anonymousId, event }));
    expect((await send('/v1/batch', ws, { batch })).statusCode).toBe(200);
    expect((await eventRows(ws)).map((r) => r.event_name).sort()).toEqual(Object.values(names).sort());
  });

  it('timestamp sets created_at', async () => {
    const ws = await h().workspace();
    const timestamp = '2026-03-04T05:06:07.089Z';
    expect((await send('/v1/track', ws, { anonymousId: unique('anon'), event: 'then', timestamp })).statusCode).toBe(200);
    expect((await events(ws))[0]!.created_at).toBe(timestamp);
  });

  // ------------------------------------------------------------------ limits and refusals

  it('a message over 32 KB is 413; a batch over 500 KB is 413; a message over 32 KB inside a batch is 400 naming it', async () => {
    const ws = await h().workspace();
    const big = 'x'.repeat(33 * 1024);
    const single = await send('/v1/track', ws, { anonymousId: unique('anon'), event: 'big', properties: { big } });
    expect(single.statusCode).toBe(413);
    const small = { type: 'track', anonymousId: unique('anon'), event: 'fits', properties: { pad: 'y'.repeat(20 * 1024) } };
    const huge = await send('/v1/batch', ws, { batch: Array.from({ length: 26 }, () => small) });
    expect(huge.statusCode).toBe(413);
    const inBatch = await send('/v1/batch', ws, { batch: [small, { ...small, properties: { big } }] });
    expect(inBatch.statusCode).toBe(400);
    expect(inBatch.json().error).toBe('invalid request: batch[1] must be at most 32 KB');
    // Just under the limits passes.
    expect((await send('/v1/batch', ws, { batch: Array.from({ length: 23 }, () => small) })).statusCode).toBe(200);
    expect(await eventRows(ws)).toHaveLength(23);
  });

  it('a batch with one bad message is 400 naming batch[i], and nothing of it is stored', async () => {
    const ws = await h().workspace();
    const email = uniqueEmail('allornothing');
    const good = [
      { type: 'identify', userId: unique('user'), traits: { email } },
      { type: 'track', anonymousId: unique('anon'), event: 'fine', messageId: unique('msg') },
    ];
    const cases: Array<[unknown, string]> = [
      [{ type: 'track', anonymousId: 'a' }, 'invalid request: batch[2].event is required'],
      [{ type: 'track', event: 'no ids' }, 'invalid request: batch[2].userId or anonymousId is required'],
      [{ type: 'teleport', anonymousId: 'a' }, 'invalid request: batch[2].type must be one of identify, track, page, alias, screen, group'],
      [{ type: 'identify', userId: 'u', traits: { email: 'not-an-email' } }, 'invalid request: batch[2].traits.email must be an email address'],
      [{ type: 'track', anonymousId: 'a', event: 'x', timestamp: 'yesterday' }, 'invalid request: batch[2].timestamp must be an RFC 3339 time or YYYY-MM-DD HH:MM:SS'],
      [{ type: 'alias', userId: 'u' }, 'invalid request: batch[2].previousId is required'],
      ['text', 'invalid request: batch[2] must be an object'],
    ];
    for (const [bad, error] of cases) {
      const res = await send('/v1/batch', ws, { batch: [...good, bad] });
      expect(res.statusCode).toBe(400);
      expect(res.json().error).toBe(error);
    }
    expect(await eventRows(ws)).toEqual([]);
    expect(await contactByEmail(ws, email)).toBeUndefined();
    // The same messages without the bad one are stored, the retried messageId included (it was never taken).
    expect((await send('/v1/batch', ws, { batch: good })).statusCode).toBe(200);
    expect(await eventRows(ws)).toHaveLength(1);
    expect(await contactByEmail(ws, email)).toBeDefined();
    // screen and group are accepted and not stored.
    expect((await send('/v1/batch', ws, { batch: [{ type: 'screen', anonymousId: 'a' }, { type: 'group', userId: 'u', groupId: 'g' }] })).statusCode).toBe(200);
    expect(await eventRows(ws)).toHaveLength(1);
  });

  it('single calls refuse bad input naming the field', async () => {
    const ws = await h().workspace();
    const res = await send('/v1/track', ws, { anonymousId: 'a', event: '' });
    expect(res.statusCode).toBe(400);
    expect(res.json().error).toBe('invalid request: event must not be empty');
    expect((await send('/v1/page', ws, { properties: {} })).json().error).toBe('invalid request: userId or anonymousId is required');
    expect((await send('/v1/batch', ws, { batch: {} })).json().error).toBe('invalid request: batch must be an array');
  });
});

describeEachDatabase(
  'Segment-compatible ingest: rate limits',
  (h) => {
    it('spends the Collect budgets per IP and per site id (the write key)', async () => {
      const ws = await h().workspace();
      const send = () =>
        h().request({ method: 'POST', url: '/v1/track', json: { anonymousId: 'a', event: 'e' }, headers: { authorization: basic(ws.siteId) } });
      expect((await send()).statusCode).toBe(200);
      const second = await send();
      expect(second.statusCode).toBe(200);
      expect(second.headers['ratelimit-remaining']).toBe('0');
      const third = await send();
      expect(third.statusCode).toBe(429);
      expect(third.json().error).toBe('rate limit exceeded');
    });
  },
  { EMK_LIMIT_COLLECT_PER_IP_SITE: '2', EMK_LIMIT_COLLECT_PER_IP: '100', EMK_LIMIT_COLLECT_PER_SITE: '100' },
);
