import { expect, it } from 'vitest';
import { describeEachDatabase, type TestWorkspace } from './helpers/harness.js';

describeEachDatabase('orders', (h) => {
  const newContact = async (ws: TestWorkspace, email: string) =>
    (await h().request({ method: 'POST', url: '/api/v1/contacts', key: ws.apiKey, json: { email } })).json().id as string;
  const create = (ws: TestWorkspace, body: Record<string, unknown>) =>
    h().request({ method: 'POST', url: '/api/v1/ecommerce/orders', key: ws.apiKey, json: body });
  const valid = (contactId: string, extra: Record<string, unknown> = {}) => ({
    contact_id: contactId,
    platform: 'pos',
    order_number: 'A-1',
    total_amount: 20,
    currency: 'USD',
    status: 'paid',
    ordered_at: '2026-05-01T10:00:00Z',
    ...extra,
  });
  const contact = async (ws: TestWorkspace, id: string) =>
    (await h().request({ method: 'GET', url: `/api/v1/contacts/${id}`, key: ws.apiKey })).json();

  // ------------------------------------------------------------------ POST /api/v1/ecommerce/orders

  it('direct create: 201 with exactly the spec fields, attribution ids null', async () => {
    const ws = await h().workspace();
    const contactId = await newContact(ws, 'o1@example.com');
    const res = await create(ws, valid(contactId, { external_id: 'ext-1', items: [{ external_id: 'p1', title: 'Pen', quantity: 3, price: 5 }] }));
    expect(res.statusCode).toBe(201);
    const body = res.json();
    expect(Object.keys(body).sort()).toEqual(
      ['attributed_campaign_id', 'attributed_flow_id', 'contact_id', 'currency', 'id', 'order_number', 'ordered_at', 'status', 'total_amount'].sort(),
    );
    expect(body).toMatchObject({
      contact_id: contactId,
      order_number: 'A-1',
      total_amount: 20,
      currency: 'USD',
      status: 'paid',
      attributed_campaign_id: null,
      attributed_flow_id: null,
      ordered_at: '2026-05-01T10:00:00.000Z',
    });
    const stored = (await h().request({ method: 'GET', url: `/api/v1/ecommerce/orders/${body.id}`, key: ws.apiKey })).json();
    expect(stored).toMatchObject({ platform: 'pos', external_id: 'ext-1', items: [{ external_id: 'p1', title: 'Pen', quantity: 3, price: 5 }] });
  });

  it('direct create: every required field missing or empty is 400 invalid request naming it; total_amount 0 counts as missing', async () => {
    const ws = await h().workspace();
    const contactId = await newContact(ws, 'o2@example.com');
    for (const field of ['contact_id', 'platform', 'order_number', 'total_amount', 'currency', 'status', 'ordered_at']) {
      const missing = { ...valid(contactId) } as Record<string, unknown>;
      delete missing[field];
      const res = await create(ws, missing);
      expect(res.statusCode, field).toBe(400);
      expect(res.json().error).toMatch(new RegExp(`^invalid request: ${field}`));
      if (field !== 'total_amount' && field !== 'ordered_at') {
        const empty = await create(ws, { ...valid(contactId), [field]: '' });
        expect(empty.statusCode, `${field} empty`).toBe(400);
      }
    }
    for (const total of [0, -5, '20']) {
      const res = await create(ws, valid(contactId, { total_amount: total }));
      expect(res.statusCode, String(total)).toBe(400);
      expect(res.json().error).toMatch(/^invalid request: total_amount/);
    }
    const badTime = await create(ws, valid(contactId, { ordered_at: 'yesterday' }));
    expect(badTime.json().error).toMatch(/^invalid request: ordered_at/);
    expect((await contact(ws, contactId)).orders_count).toBe(0);
  });

  it('direct create takes a contact_id only: an email is refused, an unknown or foreign contact is 404', async () => {
    const ws = await h().workspace();
    const other = await h().workspace();
    const foreign = await newContact(other, 'foreign@example.com');
    expect((await create(ws, { ...valid('x'), contact_id: undefined, email: 'o3@example.com' })).statusCode).toBe(400);
    expect((await create(ws, valid(foreign))).statusCode).toBe(404);
    expect((await create(ws, valid('01900000-0000-7000-8000-000000000000'))).statusCode).toBe(404);
    expect((await contact(other, foreign)).orders_count).toBe(0);
  });

  it('direct create has no duplicate protection: the same order twice is two rows and double counts', async () => {
    const ws = await h().workspace();
    const contactId = await newContact(ws, 'o4@example.com');
    const first = (await create(ws, valid(contactId, { external_id: 'same' }))).json();
    const second = (await create(ws, valid(contactId, { external_id: 'same' }))).json();
    expect(second.id).not.toBe(first.id);
    expect(await contact(ws, contactId)).toMatchObject({ lifetime_revenue: 40, orders_count: 2 });
  });

  it('direct create: no attribution even with a click in the window; order_placed fires', async () => {
    const ws = await h().workspace();
    const contactId = await newContact(ws, 'o5@example.com');
    await h().services.attribution.recordEngagement({
      workspaceId: ws.id,
      contactId,
      kind: 'click',
      campaignId: 'camp-1',
      occurredAt: Date.parse('2026-05-01T09:00:00Z'),
    });
    const order = (await create(ws, valid(contactId))).json();
    expect(order.attributed_campaign_id).toBeNull();
    const triggers = await h().services.db.knex('trigger_outbox').where({ workspace_id: ws.id, trigger_type: 'order_placed' });
    expect(triggers.map((t) => [t.contact_id, t.subject_id])).toEqual([[contactId, order.id]]);
  });

  it('ordered_at accepts RFC 3339 with offsets and YYYY-MM-DD HH:MM:SS (UTC)', async () => {
    const ws = await h().workspace();
    const contactId = await newContact(ws, 'o6@example.com');
    const a = (await create(ws, valid(contactId, { ordered_at: '2026-05-01T12:00:00+02:00' }))).json();
    const b = (await create(ws, valid(contactId, { ordered_at: '2026-05-01 10:00:00' }))).json();
    expect(a.ordered_at).toBe('2026-05-01T10:00:00.000Z');
    expect(b.ordered_at).toBe('2026-05-01T10:00:00.000Z');
  });

  // ------------------------------------------------------------------ reads

  it('GET /ecommerce/orders lists newest first with contact_id / external_id filters and paging; GET by id; 404 unknown', async () => {
    const ws = await h().workspace();
    const a = await newContact(ws, 'o7a@example.com');
    const b = await newContact(ws, 'o7b@example.com');
    await create(ws, valid(a, { ordered_at: '2026-01-01T00:00:00Z', external_id: 'x1' }));
    await create(ws, valid(b, { ordered_at: '2026-02-01T00:00:00Z', external_id: 'x2' }));
    await create(ws, valid(a, { ordered_at: '2026-03-01T00:00:00Z', external_id: 'x3' }));
    const all = (await h().request({ method: 'GET', url: '/api/v1/ecommerce/orders', key: ws.apiKey })).json();
    expect(all.meta.total).toBe(3);
    expect(all.data.map((o: { external_id: string }) => o.external_id)).toEqual(['x3', 'x2', 'x1']);
    expect(all.data[0]).toMatchObject({ shipping_status: null, refunded_amount: 0, cancelled_at: null, items: [] });
    const ofA = (await h().request({ method: 'GET', url: `/api/v1/ecommerce/orders?contact_id=${a}`, key: ws.apiKey })).json();
    expect(ofA.data.map((o: { external_id: string }) => o.external_id)).toEqual(['x3', 'x1']);
    const byExt = (await h().request({ method: 'GET', url: '/api/v1/ecommerce/orders?external_id=x2', key: ws.apiKey })).json();
    expect(byExt.data.map((o: { contact_id: string }) => o.contact_id)).toEqual([b]);
    const page = (await h().request({ method: 'GET', url: '/api/v1/ecommerce/orders?perPage=1&page=2', key: ws.apiKey })).json();
    expect(page.data.map((o: { external_id: string }) => o.external_id)).toEqual(['x2']);
    expect((await h().request({ method: 'GET', url: '/api/v1/ecommerce/orders/nope', key: ws.apiKey })).statusCode).toBe(404);
    const other = await h().workspace();
    expect((await h().request({ method: 'GET', url: `/api/v1/ecommerce/orders/${all.data[0].id}`, key: other.apiKey })).statusCode).toBe(404);
    expect((await h().request({ method: 'GET', url: '/api/v1/ecommerce/orders', key: other.apiKey })).json().data).toEqual([]);
  });

  // ------------------------------------------------------------------ historical sync

  const sync = (ws: TestWorkspace, orders: unknown[]) =>
    h().request({ method: 'POST', url: '/api/v1/ecommerce/sync-historical-orders', key: ws.apiKey, json: { orders } });
  const syncRow = (email: string, externalId: string, extra: Record<string, unknown> = {}) => ({
    email,
    external_id: externalId,
    order_number: `N${externalId}`,
    total_amount: 10,
    currency: 'EUR',
    status: 'paid',
    ordered_at: '2026-04-01T00:00:00Z',
    ...extra,
  });

  it('sync upserts by external_id: re-running never double counts; changed rows update, unchanged are skipped', async () => {
    const ws = await h().workspace();
    const rows = [syncRow('s1@example.com', '1'), syncRow('s1@example.com', '2', { items: [{ external_id: 'p', quantity: 1, price: 10 }] }), syncRow('s2@example.com', '3')];
    expect((await sync(ws, rows)).json()).toEqual({ inserted: 3, updated: 0, skipped: 0, errors: [] });
    expect((await sync(ws, rows)).json()).toEqual({ inserted: 0, updated: 0, skipped: 3, errors: [] });
    const changed = [{ ...rows[0], status: 'refunded' }, rows[1], { ...rows[2], total_amount: 25 }];
    expect((await sync(ws, changed)).json()).toEqual({ inserted: 0, updated: 2, skipped: 1, errors: [] });
    const s1 = (await h().request({ method: 'GET', url: '/api/v1/contacts?email=s1@example.com', key: ws.apiKey })).json().data[0];
    const s2 = (await h().request({ method: 'GET', url: '/api/v1/contacts?email=s2@example.com', key: ws.apiKey })).json().data[0];
    expect(s1).toMatchObject({ lifetime_revenue: 20, orders_count: 2, subscription_status: 'non_subscribed', source: 'sync' });
    expect(s2.lifetime_revenue).toBe(25);
  });

  it('a correction that lowers the total below what was refunded caps the refund: net revenue never goes negative', async () => {
    const ws = await h().workspace();
    await sync(ws, [syncRow('cap@example.com', 'cap1', { total_amount: 100 })]);
    const refund = await h().request({
      method: 'POST',
      url: `/ecom/website/${ws.integrationId}`,
      headers: { authorization: `Bearer ${ws.integrationKey}`, 'content-type': 'application/json' },
      payload: JSON.stringify({ event_type: 'refunded_order', email: 'cap@example.com', external_id: 'r1', order: { external_id: 'cap1', refund_amount: 60 } }),
    });
    expect(refund.json().status).toBe('processed');
    expect((await sync(ws, [syncRow('cap@example.com', 'cap1', { total_amount: 40 })])).json()).toMatchObject({ updated: 1 });
    const [order] = (await h().request({ method: 'GET', url: '/api/v1/ecommerce/orders?external_id=cap1', key: ws.apiKey })).json().data;
    expect(order).toMatchObject({ total_amount: 40, refunded_amount: 40 });
    const contact = (await h().request({ method: 'GET', url: '/api/v1/contacts?email=cap@example.com', key: ws.apiKey })).json().data[0];
    expect(contact.lifetime_revenue).toBe(0);
  });

  it('sync fires no order_placed: a historical backfill starts no flows', async () => {
    const ws = await h().workspace();
    await sync(ws, [syncRow('s5@example.com', 'h1'), syncRow('s5@example.com', 'h2')]);
    expect(await h().services.db.knex('orders').where({ workspace_id: ws.id })).toHaveLength(2);
    expect(await h().services.db.knex('trigger_outbox').where({ workspace_id: ws.id }).whereNot({ trigger_type: 'contact_changed' })).toEqual([]);
  });

  it('sync attributes from each order’s real ordered_at, once', async () => {
    const ws = await h().workspace();
    const contactId = await newContact(ws, 's3@example.com');
    await h().services.attribution.recordEngagement({ workspaceId: ws.id, contactId, kind: 'click', flowId: 'flow-1', occurredAt: Date.parse('2026-03-30T00:00:00Z') });
    await sync(ws, [syncRow('s3@example.com', 'a', { ordered_at: '2026-04-01T00:00:00Z' }), syncRow('s3@example.com', 'b', { ordered_at: '2026-05-01T00:00:00Z' })]);
    const orders = (await h().request({ method: 'GET', url: `/api/v1/ecommerce/orders?contact_id=${contactId}`, key: ws.apiKey })).json().data;
    const byExt = Object.fromEntries(orders.map((o: { external_id: string; attributed_flow_id: string | null }) => [o.external_id, o.attributed_flow_id]));
    expect(byExt).toEqual({ a: 'flow-1', b: null });
  });

  it('sync reports bad rows with index, external_id and a reason naming the field, and writes the rest', async () => {
    const ws = await h().workspace();
    const res = await sync(ws, [
      syncRow('ok@example.com', 'good'),
      { ...syncRow('bad@example.com', 'x1'), email: 'not-an-email' },
      { ...syncRow('bad@example.com', 'x2'), total_amount: 'lots' },
      { ...syncRow('bad@example.com', 'x3'), ordered_at: 'soon' },
      'not an object',
    ]);
    expect(res.statusCode).toBe(200);
    const body = res.json();
    expect(body.inserted).toBe(1);
    expect(body.errors.map((e: { index: number; external_id: string | null }) => [e.index, e.external_id])).toEqual([
      [1, 'x1'],
      [2, 'x2'],
      [3, 'x3'],
      [4, null],
    ]);
    expect(body.errors[0].error).toMatch(/email/);
    expect(body.errors[1].error).toMatch(/total_amount/);
    expect(body.errors[2].error).toMatch(/ordered_at/);
  });

  it('sync refuses more than 1000 orders, or no orders array, with 400 and writes nothing', async () => {
    const ws = await h().workspace();
    const tooMany = Array.from({ length: 1001 }, (_, i) => syncRow('many@example.com', String(i)));
    const res = await sync(ws, tooMany);
    expect(res.statusCode).toBe(400);
    expect(res.json().error).toMatch(/orders/);
    const noArray = await h().request({ method: 'POST', url: '/api/v1/ecommerce/sync-historical-orders', key: ws.apiKey, json: { orders: {} } });
    expect(noArray.statusCode).toBe(400);
    expect((await h().request({ method: 'GET', url: '/api/v1/ecommerce/orders', key: ws.apiKey })).json().meta.total).toBe(0);
  });

  it('sync and the webhook share one order per external_id: a synced order is updated, not duplicated, by a later webhook event', async () => {
    const ws = await h().workspace();
    await sync(ws, [syncRow('s4@example.com', 'w1', { total_amount: 30 })]);
    await h().request({
      method: 'POST',
      url: `/ecom/website/${ws.integrationId}`,
      headers: { authorization: `Bearer ${ws.integrationKey}`, 'content-type': 'application/json' },
      payload: JSON.stringify({ event_type: 'cancelled_order', email: 's4@example.com', order: { external_id: 'w1' } }),
    });
    const orders = (await h().request({ method: 'GET', url: '/api/v1/ecommerce/orders', key: ws.apiKey })).json().data;
    expect(orders).toHaveLength(1);
    expect(orders[0].cancelled_at).not.toBeNull();
    const s4 = (await h().request({ method: 'GET', url: '/api/v1/contacts?email=s4@example.com', key: ws.apiKey })).json().data[0];
    expect(s4.lifetime_revenue).toBe(0);
  });

  it('concurrent order writes for one contact all reach its lifetime revenue (none computes totals that miss another’s order)', async () => {
    const ws = await h().workspace();
    const contactId = await newContact(ws, 'race@example.com');
    const hook = (body: unknown) =>
      h().request({
        method: 'POST',
        url: `/ecom/website/${ws.integrationId}`,
        headers: { authorization: `Bearer ${ws.integrationKey}`, 'content-type': 'application/json' },
        payload: JSON.stringify(body),
      });
    let expected = 0;
    for (let round = 0; round < 15; round++) {
      await Promise.all([
        create(ws, valid(contactId, { total_amount: 10 })),
        hook({ event_type: 'order_placed', email: 'race@example.com', order: { external_id: `race-${round}`, total_amount: 5 } }),
      ]);
      expected += 15;
    }
    expect((await contact(ws, contactId)).lifetime_revenue).toBe(expected);
    expect((await contact(ws, contactId)).orders_count).toBe(30);
  });
});
