import { expect, it } from 'vitest';
import { parseConditions } from '../src/domain/segments/segment.schema.js';
import { REFRESH_INTERVAL_MS, SEGMENT_JOBS } from '../src/domain/segments/segment-service.js';
import { describeEachDatabase, type TestWorkspace } from './helpers/harness.js';
import { sendingHelpers } from './helpers/sending.js';

const DAY = 86_400_000;

/** Segments (docs/segments.md): conditions, membership at save, live re-evaluation, the hourly refresh, campaigns. */
describeEachDatabase('segments', (h) => {
  const { api, contact, campaign, work, messagesOf } = sendingHelpers(h);
  const knex = () => h().services.db.knex;

  const segment = async (ws: TestWorkspace, conditions: unknown, name = 'Segment') => {
    const reply = await api(ws, 'POST', '/segments', { name, conditions });
    if (reply.statusCode !== 201) throw new Error(reply.body);
    return reply.json() as { id: string; member_count: number; conditions: unknown };
  };
  const members = async (ws: TestWorkspace, id: string) => {
    const reply = await api(ws, 'GET', `/segments/${id}/members?perPage=500`);
    if (reply.statusCode !== 200) throw new Error(reply.body);
    return reply.json().data as Array<{ contact_id: string; email: string; entered_at: string }>;
  };
  const emailsIn = async (ws: TestWorkspace, id: string) => (await members(ws, id)).map((m) => m.email).sort();
  /** What the worker does with trigger facts: every pending one consumed. */
  const drain = () => h().services.dispatcher.drain();
  const event = async (ws: TestWorkspace, contactId: string, name: string, properties: Record<string, unknown> = {}) => {
    const reply = await api(ws, 'POST', '/events', { contact_id: contactId, event_name: name, properties });
    if (reply.statusCode !== 201) throw new Error(reply.body);
  };
  const order = async (ws: TestWorkspace, contactId: string, total: number, orderedAt = new Date().toISOString()) => {
    const reply = await api(ws, 'POST', '/ecommerce/orders', {
      contact_id: contactId,
      platform: 'pos',
      order_number: `N-${Math.random()}`,
      total_amount: total,
      currency: 'USD',
      status: 'paid',
      ordered_at: orderedAt,
    });
    if (reply.statusCode !== 201) throw new Error(reply.body);
    return reply.json().id as string;
  };
  const deliver = (ws: TestWorkspace, body: unknown) =>
    h().request({
      method: 'POST',
      url: `/ecom/website/${ws.integrationId}`,
      headers: { authorization: `Bearer ${ws.integrationKey}`, 'content-type': 'application/json' },
      payload: JSON.stringify(body),
    });
  const enteredFacts = (ws: TestWorkspace, segmentId: string) =>
    knex()('trigger_outbox').where({ workspace_id: ws.id, trigger_type: 'segment_entered', subject_id: segmentId }).orderBy('id');

  // ------------------------------------------------------------------ validation

  it('a condition the service cannot use is a 400 naming its path; nothing is stored', async () => {
    const ws = await h().workspace();
    const leaf = { property: 'plan', operator: 'equals', value: 'gold' };
    const bad: Array<[unknown, string]> = [
      [{ all: [leaf, leaf, { property: 'plan', operator: 'starts_with', value: 'g' }] }, 'conditions.all[2].operator must be one of equals, not_equals, contains, exists, not_exists, gt, lt'],
      [{ all: [{ shoe_size: 42 }] }, 'conditions.all[0] must be a condition: all, any, property, event, orders or subscription_status'],
      [{ any: [{ property: 'age', operator: 'gt', value: 'ten' }] }, 'conditions.any[0].value must be a number with gt'],
      [{ any: [{ property: 'tags', operator: 'contains', value: 3 }] }, 'conditions.any[0].value must be a string with contains'],
      [{ any: [{ property: 'plan', operator: 'equals' }] }, 'conditions.any[0].value is required with equals'],
      [{ any: [{ property: 'plan', operator: 'exists', value: 1 }] }, 'conditions.any[0].value must not be given with exists'],
      [{ any: [{ property: 'plan', operator: 'equals', value: { a: 1 } }] }, 'conditions.any[0].value'],
      [{ any: [{ property: 'email', operator: 'gt', value: 'a' }] }, 'conditions.any[0].operator must be one of equals, not_equals, contains, exists, not_exists for email'],
      [{ any: [{ property: 'created_at', operator: 'gt', value: 'yesterday' }] }, 'conditions.any[0].value must be an RFC 3339 time for created_at'],
      [{ any: [{ property: 'subscription_status', operator: 'equals', value: 'maybe' }] }, 'conditions.any[0].value must be one of subscribed, unsubscribed, non_subscribed'],
      [{ all: [{ event: 'viewed_product', count: { gte: -1 } }] }, 'conditions.all[0].count.gte must not be negative'],
      [{ all: [{ event: 'viewed_product', count: { gte: 3, lte: 1 } }] }, 'conditions.all[0].count must have gte at most lte'],
      [{ all: [{ event: 'viewed_product', count: {} }] }, 'conditions.all[0].count must have gte or lte'],
      [{ all: [{ event: 'viewed_product', within_days: 0 }] }, 'conditions.all[0].within_days must be at least 1'],
      [{ all: [{ event: 'viewed_product', count: { gte: 1 }, colour: 'red' }] }, 'conditions.all[0] has unknown keys: colour'],
      [{ all: [{ orders: {} }] }, 'conditions.all[0].orders must have count or revenue'],
      [{ all: [{ orders: { revenue: { gte: 'lots' } } }] }, 'conditions.all[0].orders.revenue.gte must be a number'],
      [{ all: [{ subscription_status: 'gone' }] }, 'conditions.all[0].subscription_status must be one of subscribed, unsubscribed, non_subscribed'],
      [{ all: [] }, 'conditions.all must not be empty'],
      [{ all: leaf }, 'conditions.all must be an array'],
      [{ all: [leaf], any: [leaf] }, 'conditions must have only the key all'],
      [{ property: 'plan', operator: 'exists' }, 'conditions must be an object with all or any'],
      [{ all: [{ any: [{ all: [{ any: [{ all: [{ any: [leaf] }] }] }] }] }] }, 'conditions.all[0].any[0].all[0].any[0].all[0] nests groups more than 5 deep'],
      [{ all: Array.from({ length: 51 }, () => leaf) }, 'conditions.all[50] is past the limit of 50 conditions'],
    ];
    for (const [conditions, message] of bad) {
      const reply = await api(ws, 'POST', '/segments', { name: 'Bad', conditions });
      expect(reply.statusCode, JSON.stringify(conditions)).toBe(400);
      expect(reply.json().error, JSON.stringify(conditions)).toContain(`invalid request: ${message}`);
    }
    expect((await api(ws, 'POST', '/segments', { conditions: { all: [leaf] } })).json().error).toMatch(/name is required/);
    expect((await api(ws, 'POST', '/segments', { name: 'No conditions' })).json().error).toMatch(/conditions is required/);
    expect((await api(ws, 'POST', '/segments', { name: 'Array', conditions: [leaf] })).statusCode).toBe(400);
    expect((await api(ws, 'GET', '/segments')).json().meta.total).toBe(0);
    // The flows code parses its `filters` with the same function, named by its own field.
    expect(() => parseConditions({ all: [{ property: 'x', operator: 'is' }] }, 'filters')).toThrow(/^invalid request: filters\.all\[0\]\.operator must be one of/);
  });

  it('event names come out canonical (aliases normalised); a missing count means "at least once"', () => {
    expect(parseConditions({ any: [{ event: 'product_viewed' }, { event: ' Loyalty Joined ', count: { lte: 2 }, within_days: 30 }] }, 'conditions')).toEqual({
      any: [
        { event: 'viewed_product', count: { gte: 1 } },
        { event: 'Loyalty Joined', count: { lte: 2 }, within_days: 30 },
      ],
    });
  });

  // ------------------------------------------------------------------ leaves

  it('property leaves: every operator, typed (the text "30" is not the number 30), absent and null keys', async () => {
    const ws = await h().workspace();
    await contact(ws, 'subscribed', { plan: 'Gold', age: 30, vip: true, tags: ['shoes', 'hats'], note: 'Likes 100%_cotton', 'a.b': 'dotted' }, 'ann@example.com');
    await contact(ws, 'subscribed', { plan: 'silver', age: '30', vip: false, tags: 'shoes', nothing: null }, 'bob@example.com');
    await contact(ws, 'subscribed', { age: 17.5 }, 'cy@example.com');
    const cases: Array<[Record<string, unknown>, string[]]> = [
      [{ property: 'plan', operator: 'equals', value: 'Gold' }, ['ann']],
      [{ property: 'plan', operator: 'equals', value: 'gold' }, []],
      [{ property: 'plan', operator: 'not_equals', value: 'Gold' }, ['bob', 'cy']],
      [{ property: 'age', operator: 'equals', value: 30 }, ['ann']],
      [{ property: 'age', operator: 'equals', value: '30' }, ['bob']],
      [{ property: 'vip', operator: 'equals', value: true }, ['ann']],
      [{ property: 'vip', operator: 'equals', value: false }, ['bob']],
      [{ property: 'vip', operator: 'not_equals', value: true }, ['bob', 'cy']],
      [{ property: 'plan', operator: 'contains', value: 'OL' }, ['ann']],
      [{ property: 'note', operator: 'contains', value: '100%_c' }, ['ann']],
      [{ property: 'note', operator: 'contains', value: '100%x' }, []],
      [{ property: 'tags', operator: 'contains', value: 'shoes' }, ['ann', 'bob']],
      [{ property: 'tags', operator: 'contains', value: 'sho' }, ['bob']],
      [{ property: 'plan', operator: 'exists' }, ['ann', 'bob']],
      [{ property: 'nothing', operator: 'exists' }, []],
      [{ property: 'nothing', operator: 'not_exists' }, ['ann', 'bob', 'cy']],
      [{ property: 'plan', operator: 'not_exists' }, ['cy']],
      [{ property: 'age', operator: 'gt', value: 17.5 }, ['ann']],
      [{ property: 'age', operator: 'gt', value: 17 }, ['ann', 'cy']],
      [{ property: 'age', operator: 'lt', value: 30 }, ['cy']],
      [{ property: 'a.b', operator: 'equals', value: 'dotted' }, ['ann']],
      [{ property: "o'brien", operator: 'exists' }, []],
    ];
    for (const [leaf, expected] of cases) {
      const { id, member_count } = await segment(ws, { all: [leaf] });
      expect(await emailsIn(ws, id), JSON.stringify(leaf)).toEqual(expected.map((name) => `${name}@example.com`));
      expect(member_count).toBe(expected.length);
    }
  });

  it('contact fields: email (any case), source, subscription_status (as a property and as a leaf), created_at as an instant', async () => {
    const ws = await h().workspace();
    const before = new Date(Date.now() - 1000).toISOString();
    await contact(ws, 'subscribed', {}, 'Ann@Example.com');
    await contact(ws, 'unsubscribed', {}, 'bob@shop.test');
    await api(ws, 'POST', '/contacts', { email: 'cy@example.com', source: 'pos' });
    const after = new Date(Date.now() + 60_000).toISOString();
    const cases: Array<[Record<string, unknown>, string[]]> = [
      [{ property: 'email', operator: 'equals', value: 'ANN@example.COM' }, ['Ann@Example.com']],
      [{ property: 'email', operator: 'not_equals', value: 'ann@example.com' }, ['bob@shop.test', 'cy@example.com']],
      [{ property: 'email', operator: 'contains', value: 'EXAMPLE' }, ['Ann@Example.com', 'cy@example.com']],
      [{ property: 'source', operator: 'equals', value: 'pos' }, ['cy@example.com']],
      [{ property: 'source', operator: 'not_equals', value: 'pos' }, ['Ann@Example.com', 'bob@shop.test']],
      [{ property: 'source', operator: 'exists' }, ['Ann@Example.com', 'bob@shop.test', 'cy@example.com']],
      [{ property: 'subscription_status', operator: 'equals', value: 'unsubscribed' }, ['bob@shop.test']],
      [{ subscription_status: 'subscribed' }, ['Ann@Example.com']],
      [{ subscription_status: 'non_subscribed' }, ['cy@example.com']],
      [{ property: 'created_at', operator: 'gt', value: before }, ['Ann@Example.com', 'bob@shop.test', 'cy@example.com']],
      [{ property: 'created_at', operator: 'lt', value: before }, []],
      [{ property: 'created_at', operator: 'lt', value: after.replace('Z', '+00:00') }, ['Ann@Example.com', 'bob@shop.test', 'cy@example.com']],
    ];
    for (const [leaf, expected] of cases) {
      const { id } = await segment(ws, { any: [leaf] });
      expect(await emailsIn(ws, id), JSON.stringify(leaf)).toEqual(expected);
    }
  });

  it('event leaves count events by canonical name (an alias counts as its name), in bounds and within days', async () => {
    const ws = await h().workspace();
    const ann = await contact(ws, 'subscribed', {}, 'ann@example.com');
    const bob = await contact(ws, 'subscribed', {}, 'bob@example.com');
    await contact(ws, 'subscribed', {}, 'cy@example.com');
    await event(ws, ann, 'viewed_product');
    await event(ws, ann, 'product_viewed');
    await event(ws, ann, 'viewed_product');
    await event(ws, bob, 'product_viewed');
    await event(ws, bob, 'Loyalty Joined');
    // An event three days old, for the windows.
    await knex()('events').where({ contact_id: bob, event_name: 'Loyalty Joined' }).update({ created_at: Date.now() - 3 * DAY });
    const cases: Array<[Record<string, unknown>, string[]]> = [
      [{ event: 'viewed_product' }, ['ann', 'bob']],
      [{ event: 'product_viewed', count: { gte: 3 } }, ['ann']],
      [{ event: 'viewed_product', count: { gte: 1, lte: 2 } }, ['bob']],
      [{ event: 'viewed_product', count: { lte: 0 } }, ['cy']],
      [{ event: 'viewed_product', count: { gte: 0, lte: 1 } }, ['bob', 'cy']],
      [{ event: 'Loyalty Joined', within_days: 2 }, []],
      [{ event: 'Loyalty Joined', within_days: 4 }, ['bob']],
      [{ event: 'Loyalty Joined', count: { lte: 0 }, within_days: 2 }, ['ann', 'bob', 'cy']],
      [{ event: 'loyalty joined' }, []],
    ];
    for (const [leaf, expected] of cases) {
      const { id } = await segment(ws, { all: [leaf] });
      expect(await emailsIn(ws, id), JSON.stringify(leaf)).toEqual(expected.map((name) => `${name}@example.com`));
    }
  });

  it('orders leaves: count and net revenue (refunds subtracted, cancelled orders count for nothing), within days by ordered_at', async () => {
    const ws = await h().workspace();
    await deliver(ws, { event_type: 'order_placed', email: 'ann@example.com', order: { external_id: 'a1', total_amount: 100, currency: 'EUR' } });
    await deliver(ws, { event_type: 'order_placed', email: 'ann@example.com', order: { external_id: 'a2', total_amount: 60, currency: 'EUR' } });
    await deliver(ws, { event_type: 'refunded_order', email: 'ann@example.com', order: { external_id: 'a1', refund_amount: 30 } });
    await deliver(ws, { event_type: 'order_placed', email: 'bob@example.com', order: { external_id: 'b1', total_amount: 500, currency: 'EUR' } });
    await deliver(ws, { event_type: 'cancelled_order', email: 'bob@example.com', order: { external_id: 'b1', status: 'cancelled' } });
    const cy = await contact(ws, 'subscribed', {}, 'cy@example.com');
    await order(ws, cy, 40, new Date(Date.now() - 10 * DAY).toISOString());
    const cases: Array<[Record<string, unknown>, string[]]> = [
      [{ orders: { count: { gte: 2 } } }, ['ann']],
      [{ orders: { count: { gte: 1 } } }, ['ann', 'cy']],
      [{ orders: { count: { lte: 0 } } }, ['bob']],
      [{ orders: { revenue: { gte: 130 } } }, ['ann']],
      [{ orders: { revenue: { gte: 130.0001 } } }, []],
      [{ orders: { revenue: { lte: 40 } } }, ['bob', 'cy']],
      [{ orders: { count: { gte: 1 }, revenue: { lte: 100 } } }, ['cy']],
      [{ orders: { count: { gte: 1 } }, within_days: 7 }, ['ann']],
      [{ orders: { revenue: { gte: 40 } }, within_days: 11 }, ['ann', 'cy']],
    ];
    for (const [leaf, expected] of cases) {
      const { id } = await segment(ws, { all: [leaf] });
      expect(await emailsIn(ws, id), JSON.stringify(leaf)).toEqual(expected.map((name) => `${name}@example.com`));
    }
  });

  it('groups nest: all of (any of …) and none-style leaves', async () => {
    const ws = await h().workspace();
    const ann = await contact(ws, 'subscribed', { plan: 'gold' }, 'ann@example.com');
    await contact(ws, 'subscribed', { plan: 'silver' }, 'bob@example.com');
    await contact(ws, 'unsubscribed', { plan: 'gold' }, 'cy@example.com');
    await event(ws, ann, 'started_checkout');
    const { id } = await segment(ws, {
      all: [
        { subscription_status: 'subscribed' },
        { any: [{ property: 'plan', operator: 'equals', value: 'silver' }, { all: [{ property: 'plan', operator: 'equals', value: 'gold' }, { event: 'checkout_started' }] }] },
      ],
    });
    expect(await emailsIn(ws, id)).toEqual(['ann@example.com', 'bob@example.com']);
  });

  // ------------------------------------------------------------------ the API

  it('saving computes the members at once; records carry member_count; members page like every list; PATCH and DELETE', async () => {
    const ws = await h().workspace();
    const ids = [];
    for (const name of ['ann', 'bob', 'cy']) ids.push(await contact(ws, 'subscribed', { plan: 'gold' }, `${name}@example.com`));
    await contact(ws, 'subscribed', { plan: 'silver' }, 'dee@example.com');
    const created = await segment(ws, { all: [{ property: 'plan', operator: 'equals', value: 'gold' }] }, 'Gold');
    expect(created).toMatchObject({ name: 'Gold', member_count: 3, conditions: { all: [{ property: 'plan', operator: 'equals', value: 'gold' }] } });

    const first = (await api(ws, 'GET', `/segments/${created.id}/members?perPage=2`)).json();
    expect(first.meta).toEqual({ page: 1, perPage: 2, total: 3 });
    expect(Object.keys(first.data[0]).sort()).toEqual(['contact_id', 'email', 'entered_at']);
    const second = (await api(ws, 'GET', `/segments/${created.id}/members?perPage=2&page=2`)).json();
    expect([...first.data, ...second.data].map((m: { contact_id: string }) => m.contact_id).sort()).toEqual([...ids].sort());

    // A rename leaves the members (and when they entered) alone.
    const before = await members(ws, created.id);
    const renamed = (await api(ws, 'PATCH', `/segments/${created.id}`, { name: 'Gold members' })).json();
    expect(renamed).toMatchObject({ name: 'Gold members', member_count: 3 });
    expect(await members(ws, created.id)).toEqual(before);
    // New conditions recompute everyone before the reply: stayers keep their row, leavers go, newcomers enter.
    const patched = await api(ws, 'PATCH', `/segments/${created.id}`, {
      conditions: { any: [{ property: 'email', operator: 'equals', value: 'ann@example.com' }, { property: 'plan', operator: 'equals', value: 'silver' }] },
    });
    expect(patched.statusCode, patched.body).toBe(200);
    expect(patched.json().member_count).toBe(2);
    const after = await members(ws, created.id);
    expect(after.map((m) => m.email).sort()).toEqual(['ann@example.com', 'dee@example.com']);
    expect(after.find((m) => m.email === 'ann@example.com')).toEqual(before.find((m) => m.email === 'ann@example.com'));
    expect((await enteredFacts(ws, created.id)).map((f) => f.contact_id)).toEqual([after.find((m) => m.email === 'dee@example.com')!.contact_id]);
    // A bad PATCH changes nothing.
    expect((await api(ws, 'PATCH', `/segments/${created.id}`, { name: 'X', conditions: { all: [{ orders: {} }] } })).statusCode).toBe(400);
    expect((await api(ws, 'GET', `/segments/${created.id}`)).json()).toMatchObject({ name: 'Gold members', member_count: 2 });

    const list = (await api(ws, 'GET', '/segments')).json();
    expect(list.meta).toEqual({ page: 1, perPage: 50, total: 1 });
    expect(list.data[0]).toMatchObject({ id: created.id, member_count: 2 });
    const other = await h().workspace();
    expect((await api(other, 'GET', `/segments/${created.id}`)).statusCode).toBe(404);
    expect((await api(other, 'GET', `/segments/${created.id}/members`)).statusCode).toBe(404);
    expect((await api(other, 'DELETE', `/segments/${created.id}`)).statusCode).toBe(404);
    expect((await api(ws, 'DELETE', `/segments/${created.id}`)).statusCode).toBe(204);
    expect((await api(ws, 'GET', `/segments/${created.id}`)).statusCode).toBe(404);
    expect(await knex()('segment_members').where({ segment_id: created.id })).toEqual([]);
  });

  it('matching() and exists() answer the flows code: which of these contacts meet conditions now', async () => {
    const ws = await h().workspace();
    const ann = await contact(ws, 'subscribed', { plan: 'gold' });
    const bob = await contact(ws, 'subscribed', { plan: 'silver' });
    const { segments } = h().services;
    const conditions = parseConditions({ all: [{ property: 'plan', operator: 'equals', value: 'gold' }] }, 'filters');
    expect(await segments.matching(knex(), ws.id, conditions, [ann, bob, 'no-such-contact'])).toEqual(new Set([ann]));
    expect(await segments.matching(knex(), (await h().workspace()).id, conditions, [ann])).toEqual(new Set());
    const { id } = await segment(ws, conditions);
    expect(await segments.exists(knex(), ws.id, id)).toBe(true);
    expect(await segments.exists(knex(), (await h().workspace()).id, id)).toBe(false);
  });

  // ------------------------------------------------------------------ live re-evaluation

  it('an event re-evaluates the segments counting that event for that contact: entering records segment_entered, staying keeps entered_at, leaving drops the row', async () => {
    const ws = await h().workspace();
    const ann = await contact(ws, 'subscribed', { plan: 'gold' }, 'ann@example.com');
    await contact(ws, 'subscribed', {}, 'bob@example.com');
    const viewers = await segment(ws, { all: [{ event: 'viewed_product', count: { gte: 2 } }] });
    const light = await segment(ws, { all: [{ event: 'viewed_product', count: { lte: 2 } }] });
    const gold = await segment(ws, { all: [{ property: 'plan', operator: 'equals', value: 'gold' }] });
    expect(await emailsIn(ws, light.id)).toEqual(['ann@example.com', 'bob@example.com']);

    await event(ws, ann, 'viewed_product');
    await drain();
    expect(await emailsIn(ws, viewers.id)).toEqual([]);
    await event(ws, ann, 'product_viewed');
    await drain();
    const [entered] = await members(ws, viewers.id);
    expect(entered).toMatchObject({ contact_id: ann, email: 'ann@example.com' });
    const facts = await enteredFacts(ws, viewers.id);
    expect(facts).toHaveLength(1);
    expect(facts[0]).toMatchObject({ contact_id: ann, subject_type: 'segment', subject_id: viewers.id, event_name: null });

    h().clock.advance(5_000);
    await event(ws, ann, 'viewed_product');
    await drain();
    // Still a member: the same row, the same entered_at, no second segment_entered.
    expect(await members(ws, viewers.id)).toEqual([entered]);
    expect(await enteredFacts(ws, viewers.id)).toHaveLength(1);
    // Three views: ann left the "at most two" segment; bob, untouched, stays.
    expect(await emailsIn(ws, light.id)).toEqual(['bob@example.com']);
    expect(await emailsIn(ws, gold.id)).toEqual(['ann@example.com']);
  });

  it('only the segments a change can affect are re-evaluated (others are not touched), and only for the contacts changed', async () => {
    const ws = await h().workspace();
    const ann = await contact(ws, 'subscribed', { plan: 'gold' }, 'ann@example.com');
    const bob = await contact(ws, 'subscribed', { plan: 'gold' }, 'bob@example.com');
    const viewers = await segment(ws, { all: [{ event: 'viewed_product' }] });
    const gold = await segment(ws, { all: [{ property: 'plan', operator: 'equals', value: 'gold' }] });
    const buyers = await segment(ws, { all: [{ orders: { count: { lte: 0 } } }] });
    await drain(); // the contacts' own creation facts
    // Rows taken out by hand: a segment that is re-evaluated for a contact puts its row back.
    await knex()('segment_members').whereIn('segment_id', [gold.id, buyers.id]).delete();

    await event(ws, ann, 'viewed_product');
    await event(ws, bob, 'Loyalty Joined');
    await drain();
    // Barrier: the view was consumed (ann entered the viewers) …
    expect(await emailsIn(ws, viewers.id)).toEqual(['ann@example.com']);
    // … and it touched neither the property segment nor the orders segment.
    expect(await emailsIn(ws, gold.id)).toEqual([]);
    expect(await emailsIn(ws, buyers.id)).toEqual([]);

    // A property change re-evaluates property segments for that contact only (bob stays out).
    await api(ws, 'PATCH', `/contacts/${ann}`, { properties: { size: 'M' } });
    await drain();
    expect(await emailsIn(ws, gold.id)).toEqual(['ann@example.com']);
    expect(await emailsIn(ws, buyers.id)).toEqual([]);
    // An order change re-evaluates order segments (ann has an order now: still out; bob untouched).
    await order(ws, ann, 10);
    await api(ws, 'PATCH', `/contacts/${bob}`, { subscription_status: 'subscribed' }); // no change: no fact
    await drain();
    expect(await emailsIn(ws, buyers.id)).toEqual([]);
    expect(await emailsIn(ws, gold.id)).toEqual(['ann@example.com']);
  });

  it('orders re-evaluate order segments: webhook order_placed, POST /ecommerce/orders, a refund and a cancellation', async () => {
    const ws = await h().workspace();
    const buyers = await segment(ws, { all: [{ orders: { count: { gte: 1 } } }] });
    const big = await segment(ws, { all: [{ orders: { revenue: { gte: 100 } } }] });
    await deliver(ws, { event_type: 'order_placed', email: 'ann@example.com', order: { external_id: 'o1', total_amount: 120, currency: 'EUR' } });
    await drain();
    expect(await emailsIn(ws, buyers.id)).toEqual(['ann@example.com']);
    expect(await emailsIn(ws, big.id)).toEqual(['ann@example.com']);

    await deliver(ws, { event_type: 'refunded_order', email: 'ann@example.com', order: { external_id: 'o1', refund_amount: 30 } });
    await drain();
    expect(await emailsIn(ws, big.id)).toEqual([]);
    expect(await emailsIn(ws, buyers.id)).toEqual(['ann@example.com']);
    await deliver(ws, { event_type: 'cancelled_order', email: 'ann@example.com', order: { external_id: 'o1', status: 'cancelled' } });
    await drain();
    expect(await emailsIn(ws, buyers.id)).toEqual([]);

    const bob = await contact(ws, 'subscribed', {}, 'bob@example.com');
    await order(ws, bob, 250);
    await drain();
    expect(await emailsIn(ws, buyers.id)).toEqual(['bob@example.com']);
    expect(await emailsIn(ws, big.id)).toEqual(['bob@example.com']);
    // Each entry was recorded for the flows engine.
    expect((await enteredFacts(ws, big.id)).map((f) => f.contact_id)).toHaveLength(2);
  });

  it('contact changes re-evaluate property and status segments: PATCH /contacts properties and status, a new contact, an unsubscribe', async () => {
    const ws = await h().workspace();
    const ann = await contact(ws, 'non_subscribed', {}, 'ann@example.com');
    const vip = await segment(ws, { all: [{ property: 'vip', operator: 'equals', value: true }] });
    const subscribed = await segment(ws, { any: [{ subscription_status: 'subscribed' }] });
    await api(ws, 'PATCH', `/contacts/${ann}`, { properties: { vip: true } });
    await api(ws, 'PATCH', `/contacts/${ann}`, { subscription_status: 'subscribed' });
    await drain();
    expect(await emailsIn(ws, vip.id)).toEqual(['ann@example.com']);
    expect(await emailsIn(ws, subscribed.id)).toEqual(['ann@example.com']);
    // A contact created later enters at once (the created fact re-evaluates every segment for it).
    await contact(ws, 'subscribed', { vip: true }, 'bob@example.com');
    await drain();
    expect(await emailsIn(ws, vip.id)).toEqual(['ann@example.com', 'bob@example.com']);
    // Consent changes from outside the API go through changeStatus.
    await h().services.contacts.changeStatus(ws.id, ann, 'unsubscribed', 'test');
    await api(ws, 'PATCH', `/contacts/${ann}`, { properties: { vip: false } });
    await drain();
    expect(await emailsIn(ws, subscribed.id)).toEqual(['bob@example.com']);
    expect(await emailsIn(ws, vip.id)).toEqual(['bob@example.com']);
    const changed = await knex()('trigger_outbox').where({ workspace_id: ws.id, trigger_type: 'contact_changed', contact_id: ann });
    expect(changed.length).toBeGreaterThanOrEqual(4);
  });

  it('a worker re-evaluates within moments of the write (the dispatcher runs before each claim)', async () => {
    const ws = await h().workspace();
    const ann = await contact(ws, 'subscribed', {}, 'ann@example.com');
    const joined = await segment(ws, { all: [{ event: 'Loyalty Joined' }] });
    await event(ws, ann, 'Loyalty Joined');
    await work();
    expect(await emailsIn(ws, joined.id)).toEqual(['ann@example.com']);
  });

  // ------------------------------------------------------------------ campaigns

  it('campaigns: segment_id must name a segment of the workspace; the send goes to its members who are subscribed and unsuppressed', async () => {
    const ws = await h().workspace();
    const ann = await contact(ws, 'subscribed', { plan: 'gold' }, 'ann@example.com');
    await contact(ws, 'unsubscribed', { plan: 'gold' }, 'bob@example.com');
    await contact(ws, 'subscribed', { plan: 'gold' }, 'cy@example.com');
    await contact(ws, 'subscribed', { plan: 'silver' }, 'dee@example.com');
    await api(ws, 'POST', '/suppressions', { emails: ['cy@example.com'] });
    const gold = await segment(ws, { all: [{ property: 'plan', operator: 'equals', value: 'gold' }] });
    const theirs = await segment(await h().workspace(), { all: [{ subscription_status: 'subscribed' }] });

    for (const segmentId of ['no-such-segment', theirs.id]) {
      const reply = await api(ws, 'POST', '/campaigns', { name: 'N', subject: 'S', html: 'x', segment_id: segmentId });
      expect(reply.statusCode).toBe(400);
      expect(reply.json().error).toBe('invalid request: segment_id names no segment');
    }
    const id = await campaign(ws, { segment_id: gold.id });
    expect((await api(ws, 'GET', `/campaigns/${id}`)).json().segment_id).toBe(gold.id);
    expect((await api(ws, 'PATCH', `/campaigns/${id}`, { segment_id: theirs.id })).statusCode).toBe(400);
    expect((await api(ws, 'GET', `/campaigns/${id}`)).json().segment_id).toBe(gold.id);

    const sent = (await api(ws, 'POST', `/campaigns/${id}/send`, {})).json();
    expect(sent).toMatchObject({ status: 'sending', recipients: 1 });
    await work();
    expect((await messagesOf(ws, `campaign_id=${id}`)).map((m) => m.contact_id)).toEqual([ann]);
    // Without a segment: every subscribed, unsuppressed contact.
    const all = await campaign(ws);
    expect((await api(ws, 'POST', `/campaigns/${all}/send`, {})).json().recipients).toBe(2);
  });

  // ------------------------------------------------------------------ the hourly refresh

  it('time-window segments: saving one schedules the refresh job; the refresh moves the window for everyone and schedules the next', async () => {
    const ws = await h().workspace();
    const ann = await contact(ws, 'subscribed', {}, 'ann@example.com');
    await contact(ws, 'subscribed', {}, 'bob@example.com');
    await event(ws, ann, 'viewed_product');
    const recent = await segment(ws, { all: [{ event: 'viewed_product', within_days: 7 }] });
    const lapsed = await segment(ws, { all: [{ event: 'viewed_product', count: { lte: 0 }, within_days: 7 }] });
    expect(await emailsIn(ws, recent.id)).toEqual(['ann@example.com']);
    expect(await emailsIn(ws, lapsed.id)).toEqual(['bob@example.com']);
    const pending = () => knex()('jobs').where({ kind: SEGMENT_JOBS.refresh }).whereNull('failed_at');
    const [job] = await pending();
    expect(await pending()).toHaveLength(1);
    expect(Number(job.run_at)).toBeGreaterThan(h().clock() + REFRESH_INTERVAL_MS - 600_000);

    // Saving another time-window segment while one refresh waits adds none.
    await segment(ws, { all: [{ orders: { count: { gte: 1 } }, within_days: 30 }] });
    expect(await pending()).toHaveLength(1);

    // Eight days later (the segments' clock), the worker runs the refresh that fell due.
    h().clock.advance(8 * DAY);
    try {
      await knex()('jobs').where({ id: job.id }).update({ run_at: Date.now() - 1 });
      await work();
      expect(await emailsIn(ws, recent.id)).toEqual([]);
      expect(await emailsIn(ws, lapsed.id)).toEqual(['ann@example.com', 'bob@example.com']);
      expect((await enteredFacts(ws, lapsed.id)).map((f) => f.contact_id)).toEqual([ann]);
      // It ran once and left exactly one successor, an hour later.
      const [next, ...more] = await pending();
      expect(more).toEqual([]);
      expect(Number(next.id)).not.toBe(Number(job.id));
      expect(Number(next.run_at)).toBe(h().clock() + REFRESH_INTERVAL_MS);
    } finally {
      h().clock.advance(-8 * DAY);
    }
  });

  it("conditions stay inside the segment's workspace, whatever the groups (an any at the top included)", async () => {
    const ws = await h().workspace();
    const other = await h().workspace();
    await contact(ws, 'subscribed', { plan: 'gold' }, 'ann@example.com');
    await contact(other, 'subscribed', { plan: 'gold' }, 'ann@example.com');
    await contact(other, 'subscribed', { plan: 'silver' }, 'bob@example.com');
    const { id, member_count } = await segment(ws, {
      any: [{ property: 'plan', operator: 'equals', value: 'gold' }, { property: 'plan', operator: 'equals', value: 'silver' }],
    });
    expect(member_count).toBe(1);
    expect((await members(ws, id)).map((m) => m.email)).toEqual(['ann@example.com']);
  });

  it("identifying a visitor re-evaluates event segments with the visitor's earlier anonymous events", async () => {
    const ws = await h().workspace();
    const viewers = await segment(ws, { all: [{ event: 'viewed_product', count: { gte: 2 } }] });
    const collect = (url: string, json: Record<string, unknown>) =>
      h().request({ method: 'POST', url, json: { site_id: ws.siteId, ...json }, headers: { origin: 'https://shop.test' } });
    await collect('/collect/event', { anonymous_id: 'visitor-1', event_name: 'viewed_product' });
    await collect('/collect/event', { anonymous_id: 'visitor-1', event_name: 'product_viewed' });
    await collect('/collect/identify', { email: 'ann@example.com' });
    await drain();
    // Barrier: the contact exists and its creation was consumed; its anonymous views are not its own yet.
    expect(await emailsIn(ws, viewers.id)).toEqual([]);
    await collect('/collect/identify', { email: 'ann@example.com', anonymous_id: 'visitor-1' });
    await drain();
    expect(await emailsIn(ws, viewers.id)).toEqual(['ann@example.com']);
  });
});
