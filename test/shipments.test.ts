import { expect, it } from 'vitest';
import { normaliseShippingStatus } from '../src/domain/shipments/shipment.schema.js';
import { describeEachDatabase, type TestWorkspace } from './helpers/harness.js';

describeEachDatabase('shipments and order updates', (h) => {
  const newContact = async (ws: TestWorkspace, email: string) =>
    (await h().request({ method: 'POST', url: '/api/v1/contacts', key: ws.apiKey, json: { email } })).json().id as string;
  const newOrder = async (ws: TestWorkspace, contactId: string, orderNumber: string, externalId?: string) =>
    (
      await h().request({
        method: 'POST',
        url: '/api/v1/ecommerce/orders',
        key: ws.apiKey,
        json: {
          contact_id: contactId,
          platform: 'shop',
          order_number: orderNumber,
          total_amount: 10,
          currency: 'USD',
          status: 'paid',
          ordered_at: '2026-05-01T10:00:00Z',
          ...(externalId ? { external_id: externalId } : {}),
        },
      })
    ).json().id as string;
  const order = async (ws: TestWorkspace, id: string) =>
    (await h().request({ method: 'GET', url: `/api/v1/ecommerce/orders/${id}`, key: ws.apiKey })).json();
  const post = (ws: TestWorkspace, path: string, json: unknown) =>
    h().request({ method: 'POST', url: `/api/v1/events/${path}`, key: ws.apiKey, json });
  const shipment = (originOrderId: string, slug: string, extra: Record<string, unknown> = {}) => ({
    tracking_number: '1Z999',
    shipment_status: { slug },
    order: { origin_order_id: originOrderId },
    carrier: { name: 'UPS' },
    ...extra,
  });
  const outbox = (ws: TestWorkspace, triggerType: string) =>
    h().services.db.knex('trigger_outbox').where({ workspace_id: ws.id, trigger_type: triggerType }).orderBy('id');
  const timeline = async (ws: TestWorkspace, contactId: string) =>
    (await h().request({ method: 'GET', url: `/api/v1/events?contact_id=${contactId}`, key: ws.apiKey })).json().data;
  /** A workspace with one contact and one order numbered 000006775 (external id ext-6775). */
  const setUp = async (email = 'buyer@example.com') => {
    const ws = await h().workspace();
    const contactId = await newContact(ws, email);
    const orderId = await newOrder(ws, contactId, '000006775', 'ext-6775');
    return { ws, contactId, orderId };
  };

  // ------------------------------------------------------------------ slug normalisation

  const SLUGS: Array<[string, string]> = [
    ['Pending', 'pending'],
    ['InfoReceived', 'info_received'],
    ['InTransit', 'in_transit'],
    ['OutForDelivery', 'out_for_delivery'],
    ['Delivered', 'delivered'],
    ['Exception', 'exception'],
    ['AttemptFail', 'failed_attempt'],
    ['FailedAttempt', 'failed_attempt'],
    ['Expired', 'expired'],
  ];

  for (const [slug, canonical] of SLUGS) {
    it(`shipment slug ${slug} sets the Shipping Status ${canonical}, readable on the order`, async () => {
      const { ws, orderId } = await setUp();
      const res = await post(ws, 'shipment', shipment('ext-6775', slug));
      expect(res.statusCode).toBe(200);
      expect((await order(ws, orderId)).shipping_status).toBe(canonical);
    });
  }

  it('tracking_status is compared format-insensitively', () => {
    for (const value of ['Info Received', 'InfoReceived', 'info_received', 'INFO-RECEIVED', ' info.received ']) {
      expect(normaliseShippingStatus(value), value).toBe('info_received');
    }
    expect(normaliseShippingStatus('out for delivery')).toBe('out_for_delivery');
    expect(normaliseShippingStatus('attempt_fail')).toBe('failed_attempt');
    expect(normaliseShippingStatus('lost in space')).toBeNull();
    expect(normaliseShippingStatus(7)).toBeNull();
  });

  // ------------------------------------------------------------------ POST /api/v1/events/shipment

  it('shipment: the reply, the event on the contact timeline (properties = body) and the trigger with the platform source', async () => {
    const { ws, contactId } = await setUp('ship@example.com');
    const body = shipment('ext-6775', 'InTransit', {
      customer: { email: 'SHIP@example.com' },
      order: { origin_order_id: 'ext-6775', site: { platform: { slug: 'shopify' } } },
    });
    const res = await post(ws, 'shipment', body);
    expect(res.statusCode).toBe(200);
    const reply = res.json();
    expect(reply).toEqual({ status: 'processed', event_id: reply.event_id, event_type: 'shipping_information', has_contact: true });
    const events = await timeline(ws, contactId);
    expect(events).toHaveLength(1);
    expect(events[0]).toMatchObject({ id: reply.event_id, event_name: 'shipping_information', properties: body, source: 'shopify' });
    const triggers = await outbox(ws, 'shipping_information');
    expect(triggers).toHaveLength(1);
    expect(triggers[0]).toMatchObject({ contact_id: contactId, source: 'shopify', subject_type: 'shipment', subject_id: reply.event_id });
    // Only the shipping_information trigger, not the custom-event one.
    expect(await outbox(ws, 'event')).toHaveLength(0);
  });

  it('shipment: without a platform slug the source is null', async () => {
    const { ws } = await setUp();
    await post(ws, 'shipment', shipment('ext-6775', 'Delivered'));
    expect((await outbox(ws, 'shipping_information'))[0].source).toBeNull();
  });

  it('shipment: origin_order_id matches external_id, or order_number ignoring zero padding, both ways', async () => {
    const ws = await h().workspace();
    const contactId = await newContact(ws, 'pad@example.com');
    const padded = await newOrder(ws, contactId, '000006775', 'ext-a');
    const plain = await newOrder(ws, contactId, '4242', 'ext-b');
    await post(ws, 'shipment', shipment('6775', 'InTransit'));
    expect((await order(ws, padded)).shipping_status).toBe('in_transit');
    await post(ws, 'shipment', shipment('0004242', 'Delivered'));
    expect((await order(ws, plain)).shipping_status).toBe('delivered');
    await post(ws, 'shipment', shipment('ext-a', 'Exception'));
    expect((await order(ws, padded)).shipping_status).toBe('exception');
    // A number is taken as text.
    await post(ws, 'shipment', shipment(6775 as unknown as string, 'Expired'));
    expect((await order(ws, padded)).shipping_status).toBe('expired');
    expect((await order(ws, plain)).shipping_status).toBe('delivered');
  });

  it("shipment: an unseen customer.email creates a non_subscribed contact that owns the event; has_contact true", async () => {
    const { ws, contactId: orderOwner } = await setUp();
    const res = await post(ws, 'shipment', shipment('ext-6775', 'Pending', { customer: { email: 'new@example.com' } }));
    expect(res.json().has_contact).toBe(true);
    const found = (await h().request({ method: 'GET', url: '/api/v1/contacts?email=new@example.com', key: ws.apiKey })).json().data;
    expect(found).toHaveLength(1);
    expect(found[0]).toMatchObject({ subscription_status: 'non_subscribed', source: 'shipment' });
    expect(await timeline(ws, found[0].id)).toHaveLength(1);
    expect(await timeline(ws, orderOwner)).toHaveLength(0);
    expect((await outbox(ws, 'shipping_information'))[0].contact_id).toBe(found[0].id);
  });

  it("shipment: no customer.email uses the matched order's contact; has_contact true", async () => {
    const { ws, contactId } = await setUp();
    const res = await post(ws, 'shipment', shipment('6775', 'OutForDelivery'));
    expect(res.json().has_contact).toBe(true);
    expect((await timeline(ws, contactId)).map((e: { event_name: string }) => e.event_name)).toEqual(['shipping_information']);
    expect((await outbox(ws, 'shipping_information'))[0].contact_id).toBe(contactId);
  });

  it("shipment: an email the workspace's contact limit refuses falls back to the order's contact", async () => {
    const { ws, contactId } = await setUp();
    await h().request({ method: 'PATCH', url: '/api/v1/settings', key: ws.apiKey, json: { contact_limit: 1 } });
    const res = await post(ws, 'shipment', shipment('ext-6775', 'Delivered', { customer: { email: 'over@example.com' } }));
    expect(res.json().has_contact).toBe(true);
    expect((await timeline(ws, contactId)).map((e: { id: string }) => e.id)).toEqual([res.json().event_id]);
    const over = (await h().request({ method: 'GET', url: '/api/v1/contacts?email=over@example.com', key: ws.apiKey })).json();
    expect(over.meta.total).toBe(0);
  });

  it('shipment: no order matched and no email is still processed: the event is stored without a contact, nothing else changes', async () => {
    const { ws, orderId } = await setUp();
    const res = await post(ws, 'shipment', shipment('nope-1', 'Delivered'));
    expect(res.statusCode).toBe(200);
    expect(res.json()).toMatchObject({ status: 'processed', event_type: 'shipping_information', has_contact: false });
    expect((await order(ws, orderId)).shipping_status).toBeNull();
    const stored = await h().services.db.knex('events').where({ workspace_id: ws.id });
    expect(stored).toHaveLength(1);
    expect(stored[0]).toMatchObject({ id: res.json().event_id, contact_id: null });
    expect(await outbox(ws, 'shipping_information')).toHaveLength(0);
  });

  it('shipment: no order matched but an email: the contact gets the event and the trigger; no order changes', async () => {
    const { ws, orderId, contactId } = await setUp('known@example.com');
    const res = await post(ws, 'shipment', shipment('nope-2', 'Delivered', { customer: { email: 'known@example.com' } }));
    expect(res.json().has_contact).toBe(true);
    expect((await order(ws, orderId)).shipping_status).toBeNull();
    expect(await timeline(ws, contactId)).toHaveLength(1);
    expect(await outbox(ws, 'shipping_information')).toHaveLength(1);
  });

  it('shipment: an unknown slug or a missing required field is 400 naming the field, and nothing is written', async () => {
    const { ws, orderId } = await setUp();
    const cases: Array<[unknown, RegExp]> = [
      [shipment('ext-6775', 'Teleported'), /^invalid request: shipment_status\.slug must be one of /],
      [{ order: { origin_order_id: 'ext-6775' } }, /^invalid request: shipment_status\.slug is required/],
      [{ ...shipment('ext-6775', 'Pending'), shipment_status: {} }, /^invalid request: shipment_status\.slug is required/],
      [{ shipment_status: { slug: 'Pending' } }, /^invalid request: order\.origin_order_id/],
      [{ shipment_status: { slug: 'Pending' }, order: { origin_order_id: '' } }, /^invalid request: order\.origin_order_id/],
      [shipment('ext-6775', 'Pending', { customer: { email: 'not-an-email' } }), /^invalid request: customer\.email/],
    ];
    for (const [body, error] of cases) {
      const res = await post(ws, 'shipment', body);
      expect(res.statusCode, JSON.stringify(body)).toBe(400);
      expect(res.json().error).toMatch(error);
    }
    expect((await order(ws, orderId)).shipping_status).toBeNull();
    expect(await h().services.db.knex('events').where({ workspace_id: ws.id })).toHaveLength(0);
  });

  it('shipment: another workspace with the same order number is untouched; its key cannot reach this order', async () => {
    const a = await setUp('iso@example.com');
    const b = await setUp('iso@example.com');
    await post(a.ws, 'shipment', shipment('6775', 'Delivered', { customer: { email: 'iso@example.com' } }));
    expect((await order(a.ws, a.orderId)).shipping_status).toBe('delivered');
    expect((await order(b.ws, b.orderId)).shipping_status).toBeNull();
    expect(await timeline(b.ws, b.contactId)).toHaveLength(0);
    expect(await outbox(b.ws, 'shipping_information')).toHaveLength(0);
  });

  it('shipment: a key is required', async () => {
    const res = await h().request({ method: 'POST', url: '/api/v1/events/shipment', json: shipment('1', 'Pending') });
    expect(res.statusCode).toBe(401);
  });

  // ------------------------------------------------------------------ shipping_information through POST /api/v1/events

  const track = (ws: TestWorkspace, contactId: string, properties: Record<string, unknown>, source?: string) =>
    h().request({
      method: 'POST',
      url: '/api/v1/events',
      key: ws.apiKey,
      json: { contact_id: contactId, event_name: 'shipping_information', properties, ...(source ? { source } : {}) },
    });

  it('POST /events shipping_information: order_number 6775 matches 000006775 and tracking_status sets the status', async () => {
    const { ws, contactId, orderId } = await setUp();
    const res = await track(ws, contactId, { order_number: '6775', tracking_status: 'In Transit' }, 'shopify');
    expect(res.statusCode).toBe(201);
    expect((await order(ws, orderId)).shipping_status).toBe('in_transit');
    // Fires the shipping_information trigger (with the event's source), not the custom-event one.
    const triggers = await outbox(ws, 'shipping_information');
    expect(triggers).toHaveLength(1);
    expect(triggers[0]).toMatchObject({ contact_id: contactId, source: 'shopify', subject_id: res.json().id });
    expect(await outbox(ws, 'event')).toHaveLength(0);
    expect((await timeline(ws, contactId)).map((e: { id: string }) => e.id)).toEqual([res.json().id]);
  });

  it('POST /events shipping_information: zero padding the other way, a numeric order_number, and external_id', async () => {
    const ws = await h().workspace();
    const contactId = await newContact(ws, 'pad2@example.com');
    const plain = await newOrder(ws, contactId, '6775', 'ext-x');
    const other = await newOrder(ws, contactId, '81', '0000512');
    await track(ws, contactId, { order_number: '000006775', tracking_status: 'delivered' });
    expect((await order(ws, plain)).shipping_status).toBe('delivered');
    await track(ws, contactId, { order_number: 6775, tracking_status: 'Exception' });
    expect((await order(ws, plain)).shipping_status).toBe('exception');
    await track(ws, contactId, { order_number: '0000512', tracking_status: 'expired' });
    expect((await order(ws, other)).shipping_status).toBe('expired');
    expect((await order(ws, plain)).shipping_status).toBe('exception');
  });

  for (const [sent, canonical] of [
    ['Info Received', 'info_received'],
    ['InfoReceived', 'info_received'],
    ['info_received', 'info_received'],
    ['INFO-RECEIVED', 'info_received'],
    ['Out For Delivery', 'out_for_delivery'],
    ['AttemptFail', 'failed_attempt'],
    ['failed attempt', 'failed_attempt'],
    ['PENDING', 'pending'],
  ] as const) {
    it(`POST /events shipping_information: tracking_status "${sent}" → ${canonical}`, async () => {
      const { ws, contactId, orderId } = await setUp();
      await track(ws, contactId, { order_number: '000006775', tracking_status: sent });
      expect((await order(ws, orderId)).shipping_status).toBe(canonical);
    });
  }

  it('POST /events shipping_information: an unknown tracking_status or a missing property leaves the status; the event is still stored and fires', async () => {
    const { ws, contactId, orderId } = await setUp();
    await track(ws, contactId, { order_number: '6775', tracking_status: 'Delivered' });
    for (const properties of [
      { order_number: '6775', tracking_status: 'Lost at sea' },
      { order_number: '6775' },
      { tracking_status: 'Pending' },
      { order_number: '9999', tracking_status: 'Pending' },
      { order_number: { n: 1 }, tracking_status: 'Pending' },
    ]) {
      expect((await track(ws, contactId, properties)).statusCode).toBe(201);
    }
    expect((await order(ws, orderId)).shipping_status).toBe('delivered');
    expect(await outbox(ws, 'shipping_information')).toHaveLength(6);
  });

  it('other event names with the same properties change no order', async () => {
    const { ws, contactId, orderId } = await setUp();
    await h().request({
      method: 'POST',
      url: '/api/v1/events',
      key: ws.apiKey,
      json: { contact_id: contactId, event_name: 'Shipping Information', properties: { order_number: '6775', tracking_status: 'Delivered' } },
    });
    expect((await order(ws, orderId)).shipping_status).toBeNull();
  });

  it('the public Collect API cannot change an order: a collected shipping_information event is stored but sets nothing', async () => {
    const { ws, contactId, orderId } = await setUp();
    const res = await h().request({
      method: 'POST',
      url: '/collect/event',
      json: { site_id: ws.siteId, contact_id: contactId, event_name: 'shipping_information', properties: { order_number: '6775', tracking_status: 'Delivered' } },
    });
    expect(res.statusCode).toBe(200);
    expect((await order(ws, orderId)).shipping_status).toBeNull();
  });

  it('POST /events shipping_information for an unknown contact is 404 and changes no order', async () => {
    const { ws, orderId } = await setUp();
    expect((await track(ws, 'missing', { order_number: '6775', tracking_status: 'Delivered' })).statusCode).toBe(404);
    expect((await order(ws, orderId)).shipping_status).toBeNull();
  });

  it("POST /events shipping_information never reaches another workspace's order", async () => {
    const a = await setUp();
    const b = await setUp();
    await track(a.ws, a.contactId, { order_number: '6775', tracking_status: 'Delivered' });
    expect((await order(a.ws, a.orderId)).shipping_status).toBe('delivered');
    expect((await order(b.ws, b.orderId)).shipping_status).toBeNull();
  });

  it('a group of events (as the batch endpoint writes them) is applied set-based; the last event for an order wins', async () => {
    const a = await setUp();
    const b = await setUp();
    const second = await newOrder(a.ws, a.contactId, '12', 'ext-12');
    const write = (workspaceId: string, contactId: string, properties: Record<string, unknown>, eventName = 'shipping_information') => ({
      workspaceId,
      owner: { contactId },
      eventName,
      properties,
      source: null,
      occurredAt: Date.now(),
      fireTrigger: true,
      contactSource: 'test',
    });
    const results = await h().services.writer.run((trx) =>
      h().services.events.recordEvents(trx, [
        write(a.ws.id, a.contactId, { order_number: '6775', tracking_status: 'InTransit' }),
        write(a.ws.id, a.contactId, { order_number: '012', tracking_status: 'pending' }),
        write(b.ws.id, b.contactId, { order_number: 'ext-6775', tracking_status: 'exception' }),
        write(a.ws.id, a.contactId, { order_number: '0006775', tracking_status: 'out_for_delivery' }),
        write(a.ws.id, 'missing', { order_number: 'ext-12', tracking_status: 'expired' }),
        write(a.ws.id, a.contactId, { order_number: '12', tracking_status: 'delivered' }, 'custom'),
      ]),
    );
    expect(results.map((r) => 'record' in r)).toEqual([true, true, true, true, false, true]);
    expect((await order(a.ws, a.orderId)).shipping_status).toBe('out_for_delivery');
    expect((await order(a.ws, second)).shipping_status).toBe('pending');
    expect((await order(b.ws, b.orderId)).shipping_status).toBe('exception');
  });

  it('POST /events/batch shipping_information sets the Shipping Status; an unknown email changes nothing', async () => {
    const { ws, orderId, contactId } = await setUp('batch@example.com');
    const second = await newOrder(ws, contactId, '00042', 'ext-42');
    const res = await h().request({
      method: 'POST',
      url: '/api/v1/events/batch',
      key: ws.apiKey,
      json: {
        events: [
          { email: 'BATCH@example.com', event_name: 'shipping_information', properties: { order_number: '6775', tracking_status: 'Info Received' }, source: 'shopify' },
          { email: 'nobody@example.com', event_name: 'shipping_information', properties: { order_number: '42', tracking_status: 'Delivered' } },
        ],
      },
    });
    expect(res.statusCode).toBe(200);
    expect(res.json()).toMatchObject({ processed: 1, errors: [{ index: 1 }] });
    expect((await order(ws, orderId)).shipping_status).toBe('info_received');
    expect((await order(ws, second)).shipping_status).toBeNull();
    const triggers = await outbox(ws, 'shipping_information');
    expect(triggers).toHaveLength(1);
    expect(triggers[0]).toMatchObject({ contact_id: contactId, source: 'shopify' });
  });

  // ------------------------------------------------------------------ POST /api/v1/events/order-update

  const ORDER_UPDATES: Array<[string, string | null]> = [
    ['delivered', 'Delivered'],
    ['complete', 'Delivered'],
    ['cancelled', 'Canceled'],
    ['processing', null],
  ];
  for (const [slug, label] of ORDER_UPDATES) {
    it(`order-update ${slug}: Shipping Status ${label ?? 'unchanged'}, order_updated fires, the documented reply`, async () => {
      const { ws, orderId, contactId } = await setUp();
      await post(ws, 'shipment', shipment('ext-6775', 'InTransit'));
      const res = await post(ws, 'order-update', { origin_order_id: '6775', order_status: { slug, name: slug.toUpperCase() } });
      expect(res.statusCode).toBe(200);
      const expected = label ?? 'in_transit';
      expect(res.json()).toEqual({ status: 'processed', order_id: orderId, shipping_status: expected, has_contact: true });
      expect((await order(ws, orderId)).shipping_status).toBe(expected);
      const triggers = await outbox(ws, 'order_updated');
      expect(triggers).toHaveLength(1);
      expect(triggers[0]).toMatchObject({ contact_id: contactId, subject_type: 'order', subject_id: orderId });
    });
  }

  it('order-update fires order_updated every time, also when nothing changes', async () => {
    const { ws } = await setUp();
    for (const slug of ['delivered', 'delivered', 'on-hold']) {
      expect((await post(ws, 'order-update', { origin_order_id: 'ext-6775', order_status: { slug } })).statusCode).toBe(200);
    }
    expect(await outbox(ws, 'order_updated')).toHaveLength(3);
  });

  it("order-update: customer.email's existing contact gets the trigger; an unknown email is not created and falls back to the order's contact", async () => {
    const { ws, contactId } = await setUp('owner@example.com');
    const other = await newContact(ws, 'other@example.com');
    const res = await post(ws, 'order-update', {
      origin_order_id: 'ext-6775',
      order_status: { slug: 'processing' },
      customer: { email: 'OTHER@example.com' },
    });
    expect(res.json().has_contact).toBe(true);
    await post(ws, 'order-update', { origin_order_id: 'ext-6775', order_status: { slug: 'processing' }, customer: { email: 'ghost@example.com' } });
    expect((await outbox(ws, 'order_updated')).map((t) => t.contact_id)).toEqual([other, contactId]);
    const ghost = (await h().request({ method: 'GET', url: '/api/v1/contacts?email=ghost@example.com', key: ws.apiKey })).json();
    expect(ghost.meta.total).toBe(0);
  });

  it('order-update: no order matched → order_id and shipping_status null; with a known email the trigger still fires', async () => {
    const { ws, contactId, orderId } = await setUp('nomatch@example.com');
    const withEmail = await post(ws, 'order-update', {
      origin_order_id: 'missing',
      order_status: { slug: 'delivered' },
      customer: { email: 'nomatch@example.com' },
    });
    expect(withEmail.json()).toEqual({ status: 'processed', order_id: null, shipping_status: null, has_contact: true });
    const triggers = await outbox(ws, 'order_updated');
    expect(triggers).toHaveLength(1);
    expect(triggers[0].contact_id).toBe(contactId);
    expect((await order(ws, orderId)).shipping_status).toBeNull();
  });

  it('order-update: neither an order nor a contact → processed, has_contact false, no trigger (nobody to enrol)', async () => {
    const { ws } = await setUp();
    const res = await post(ws, 'order-update', { origin_order_id: 'missing', order_status: { slug: 'cancelled' } });
    expect(res.json()).toEqual({ status: 'processed', order_id: null, shipping_status: null, has_contact: false });
    expect(await outbox(ws, 'order_updated')).toHaveLength(0);
  });

  it('order-update: missing fields are 400 naming them', async () => {
    const { ws } = await setUp();
    const cases: Array<[unknown, RegExp]> = [
      [{ order_status: { slug: 'delivered' } }, /^invalid request: origin_order_id/],
      [{ origin_order_id: '1' }, /^invalid request: order_status\.slug is required/],
      [{ origin_order_id: '1', order_status: { slug: '' } }, /^invalid request: order_status\.slug must not be empty/],
      [{ origin_order_id: '1', order_status: { slug: 'x' }, customer: { email: 'nope' } }, /^invalid request: customer\.email/],
    ];
    for (const [body, error] of cases) {
      const res = await post(ws, 'order-update', body);
      expect(res.statusCode, JSON.stringify(body)).toBe(400);
      expect(res.json().error).toMatch(error);
    }
    expect(await outbox(ws, 'order_updated')).toHaveLength(0);
  });

  it("order-update: another workspace's order with the same number is untouched", async () => {
    const a = await setUp();
    const b = await setUp();
    const res = await post(a.ws, 'order-update', { origin_order_id: '6775', order_status: { slug: 'cancelled' } });
    expect(res.json().order_id).toBe(a.orderId);
    expect((await order(b.ws, b.orderId)).shipping_status).toBeNull();
    expect(await outbox(b.ws, 'order_updated')).toHaveLength(0);
  });
});
