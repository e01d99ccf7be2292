import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { openDatabase } from '../src/domain/db/database.js';
import { runEmk } from './helpers/cli.js';
import { describeEachDatabase, type TestWorkspace } from './helpers/harness.js';
import { createTestDatabase, DIALECTS, type TestDatabase } from './helpers/test-databases.js';

/**
 * Both databases accept and refuse the same values: the domain decides what is storable text (no NUL, no
 * unpaired surrogate, JSON at most 100 levels deep) and the range of every number, from HTTP and from the CLI.
 */

// JSON text escapes, as a client sends them.
const NUL = '\\u0000';
const LONE_SURROGATE = '\\ud800';

// ------------------------------------------------------------------------------------------------ the CLI

for (const dialect of DIALECTS) {
  describe(`storable values from the CLI [${dialect}]`, () => {
    let database: TestDatabase;
    beforeAll(async () => {
      database = await createTestDatabase(dialect);
      const init = await runEmk(['init', '--db', database.url, '--json', '--name', 'Storable', '--domain', 'storable.test']);
      expect(init.code, init.stderr).toBe(0);
    });
    afterAll(() => database.drop());

    const count = async (table: string) => {
      const db = openDatabase(database.url);
      try {
        return Number((await db.knex(table).count({ n: '*' }))[0]!.n);
      } finally {
        await db.close();
      }
    };
    const file = (name: string, lines: string[]) => {
      const path = join(inject('tmpDir'), `${dialect}-${name}`);
      writeFileSync(path, lines.join('\n'));
      return path;
    };
    const emk = async (args: string[]) => {
      const result = await runEmk([...args, '--db', database.url, '--json']);
      expect(result.code, result.stderr).toBe(0);
      expect(result.stderr).not.toMatch(/select|insert|invalid byte sequence/i);
      return JSON.parse(result.stdout);
    };
    const order = (externalId: string, extra = '') =>
      `{"email":"cli@example.com","external_id":"${externalId}","order_number":"${externalId}","total_amount":5,"currency":"EUR","ordered_at":"2026-09-05T00:00:00Z"${extra}}`;

    it('sync-orders: a row with NUL or an unpaired surrogate is reported with its line and field; the good rows are written', async () => {
      const summary = await emk([
        'sync-orders',
        '--file',
        file('orders.jsonl', [order('o1'), order(`o2${NUL}x`), order('o3', `,"status":"paid${LONE_SURROGATE}"`), order('o4')]),
      ]);
      expect(summary).toMatchObject({ rows: 4, inserted: 2 });
      expect(summary.errors).toEqual([
        { line: 2, error: expect.stringMatching(/^invalid request: external_id must not contain NUL/) },
        { line: 3, error: expect.stringMatching(/^invalid request: status must not contain NUL/) },
      ]);
      expect(await count('orders')).toBe(2);
    });

    it('sync-orders: numbers past their range are reported by field (total, item quantity, item price)', async () => {
      const summary = await emk([
        'sync-orders',
        '--file',
        file('ranges.jsonl', [
          order('r1'),
          order('r2').replace('"total_amount":5', '"total_amount":1e14'),
          order('r3', ',"items":[{"external_id":"p","quantity":1e20}]'),
          order('r4', ',"items":[{"external_id":"p","quantity":1,"price":123456789012345678901234567890}]'),
        ]),
      ]);
      expect(summary).toMatchObject({ rows: 4, inserted: 1 });
      expect(summary.errors.map((e: { line: number; error: string }) => [e.line, e.error])).toEqual([
        [2, 'invalid request: total_amount must be at most 1000000000000'],
        [3, 'invalid request: items[0].quantity must be at most 1000000'],
        [4, 'invalid request: items[0].price must be at most 1000000000000'],
      ]);
    });

    it('events import and correct: a row with NUL anywhere in properties is reported; the rest are written', async () => {
      const init = await emk(['sync-orders', '--file', file('owner.jsonl', [order('owner-1')])]);
      expect(init.errors).toEqual([]);
      const rows = [
        '{"email":"cli@example.com","event_name":"ok","properties":{"dedupe_key":"k1"}}',
        `{"email":"cli@example.com","event_name":"bad","properties":{"dedupe_key":"k2","deep":{"list":["x${NUL}"]}}}`,
        `{"email":"cli@example.com","event_name":"bad${LONE_SURROGATE}"}`,
        '{"email":"cli@example.com","event_name":"ok","properties":{"dedupe_key":"k3"}}',
      ];
      const imported = await emk(['events', 'import', '--file', file('events.jsonl', rows)]);
      expect(imported).toMatchObject({ rows: 4, processed: 2 });
      expect(imported.errors.map((e: { line: number; error: string }) => [e.line, e.error])).toEqual([
        [2, 'invalid request: properties.deep.list[0] must not contain NUL characters or unpaired surrogates'],
        [3, 'invalid request: event_name must not contain NUL characters or unpaired surrogates'],
      ]);
      const corrected = await emk([
        'events',
        'correct',
        '--file',
        file('correct.jsonl', [
          `{"email":"cli@example.com","event_name":"ok","dedupe_key":"k1","source":"s${NUL}"}`,
          '{"email":"cli@example.com","event_name":"ok","dedupe_key":"k3","source":"fixed"}',
        ]),
      ]);
      expect(corrected).toMatchObject({ updated: 1 });
      expect(corrected.errors).toEqual([{ line: 1, error: 'invalid request: source must not contain NUL characters or unpaired surrogates' }]);
      expect(await count('events')).toBe(2);
    });
  });
}

