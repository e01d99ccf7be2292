import { expect, it } from 'vitest';
import { describeEachDatabase, type TestWorkspace } from './helpers/harness.js';

/** The integration webhook, rule by rule (docs/api/webhook.md: rules 1–10 and the reply table). */
describeEachDatabase('integration webhook', (h) => {
  const deliver = (ws: TestWorkspace, body: unknown, options: { key?: string; raw?: string; contentType?: string } = {}) =>
    h().request({
      method: 'POST',
      url: `/ecom/website/${ws.integrationId}`,
      headers: {
        authorization: `Bearer ${options.key ?? ws.integrationKey}`,
        ...(options.contentType !== '' ? { 'content-type': options.contentType ?? 'application/json' } : {}),
      },
      payload: options.raw ?? JSON.stringify(body),
    });
  const ordersOf = async (ws: TestWorkspace, query = '') =>
    (await h().request({ method: 'GET', url: `/api/v1/ecommerce/orders${query}`, key: ws.apiKey })).json().data;
  const contactByEmail = async (ws: TestWorkspace, email: string) =>
    (await h().request({ method: 'GET', url: `/api/v1/contacts?email=${encodeURIComponent(email)}`, key: ws.apiKey })).json().data[0];
  const orderPlaced = (email: string, orderId: string, total = 50, extra: Record<string, unknown> = {}) => ({
    event_type: 'order_placed',
    email,
    order: { external_id: orderId, total_amount: total, currency: 'EUR', ...extra },
  });
  // Flow triggers only: contact_changed facts (they re-evaluate segments) are tested in segments.test.ts.
  const outbox = (ws: TestWorkspace) => h().services.db.knex('trigger_outbox').where({ workspace_id: ws.id }).whereNot({ trigger_type: 'contact_changed' }).orderBy('id');

  // ------------------------------------------------------------------ credentials

  it('401 invalid api key: missing bearer, a wrong key, and the workspace key', async () => {
    const ws = await h().workspace();
    const noKey = await h().request({ method: 'POST', url: `/ecom/website/${ws.integrationId}`, payload: '{}', headers: { 'content-type': 'application/json' } });
    expect(noKey.statusCode).toBe(401);
    expect(noKey.json().error).toBe('invalid api key');
    for (const key of ['whk_wrong', ws.apiKey]) {
      const res = await deliver(ws, orderPlaced('a@example.com', 'o1'), { key });
      expect(res.statusCode).toBe(401);
      expect(res.json().error).toBe('invalid api key');
    }
    expect(await ordersOf(ws)).toEqual([]);
  });

  it('404 for an unknown integration and for an inactive one', async () => {
    const ws = await h().workspace();
    const unknown = await h().request({
      method: 'POST',
      url: '/ecom/website/01900000-0000-7000-8000-000000000000',
      headers: { authorization: `Bearer ${ws.integrationKey}`, 'content-type': 'application/json' },
      payload: '{}',
    });
    expect(unknown.statusCode).toBe(404);
    expect(unknown.json()).toHaveProperty('error');
    const off = await h().request({ method: 'PATCH', url: `/api/v1/integrations/${ws.integrationId}`, key: ws.apiKey, json: { active: false } });
    expect(off.statusCode).toBe(200);
    const res = await deliver(ws, orderPlaced('b@example.com', 'o1'));
    expect(res.statusCode).toBe(404);
    expect(await ordersOf(ws)).toEqual([]);
  });

  // ------------------------------------------------------------------ replies

  it('an applied event answers exactly {status:"processed", event_type}', async () => {
    const ws = await h().workspace();
    const res = await deliver(ws, { event_type: 'loyalty_joined', email: 'c@example.com', external_id: 'x1' });
    expect(res.statusCode).toBe(200);
    expect(res.json()).toEqual({ status: 'processed', event_type: 'loyalty_joined' });
  });

  it('a body that is not JSON answers {status:"skipped", reason:"normalize_error"} whatever its content type', async () => {
    const ws = await h().workspace();
    for (const [raw, contentType] of [
      ['not json', 'application/json'],
      ['not json', 'text/plain'],
      ['<xml/>', 'application/xml'],
      ['[1,2]', 'application/json'],
      ['', ''],
    ] as const) {
      const res = await deliver(ws, null, { raw, contentType });
      expect(res.statusCode, `${contentType}: ${raw}`).toBe(200);
      expect(res.json()).toEqual({ status: 'skipped', reason: 'normalize_error' });
    }
  });

  it('event_type missing or with a dot: {status:"skipped"} and nothing applied', async () => {
    const ws = await h().workspace();
    const dotted = await deliver(ws, { event_type: 'order.placed', email: 'd@example.com', order: { external_id: 'o1', total_amount: 5 } });
    expect(dotted.json()).toEqual({ status: 'skipped', event_type: 'order.placed' });
    const missing = await deliver(ws, { email: 'd@example.com' });
    expect(missing.statusCode).toBe(200);
    expect(missing.json().status).toBe('skipped');
    expect(await ordersOf(ws)).toEqual([]);
    expect(await contactByEmail(ws, 'd@example.com')).toBeUndefined();
  });

  // ------------------------------------------------------------------ rule 1: duplicate protection

  it('rule 1: the same event_type + external_id again is {status:"duplicate"} and applies nothing', async () => {
    const ws = await h().workspace();
    const body = { ...orderPlaced('e@example.com', 'o1', 40), external_id: 'evt-1' };
    expect((await deliver(ws, body)).json()).toEqual({ status: 'processed', event_type: 'order_placed' });
    const again = await deliver(ws, { ...body, order: { ...body.order, total_amount: 999 } });
    expect(again.json()).toEqual({ status: 'duplicate' });
    const [order] = await ordersOf(ws);
    expect(order.total_amount).toBe(40);
    expect((await contactByEmail(ws, 'e@example.com')).lifetime_revenue).toBe(40);
  });

  it('rule 1: order_placed and a later fulfilled_order for one order are both applied', async () => {
    const ws = await h().workspace();
    await deliver(ws, { ...orderPlaced('f@example.com', 'o1', 40, { status: 'paid' }), external_id: 'same' });
    const fulfilled = await deliver(ws, {
      event_type: 'fulfilled_order',
      email: 'f@example.com',
      external_id: 'same',
      order: { external_id: 'o1', status: 'fulfilled' },
    });
    expect(fulfilled.json()).toEqual({ status: 'processed', event_type: 'fulfilled_order' });
    const orders = await ordersOf(ws);
    expect(orders).toHaveLength(1);
    expect(orders[0].status).toBe('fulfilled');
  });

  it('rule 1: `id` is a synonym of external_id', async () => {
    const ws = await h().workspace();
    await deliver(ws, { event_type: 'signup', email: 'g@example.com', id: 77 });
    expect((await deliver(ws, { event_type: 'signup', email: 'g@example.com', external_id: '77' })).json()).toEqual({ status: 'duplicate' });
  });

  it('rule 1: order events fall back to order.external_id, cart events to cart.external_id', async () => {
    const ws = await h().workspace();
    expect((await deliver(ws, orderPlaced('h@example.com', 'o-fallback'))).json().status).toBe('processed');
    expect((await deliver(ws, orderPlaced('h@example.com', 'o-fallback', 99))).json()).toEqual({ status: 'duplicate' });
    const cart = { event_type: 'added_to_cart', email: 'h@example.com', cart: { external_id: 'c-1', items: [] } };
    expect((await deliver(ws, cart)).json().status).toBe('processed');
    expect((await deliver(ws, cart)).json()).toEqual({ status: 'duplicate' });
    expect((await ordersOf(ws))[0].total_amount).toBe(50);
  });

  it('rule 1: two concurrent deliveries of one event apply it once (unique key, not check-then-insert)', async () => {
    const ws = await h().workspace();
    const body = { ...orderPlaced('i@example.com', 'o1', 25), external_id: 'race' };
    const replies = await Promise.all(Array.from({ length: 10 }, () => deliver(ws, body)));
    const statuses = replies.map((r) => r.json().status).sort();
    expect(statuses).toEqual(['duplicate', 'duplicate', 'duplicate', 'duplicate', 'duplicate', 'duplicate', 'duplicate', 'duplicate', 'duplicate', 'processed']);
    expect(await ordersOf(ws)).toHaveLength(1);
    expect((await contactByEmail(ws, 'i@example.com')).lifetime_revenue).toBe(25);
  });

  it('rule 1: duplicate protection is per workspace', async () => {
    const one = await h().workspace();
    const two = await h().workspace();
    const body = { ...orderPlaced('j@example.com', 'o1'), external_id: 'shared-id' };
    expect((await deliver(one, body)).json().status).toBe('processed');
    expect((await deliver(two, body)).json().status).toBe('processed');
  });

  // ------------------------------------------------------------------ rule 2

  it('rule 2: an event with no id at all is applied as new every time', async () => {
    const ws = await h().workspace();
    const body = { event_type: 'newsletter_click', email: 'k@example.com' };
    expect((await deliver(ws, body)).json().status).toBe('processed');
    expect((await deliver(ws, body)).json().status).toBe('processed');
    const contact = await contactByEmail(ws, 'k@example.com');
    const events = (await h().request({ method: 'GET', url: `/api/v1/events?contact_id=${contact.id}`, key: ws.apiKey })).json();
    expect(events.meta.total).toBe(2);
  });

  // ------------------------------------------------------------------ rule 3

  it('rule 3: an order event without `order`, or with an empty order.external_id, stores nothing and answers processed', async () => {
    const ws = await h().workspace();
    for (const body of [
      { event_type: 'order_placed', email: 'l@example.com' },
      { event_type: 'order_placed', email: 'l@example.com', order: { external_id: '', total_amount: 10 } },
      { event_type: 'fulfilled_order', email: 'l@example.com', order: { total_amount: 10 } },
    ]) {
      expect((await deliver(ws, body)).json()).toEqual({ status: 'processed', event_type: body.event_type });
    }
    expect(await ordersOf(ws)).toEqual([]);
  });

  // ------------------------------------------------------------------ rule 4

  it('rule 4: an unseen email creates a subscribed contact with source website:<domain>', async () => {
    const ws = await h().workspace();
    await deliver(ws, orderPlaced('New.Buyer@example.com', 'o1'));
    expect(await contactByEmail(ws, 'new.buyer@example.com')).toMatchObject({
      email: 'New.Buyer@example.com',
      subscription_status: 'subscribed',
      source: 'website:shop.test',
    });
  });

  it('rule 4: an existing contact keeps its subscription status', async () => {
    const ws = await h().workspace();
    await h().request({ method: 'POST', url: '/api/v1/contacts', key: ws.apiKey, json: { email: 'm@example.com', subscription_status: 'unsubscribed' } });
    await deliver(ws, orderPlaced('M@example.com', 'o1'));
    await deliver(ws, { event_type: 'customer_updated', email: 'm@example.com', properties: { x: 1 } });
    const contact = await contactByEmail(ws, 'm@example.com');
    expect(contact.subscription_status).toBe('unsubscribed');
    expect(contact.source).toBe('api');
    expect((await h().request({ method: 'GET', url: '/api/v1/contacts', key: ws.apiKey })).json().meta.total).toBe(1);
  });

  it('customer_created / customer_updated merge `properties` into the contact', async () => {
    const ws = await h().workspace();
    await deliver(ws, { event_type: 'customer_created', email: 'n@example.com', properties: { first_name: 'Nia', tier: 'bronze' } });
    await deliver(ws, { event_type: 'customer_updated', email: 'n@example.com', properties: { tier: 'gold', city: 'Oslo' } });
    expect((await contactByEmail(ws, 'n@example.com')).properties).toEqual({ first_name: 'Nia', tier: 'gold', city: 'Oslo' });
  });

  it('`properties` on other event types is not merged into the contact', async () => {
    const ws = await h().workspace();
    await deliver(ws, { ...orderPlaced('n2@example.com', 'o1'), properties: { vip: true } });
    expect((await contactByEmail(ws, 'n2@example.com')).properties).toEqual({});
  });

  // ------------------------------------------------------------------ rule 5

  it('rule 5: an order with no email and no resolvable identity_token is not stored, still processed', async () => {
    const ws = await h().workspace();
    for (const [orderId, extra] of [['o1', {}], ['o2', { identity_token: 'garbage' }]] as const) {
      const res = await deliver(ws, { event_type: 'order_placed', order: { external_id: orderId, total_amount: 10 }, ...extra });
      expect(res.json()).toEqual({ status: 'processed', event_type: 'order_placed' });
    }
    expect(await ordersOf(ws)).toEqual([]);
  });

  it('rule 5: when the workspace contact limit is reached, an order of a new email is not stored, still processed', async () => {
    const ws = await h().workspace();
    await deliver(ws, orderPlaced('first@example.com', 'o1'));
    const patched = await h().request({ method: 'PATCH', url: '/api/v1/settings', key: ws.apiKey, json: { contact_limit: 1 } });
    expect(patched.statusCode).toBe(200);
    const res = await deliver(ws, orderPlaced('second@example.com', 'o2'));
    expect(res.json()).toEqual({ status: 'processed', event_type: 'order_placed' });
    expect((await ordersOf(ws)).map((o: { external_id: string }) => o.external_id)).toEqual(['o1']);
    expect(await contactByEmail(ws, 'second@example.com')).toBeUndefined();
    // Existing contacts still order.
    await deliver(ws, orderPlaced('first@example.com', 'o3'));
    expect(await ordersOf(ws)).toHaveLength(2);
  });

  it('identity_token (also _ir_id and _emk) resolves the contact a sent message named', async () => {
    const ws = await h().workspace();
    const owner = (await h().request({ method: 'POST', url: '/api/v1/contacts', key: ws.apiKey, json: { email: 'token@example.com' } })).json();
    const token = await h().services.identityTokens.mint(ws.id, { contactId: owner.id });
    for (const [field, orderId] of [['identity_token', 'o1'], ['_ir_id', 'o2'], ['_emk', 'o3']] as const) {
      await deliver(ws, { event_type: 'order_placed', [field]: token, order: { external_id: orderId, total_amount: 10 } });
    }
    const orders = await ordersOf(ws, `?contact_id=${owner.id}`);
    expect(orders.map((o: { external_id: string }) => o.external_id).sort()).toEqual(['o1', 'o2', 'o3']);
    // A token of another workspace names nobody here.
    const other = await h().workspace();
    await deliver(other, { event_type: 'order_placed', identity_token: token, order: { external_id: 'o9', total_amount: 10 } });
    expect(await ordersOf(other)).toEqual([]);
  });

  // ------------------------------------------------------------------ rule 6

  it('rule 6: an order is never moved from one paying customer to another', async () => {
    const ws = await h().workspace();
    await deliver(ws, orderPlaced('payer@example.com', 'o1', 30));
    await deliver(ws, orderPlaced('other@example.com', 'o2', 20));
    // A later event for o1 with the other paying customer's checkout email.
    await deliver(ws, { event_type: 'fulfilled_order', email: 'other@example.com', order: { external_id: 'o1', total_amount: 30, status: 'shipped' } });
    const payer = await contactByEmail(ws, 'payer@example.com');
    const other = await contactByEmail(ws, 'other@example.com');
    const [o1] = await ordersOf(ws, '?external_id=o1');
    expect(o1.contact_id).toBe(payer.id);
    expect(o1.status).toBe('shipped');
    expect(payer.lifetime_revenue).toBe(30);
    expect(other.lifetime_revenue).toBe(20);
  });

  it('rule 6: with both an identity token and a checkout email, the email decides the owner', async () => {
    const ws = await h().workspace();
    const clicker = (await h().request({ method: 'POST', url: '/api/v1/contacts', key: ws.apiKey, json: { email: 'clicker@example.com' } })).json();
    await deliver(ws, orderPlaced('buyer@example.com', 'o0', 10));
    const token = await h().services.identityTokens.mint(ws.id, { contactId: clicker.id });
    await deliver(ws, { ...orderPlaced('buyer@example.com', 'o1', 10), identity_token: token });
    const buyer = await contactByEmail(ws, 'buyer@example.com');
    expect((await ordersOf(ws, '?external_id=o1'))[0].contact_id).toBe(buyer.id);
  });

  // ------------------------------------------------------------------ rule 7

  it('rule 7: a custom event_type is stored on the timeline with the whole body and fires its trigger', async () => {
    const ws = await h().workspace();
    const body = { event_type: 'Review Left', email: 'p@example.com', external_id: 'r1', rating: 5, nested: { a: [1] } };
    await deliver(ws, body);
    const contact = await contactByEmail(ws, 'p@example.com');
    const events = (await h().request({ method: 'GET', url: `/api/v1/events?contact_id=${contact.id}`, key: ws.apiKey })).json();
    expect(events.data).toHaveLength(1);
    expect(events.data[0]).toMatchObject({ event_name: 'Review Left', properties: body, source: 'website:shop.test' });
    const triggers = await outbox(ws);
    expect(triggers.map((t) => [t.trigger_type, t.event_name, t.contact_id, t.subject_id])).toEqual([
      ['event', 'Review Left', contact.id, events.data[0].id],
    ]);
  });

  it('rule 7: a custom event without a contact is not stored', async () => {
    const ws = await h().workspace();
    expect((await deliver(ws, { event_type: 'ping' })).json()).toEqual({ status: 'processed', event_type: 'ping' });
    expect(await h().services.db.knex('events').where({ workspace_id: ws.id })).toHaveLength(0);
  });

  // ------------------------------------------------------------------ rule 8 (catalog rules are in products.test.ts)

  it('rule 8: product events reach the catalog under the integration platform and source', async () => {
    const ws = await h().workspace();
    const res = await deliver(ws, { event_type: 'product_created', product: { external_id: 'sku-1', title: 'Mug', price: 12 } });
    expect(res.json()).toEqual({ status: 'processed', event_type: 'product_created' });
    const products = (await h().request({ method: 'GET', url: '/api/v1/ecommerce/products', key: ws.apiKey })).json().data;
    expect(products).toHaveLength(1);
    expect(products[0]).toMatchObject({ external_id: 'sku-1', title: 'Mug', price: 12, platform: 'website', source: 'website:shop.test' });
    await deliver(ws, { event_type: 'product_deleted', product: { external_id: 'sku-1' } });
    expect((await h().request({ method: 'GET', url: '/api/v1/ecommerce/products', key: ws.apiKey })).json().data).toEqual([]);
  });

  // ------------------------------------------------------------------ rule 9: attribution and revenue

  it('rule 9: a click inside the click window credits the campaign, once, when the order first arrives', async () => {
    const ws = await h().workspace();
    const contact = (await h().request({ method: 'POST', url: '/api/v1/contacts', key: ws.apiKey, json: { email: 'q@example.com' } })).json();
    const orderedAt = Date.parse('2026-03-10T12:00:00Z');
    await h().services.attribution.recordEngagement({ workspaceId: ws.id, contactId: contact.id, kind: 'open', campaignId: 'camp-open', occurredAt: orderedAt - 3_600_000 });
    await h().services.attribution.recordEngagement({ workspaceId: ws.id, contactId: contact.id, kind: 'click', campaignId: 'camp-click', occurredAt: orderedAt - 2 * 86_400_000 });
    await deliver(ws, orderPlaced('q@example.com', 'o1', 10, { ordered_at: '2026-03-10T12:00:00Z' }));
    const [order] = await ordersOf(ws);
    expect(order).toMatchObject({ attributed_campaign_id: 'camp-click', attributed_flow_id: null, ordered_at: '2026-03-10T12:00:00.000Z' });
  });

  it('rule 9: an order arriving before the engagement is not re-attributed by later events', async () => {
    const ws = await h().workspace();
    await deliver(ws, orderPlaced('r@example.com', 'o1', 10, { ordered_at: '2026-03-10 12:00:00' }));
    const contact = await contactByEmail(ws, 'r@example.com');
    await h().services.attribution.recordEngagement({
      workspaceId: ws.id,
      contactId: contact.id,
      kind: 'click',
      flowId: 'flow-late',
      occurredAt: Date.parse('2026-03-10T11:00:00Z'),
    });
    await deliver(ws, { event_type: 'fulfilled_order', email: 'r@example.com', order: { external_id: 'o1', status: 'shipped' } });
    const [order] = await ordersOf(ws);
    expect(order.attributed_flow_id).toBeNull();
    expect(order.ordered_at).toBe('2026-03-10T12:00:00.000Z');
  });

  it('rule 9: a cancelled order is reversed; partial refunds subtract (lifetime revenue is net)', async () => {
    const ws = await h().workspace();
    await deliver(ws, orderPlaced('s@example.com', 'o1', 100));
    await deliver(ws, orderPlaced('s@example.com', 'o2', 60));
    await deliver(ws, { event_type: 'refunded_order', email: 's@example.com', external_id: 'ref-1', order: { external_id: 'o1', refund_amount: 30 } });
    await deliver(ws, { event_type: 'refunded_order', email: 's@example.com', external_id: 'ref-2', order: { external_id: 'o1', refund_amount: 20 } });
    let contact = await contactByEmail(ws, 's@example.com');
    expect(contact.lifetime_revenue).toBe(110);
    const [o1] = await ordersOf(ws, '?external_id=o1');
    expect(o1.refunded_amount).toBe(50);
    expect(o1.status).toBe('');
    await deliver(ws, { event_type: 'cancelled_order', email: 's@example.com', order: { external_id: 'o2', status: 'cancelled' } });
    contact = await contactByEmail(ws, 's@example.com');
    expect(contact.lifetime_revenue).toBe(50);
    expect(contact.orders_count).toBe(2);
    const [o2] = await ordersOf(ws, '?external_id=o2');
    expect(o2.cancelled_at).not.toBeNull();
    expect(o2.status).toBe('cancelled');
  });

  it('a refund with no amount refunds the whole order; refunds never exceed the total', async () => {
    const ws = await h().workspace();
    await deliver(ws, orderPlaced('t@example.com', 'o1', 40));
    await deliver(ws, { event_type: 'refunded_order', email: 't@example.com', order: { external_id: 'o1' } });
    expect((await contactByEmail(ws, 't@example.com')).lifetime_revenue).toBe(0);
    await deliver(ws, orderPlaced('t@example.com', 'o2', 40));
    await deliver(ws, { event_type: 'refunded_order', email: 't@example.com', order: { external_id: 'o2', refunded_amount: 500 } });
    const [o2] = await ordersOf(ws, '?external_id=o2');
    expect(o2.refunded_amount).toBe(40);
  });

  // ------------------------------------------------------------------ rule 10

  it('rule 10: webhook orders update lifetime revenue and fire order_placed once per order', async () => {
    const ws = await h().workspace();
    await deliver(ws, orderPlaced('u@example.com', 'o1', 12.5, { items: [{ external_id: 'p1', title: 'Tea', quantity: 2, price: 6.25 }], order_number: '0042' }));
    await deliver(ws, { event_type: 'fulfilled_order', email: 'u@example.com', order: { external_id: 'o1' } });
    const contact = await contactByEmail(ws, 'u@example.com');
    expect(contact).toMatchObject({ lifetime_revenue: 12.5, orders_count: 1 });
    const [order] = await ordersOf(ws);
    expect(order).toMatchObject({ order_number: '0042', currency: 'EUR', items: [{ external_id: 'p1', title: 'Tea', quantity: 2, price: 6.25 }] });
    const triggers = await outbox(ws);
    expect(triggers.map((t) => [t.trigger_type, t.contact_id, t.subject_type, t.subject_id])).toEqual([
      ['order_placed', contact.id, 'order', order.id],
    ]);
  });

  it('order fields: currency empty when omitted (no default), status empty when omitted, ordered_at defaults to now', async () => {
    const ws = await h().workspace();
    await deliver(ws, { event_type: 'order_placed', email: 'v@example.com', order: { external_id: 9001, total_amount: 5 } });
    const [order] = await ordersOf(ws);
    expect(order).toMatchObject({ external_id: '9001', currency: '', status: '' });
    expect(Math.abs(Date.parse(order.ordered_at) - Date.now())).toBeLessThan(60_000);
  });

  // ------------------------------------------------------------------ carts

  it('cart events store the cart (updated in place by cart.external_id) and fire the cart trigger', async () => {
    const ws = await h().workspace();
    const cart = (items: unknown[], total: number) => ({
      event_type: 'added_to_cart',
      email: 'w@example.com',
      cart: { external_id: 'cart-9', total_amount: total, currency: 'EUR', checkout_url: 'https://shop.test/checkout/9', items },
    });
    await deliver(ws, { ...cart([{ external_id: 'p1', quantity: 1 }], 10), external_id: 'add-1' });
    await deliver(ws, { ...cart([{ external_id: 'p1', quantity: 1 }, { external_id: 'p2', quantity: 3 }], 40), external_id: 'add-2' });
    await deliver(ws, { event_type: 'started_checkout', email: 'w@example.com', cart: { external_id: 'cart-9', total_amount: 40, items: [] } });
    const contact = await contactByEmail(ws, 'w@example.com');
    const carts = await h().services.db.knex('carts').where({ workspace_id: ws.id, contact_id: contact.id });
    expect(carts).toHaveLength(1);
    expect(carts[0]).toMatchObject({ external_id: 'cart-9', last_event_type: 'started_checkout' });
    expect(Number(carts[0]!.total_amount)).toBe(40);
    const triggers = (await outbox(ws)).filter((t) => t.trigger_type === 'cart');
    expect(triggers.map((t) => [t.event_name, t.subject_id])).toEqual([
      ['added_to_cart', carts[0]!.id],
      ['added_to_cart', carts[0]!.id],
      ['started_checkout', carts[0]!.id],
    ]);
    // On the timeline, without firing the event trigger as well.
    expect((await outbox(ws)).filter((t) => t.trigger_type === 'event')).toHaveLength(0);
    const events = (await h().request({ method: 'GET', url: `/api/v1/events?contact_id=${contact.id}`, key: ws.apiKey })).json();
    expect(events.data.map((e: { event_name: string }) => e.event_name).sort()).toEqual(['added_to_cart', 'added_to_cart', 'started_checkout']);
  });
});
