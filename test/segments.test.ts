import { expect, it } from 'vitest';
import { parseConditions } from '../src/domain/segments/segment.schema.js';
import { SEGMENT_JOBS } from '../src/domain/segments/segment-service.js';
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
});