// ------------------------------------------------------------------------------------------------ HTTP

describeEachDatabase('storable values over HTTP', (h) => {
  const post = (url: string, json: unknown, key?: string) => h().request({ method: 'POST', url, json, ...(key ? { key } : {}) });
  const raw = (method: 'POST' | 'PUT' | 'PATCH', url: string, payload: string, key?: string, headers: Record<string, string> = {}) =>
    h().request({ method, url, payload, headers: { 'content-type': 'application/json', ...headers }, ...(key ? { key } : {}) });
  const webhook = (ws: TestWorkspace, payload: string) =>
    h().request({
      method: 'POST',
      url: `/ecom/website/${ws.integrationId}`,
      payload,
      headers: { authorization: `Bearer ${ws.integrationKey}`, 'content-type': 'application/json' },
    });
  const ordersOf = async (ws: TestWorkspace) => (await h().request({ method: 'GET', url: '/api/v1/ecommerce/orders', key: ws.apiKey })).json();
  const newContact = async (ws: TestWorkspace) => (await post('/api/v1/contacts', { email: 'buyer@example.com' }, ws.apiKey)).json().id as string;
  const directOrder = (contactId: string, total: unknown) => ({
    contact_id: contactId,
    platform: 'pos',
    order_number: 'A-1',
    total_amount: total,
    currency: 'EUR',
    status: 'paid',
    ordered_at: '2026-09-05T00:00:00Z',
  });

  it('order totals of 1e14 and more are 400 naming the field on POST /ecommerce/orders; the largest allowed is stored exactly', async () => {
    const ws = await h().workspace();
    const contactId = await newContact(ws);
    for (const total of [1e14, 1e308, 9007199254740992]) {
      const res = await post('/api/v1/ecommerce/orders', directOrder(contactId, total), ws.apiKey);
      expect(res.statusCode, res.body).toBe(400);
      expect(res.json().error).toBe('invalid request: total_amount must be at most 1000000000000');
    }
    const largest = await post('/api/v1/ecommerce/orders', directOrder(contactId, 1e12), ws.apiKey);
    expect(largest.statusCode, largest.body).toBe(201);
    expect(largest.json().total_amount).toBe(1e12);
    // Money keeps 4 decimals on both databases alike.
    const fine = await post('/api/v1/ecommerce/orders', directOrder(contactId, 10.123456), ws.apiKey);
    expect(fine.json().total_amount).toBe(10.1235);
    expect((await ordersOf(ws)).meta.total).toBe(2);
  });

  it('sync-historical-orders: an out-of-range row is an error entry and the good rows are written', async () => {
    const ws = await h().workspace();
    const row = (id: string, total: unknown) => ({ email: 'sync@example.com', external_id: id, order_number: id, total_amount: total, currency: 'EUR', ordered_at: '2026-09-05T00:00:00Z' });
    const res = await post('/api/v1/ecommerce/sync-historical-orders', { orders: [row('s1', 10), row('s2', 1e14), row('s3', 20)] }, ws.apiKey);
    expect(res.statusCode, res.body).toBe(200);
    expect(res.json()).toEqual({
      inserted: 2,
      updated: 0,
      skipped: 0,
      errors: [{ index: 1, external_id: 's2', error: 'invalid request: total_amount must be at most 1000000000000' }],
    });
  });

  it('webhook order_placed: an unusable total or item is named in `warnings`; a new order without a usable total is not stored', async () => {
    const ws = await h().workspace();
    const res = await webhook(
      ws,
      JSON.stringify({ event_type: 'order_placed', email: 'hook@example.com', order: { external_id: 'w1', total_amount: 1e14, currency: 'EUR' } }),
    );
    expect(res.statusCode).toBe(200);
    expect(res.json()).toEqual({
      status: 'processed',
      event_type: 'order_placed',
      warnings: ['order.total_amount must be at most 1000000000000'],
    });
    expect((await ordersOf(ws)).meta.total).toBe(0);

    const items = await webhook(
      ws,
      JSON.stringify({
        event_type: 'order_placed',
        email: 'hook@example.com',
        order: {
          external_id: 'w2',
          total_amount: 30,
          currency: 'EUR',
          items: [
            { external_id: 'big', quantity: 1e20, price: 1 },
            { external_id: 'ok', quantity: 2, price: 15 },
          ],
        },
      }),
    );
    expect(items.json()).toEqual({
      status: 'processed',
      event_type: 'order_placed',
      warnings: ['order.items[0].quantity must be at most 1000000 (item ignored)'],
    });
    const [stored] = (await ordersOf(ws)).data;
    expect(stored.total_amount).toBe(30);
    expect(stored.items).toEqual([{ external_id: 'ok', title: null, quantity: 2, price: 15 }]);
  });

  it('webhook: NUL or an unpaired surrogate in any text is stored as U+FFFD with a 200, and a retry is still a duplicate', async () => {
    const ws = await h().workspace();
    const body = `{"event_type":"loyalty${NUL}joined","id":"e${NUL}1","email":"text@example.com","tier":"gold${LONE_SURROGATE}","nested":{"k${NUL}":["v${NUL}"]}}`;
    const first = await webhook(ws, body);
    expect(first.statusCode).toBe(200);
    expect(first.json()).toEqual({ status: 'processed', event_type: 'loyalty\ufffdjoined' });
    expect((await webhook(ws, body)).json()).toEqual({ status: 'duplicate' });
    const events = (await h().request({ method: 'GET', url: '/api/v1/events', key: ws.apiKey })).json().data;
    expect(events).toHaveLength(1);
    expect(events[0].event_name).toBe('loyalty\ufffdjoined');
    expect(events[0].properties).toMatchObject({ id: 'e\ufffd1', tier: 'gold\ufffd', nested: { 'k\ufffd': ['v\ufffd'] } });
  });

  it('webhook: a body nested 10,000 levels deep anywhere is skipped with normalize_error, never a 500', async () => {
    const ws = await h().workspace();
    const deep = `${'{"a":'.repeat(10_000)}1${'}'.repeat(10_000)}`;
    for (const place of ['properties', 'cart', 'order']) {
      const res = await webhook(ws, `{"event_type":"added_to_cart","email":"deep@example.com","${place}":${deep}}`);
      expect(res.statusCode).toBe(200);
      expect(res.json()).toEqual({ status: 'skipped', reason: 'normalize_error' });
    }
  });

  it('page=1e20 is refused in our words; perPage=1e20 is clamped to the maximum', async () => {
    const ws = await h().workspace();
    const page = await h().request({ method: 'GET', url: '/api/v1/contacts?page=1e20', key: ws.apiKey });
    expect(page.statusCode).toBe(400);
    expect(page.json().error).toBe('invalid request: page must be at most 1000000000');
    const perPage = await h().request({ method: 'GET', url: '/api/v1/contacts?perPage=1e20', key: ws.apiKey });
    expect(perPage.statusCode).toBe(200);
    expect(perPage.json().meta.perPage).toBe(500);
  });

  // -------------------------------------------------------------------------------------------- fuzzing

  const DEEP = `${'['.repeat(10_000)}${']'.repeat(10_000)}`;
  /** What each value becomes in the JSON text (raw, so 30-digit numbers stay as sent). */
  const BAD_VALUES = [`"a${NUL}b"`, `"${LONE_SURROGATE}"`, '9007199254740992', '1e308', '-1e308', '123456789012345678901234567890', '-1', '1e20', DEEP];

  interface Target {
    method: 'POST' | 'PUT' | 'PATCH';
    url: string;
    key?: boolean;
    body: Record<string, unknown>;
  }

  function targets(ws: TestWorkspace, contactId: string): Target[] {
    const item = { external_id: 'p1', title: 'Mug', quantity: 1, price: 5 };
    const order = { external_id: 'o1', order_number: '1001', total_amount: 5, currency: 'EUR', status: 'paid', ordered_at: '2026-09-05T00:00:00Z', items: [item] };
    const product = { external_id: 'p1', title: 'Mug', price: 5, stock_qty: 3, categories: ['c'], metadata: { m: 'v' }, variants: [{ external_id: 'v1', price: 5, stock_qty: 1, options: { size: 'M' } }] };
    const hook = (body: Record<string, unknown>): Target => ({ method: 'POST', url: `/ecom/website/${ws.integrationId}`, body });
    return [
      { method: 'POST', url: '/collect/identify', body: { site_id: ws.siteId, email: 'f@example.com', anonymous_id: 'a1', properties: { first_name: 'F' } } },
      { method: 'POST', url: '/collect/event', body: { site_id: ws.siteId, event_name: 'x', email: 'f@example.com', anonymous_id: 'a1', properties: { product_id: 'p1' } } },
      { method: 'POST', url: '/api/v1/events', key: true, body: { contact_id: contactId, event_name: 'x', source: 's', properties: { v: 1 } } },
      { method: 'POST', url: '/api/v1/events/batch', key: true, body: { events: [{ email: 'f@example.com', event_name: 'x', timestamp: '2026-09-05T00:00:00Z', properties: { dedupe_key: 'k' } }] } },
      { method: 'PUT', url: '/api/v1/events/batch', key: true, body: { upsert: true, events: [{ email: 'f@example.com', event_name: 'x', dedupe_key: 'k', source: 's', properties: { v: 1 } }] } },
      { method: 'POST', url: '/api/v1/events/shipment', key: true, body: { tracking_number: 't', shipment_status: { slug: 'InTransit' }, order: { origin_order_id: 'o1' }, customer: { email: 'f@example.com' }, carrier: { name: 'c' } } },
      { method: 'POST', url: '/api/v1/events/order-update', key: true, body: { origin_order_id: 'o1', order_status: { slug: 'delivered', name: 'n' }, customer: { email: 'f@example.com' } } },
      { method: 'POST', url: '/api/v1/contacts', key: true, body: { email: 'g@example.com', subscription_status: 'subscribed', properties: { a: 1 } } },
      { method: 'PATCH', url: `/api/v1/contacts/${contactId}`, key: true, body: { subscription_status: 'subscribed', properties: { a: 1 } } },
      { method: 'POST', url: '/api/v1/ecommerce/orders', key: true, body: { contact_id: contactId, platform: 'pos', ...order } },
      { method: 'POST', url: '/api/v1/ecommerce/sync-historical-orders', key: true, body: { orders: [{ email: 'f@example.com', ...order }] } },
      { method: 'POST', url: '/api/v1/ecommerce/products', key: true, body: product },
      { method: 'POST', url: '/api/v1/product-feeds', key: true, body: { name: 'f', max_items: 5, price_min: 1, stock_min: 1, categories: ['c'], metadata: [{ key: 'm', operator: 'equals', value: 'v' }], variant_options: { size: ['M'] } } },
      { method: 'PATCH', url: '/api/v1/settings', key: true, body: { click_window_days: 5, contact_limit: 100, sender: { from_email: 's@shop.test', from_name: 'S' } } },
      hook({ event_type: 'order_placed', external_id: 'h1', email: 'f@example.com', identity_token: 't', order }),
      hook({ event_type: 'refunded_order', external_id: 'h2', email: 'f@example.com', order: { external_id: 'o1', refund_amount: 1, refunded_amount: 1 } }),
      hook({ event_type: 'added_to_cart', external_id: 'h3', email: 'f@example.com', cart: { external_id: 'c1', total_amount: 5, currency: 'EUR', checkout_url: 'u', items: [item] } }),
      hook({ event_type: 'customer_updated', email: 'f@example.com', properties: { a: 'b' } }),
      hook({ event_type: 'product_created', product }),
      hook({ event_type: 'custom_thing', id: 'h4', email: 'f@example.com', properties: { a: 'b' } }),
    ];
  }

  /** Every place in a body: each key at any depth (objects and arrays), and a new key beside them. */
  function places(value: unknown, path: Array<string | number> = []): Array<Array<string | number>> {
    if (Array.isArray(value)) return value.flatMap((v, i) => [[...path, i], ...places(v, [...path, i])]);
    if (value && typeof value === 'object') {
      return [[...path, '_extra'], ...Object.entries(value).flatMap(([k, v]) => [[...path, k], ...places(v, [...path, k])])];
    }
    return [];
  }

  const PLACEHOLDER = '__bad_value__';
  function withValueAt(body: Record<string, unknown>, path: Array<string | number>, rawValue: string): string {
    const copy = structuredClone(body) as Record<string | number, unknown>;
    let node = copy;
    for (const part of path.slice(0, -1)) node = node[part] as Record<string | number, unknown>;
    node[path.at(-1)!] = PLACEHOLDER;
    return JSON.stringify(copy).replace(`"${PLACEHOLDER}"`, rawValue);
  }

  it('fuzz: any bad value (NUL, lone surrogate, huge or 30-digit numbers, 10,000-level nesting) at any place of any route is never a 500; the webhook always answers 200', async () => {
    const ws = await h().workspace();
    const contactId = await newContact(ws);
    const failures: string[] = [];
    let requests = 0;
    for (const target of targets(ws, contactId)) {
      for (const path of places(target.body)) {
        for (const value of BAD_VALUES) {
          const webhookRoute = target.url.startsWith('/ecom/');
          const bearer: Record<string, string> = webhookRoute ? { authorization: `Bearer ${ws.integrationKey}` } : {};
          const res = await raw(target.method, target.url, withValueAt(target.body, path, value), target.key ? ws.apiKey : undefined, bearer);
          requests++;
          const wrong = res.statusCode >= 500 || (webhookRoute && res.statusCode !== 200) || (webhookRoute && res.statusCode === 200 && !res.json().status);
          if (wrong) failures.push(`${res.statusCode} ${target.method} ${target.url} ${path.join('.')}=${value.slice(0, 20)}: ${res.body.slice(0, 120)}`);
        }
      }
    }
    expect(requests).toBeGreaterThan(1000);
    expect(failures).toEqual([]);
  }, 300_000);
});
