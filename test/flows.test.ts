import { expect, it } from 'vitest';
import { startWorker, workerOptionsFor } from '../src/worker/worker.js';
import { eventually } from './helpers/browser.js';
import { describeEachDatabase, type TestWorkspace } from './helpers/harness.js';
import { sendingHelpers } from './helpers/sending.js';

type Row = Record<string, any>;

describeEachDatabase('flows', (h) => {
  const { api, contact, work, messagesOf } = sendingHelpers(h);
  const knex = () => h().services.db.knex;

  const EMAIL = { type: 'email', subject: 'Hi {{ contact.first_name }}', html: '<p>Hello {{ contact.first_name }}</p>' };

  async function flow(ws: TestWorkspace, fields: Record<string, unknown>): Promise<string> {
    const reply = await api(ws, 'POST', '/flows', { name: 'Flow', status: 'live', steps: [EMAIL], ...fields });
    if (reply.statusCode !== 201) throw new Error(reply.body);
    return reply.json().id;
  }
  const enrollments = async (ws: TestWorkspace, flowId: string): Promise<Row[]> =>
    (await api(ws, 'GET', `/flows/${flowId}/enrollments?perPage=500`)).json().data;
  const event = async (ws: TestWorkspace, contactId: string, eventName: string, extra: Record<string, unknown> = {}) => {
    const reply = await api(ws, 'POST', '/events', { contact_id: contactId, event_name: eventName, ...extra });
    if (reply.statusCode >= 300) throw new Error(reply.body);
    return reply.json();
  };
  const webhook = (ws: TestWorkspace, body: Record<string, unknown>) =>
    h().request({ method: 'POST', url: `/ecom/website/${ws.integrationId}`, headers: { authorization: `Bearer ${ws.integrationKey}` }, json: body });
  let orderCount = 0;
  const webhookOrder = (ws: TestWorkspace, email: string, extra: Record<string, unknown> = {}) => {
    const n = ++orderCount;
    return webhook(ws, {
      event_type: 'order_placed',
      external_id: `evt-order-${n}`,
      email,
      order: { external_id: `order-${n}`, order_number: `#10${n}`, total_amount: 42.5, currency: 'EUR', status: 'paid', ...extra },
    });
  };
  let cartCount = 0;
  const cartEvent = (ws: TestWorkspace, email: string, cartId: string) =>
    webhook(ws, {
      event_type: 'added_to_cart',
      external_id: `evt-cart-${++cartCount}`,
      email,
      cart: { external_id: cartId, total_amount: 19.9, currency: 'EUR', checkout_url: `https://shop.test/checkout/${cartId}`, items: [] },
    });
  const emailOf = async (ws: TestWorkspace, contactId: string) => (await api(ws, 'GET', `/contacts/${contactId}`)).json().email as string;
  /** A worker running in this process, as `emk serve` runs it, for tests of waits and wake-ups. */
  const running = () => startWorker(workerOptionsFor(h().services, { onFailure: () => {}, pollMs: 50 }));

  // ------------------------------------------------------------------ records and checks at save

  it('create checks trigger, steps, templates and options, naming the place; nothing is stored on a 400', async () => {
    const ws = await h().workspace();
    const bad: Array<[Record<string, unknown>, RegExp]> = [
      [{ trigger: { type: 'event', event_name: 'x' }, steps: [] , name: '' }, /name/],
      [{ trigger: { type: 'nope' } }, /trigger\.type/],
      [{ trigger: { type: 'event' } }, /trigger\.event_name/],
      [{ trigger: { type: 'abandoned_cart', delay_minutes: -1 } }, /trigger\.delay_minutes/],
      [{ trigger: { type: 'segment_entered', segment_id: 'no-such-segment' } }, /trigger\.segment_id/],
      [{ trigger: { type: 'order_placed' }, steps: [EMAIL, { type: 'email', subject: 'S', html: '{% if %}' }] }, /^steps\[1\]\.html: /],
      [{ trigger: { type: 'order_placed' }, steps: [{ type: 'email', subject: '{{ x', html: 'x' }] }, /^steps\[0\]\.subject: /],
      [{ trigger: { type: 'order_placed' }, steps: [{ type: 'delay', minutes: -2 }] }, /steps\[0\]\.minutes/],
      [{ trigger: { type: 'order_placed' }, steps: [{ type: 'sms' }] }, /steps\[0\]\.type/],
      [{ trigger: { type: 'order_placed' }, message_type: 'newsletter' }, /message_type/],
      [{ trigger: { type: 'order_placed' }, reentry: 'sometimes' }, /reentry/],
      [{ trigger: { type: 'order_placed' }, smart_sending_hours: -1 }, /smart_sending_hours/],
      [{ trigger: { type: 'order_placed' }, status: 'running' }, /status/],
    ];
    for (const [body, message] of bad) {
      const reply = await api(ws, 'POST', '/flows', { name: 'F', ...body });
      expect(reply.statusCode, JSON.stringify(body)).toBe(400);
      expect(reply.json().error, JSON.stringify(body)).toMatch(message);
    }
    expect((await api(ws, 'GET', '/flows')).json().meta.total).toBe(0);
  });

  it('flows are read, listed, changed and deleted; defaults; aliases normalised; other workspaces see 404', async () => {
    const ws = await h().workspace();
    const created = await api(ws, 'POST', '/flows', { name: 'Browse', trigger: { type: 'event', event_name: 'product_viewed' } });
    expect(created.statusCode).toBe(201);
    const id = created.json().id;
    expect(created.json()).toMatchObject({
      name: 'Browse',
      status: 'draft',
      trigger: { type: 'event', event_name: 'viewed_product' },
      steps: [],
      message_type: 'marketing',
      reentry: 'always',
      filters: null,
      smart_sending_hours: 0,
    });
    const patched = await api(ws, 'PATCH', `/flows/${id}`, { name: 'Browse again', steps: [{ type: 'delay', minutes: 0.5 }, EMAIL], reentry: 'once' });
    expect(patched.json()).toMatchObject({ name: 'Browse again', reentry: 'once', status: 'draft', steps: [{ type: 'delay', minutes: 0.5 }, { type: 'email' }] });
    expect((await api(ws, 'PATCH', `/flows/${id}`, { steps: [{ type: 'email', subject: 's', html: '{% for %}' }] })).json().error).toMatch(/^steps\[0\]\.html/);
    expect((await api(ws, 'GET', `/flows/${id}`)).json().name).toBe('Browse again');
    expect((await api(ws, 'GET', '/flows')).json().data.map((f: Row) => f.id)).toEqual([id]);
    const other = await h().workspace();
    expect((await api(other, 'GET', `/flows/${id}`)).statusCode).toBe(404);
    expect((await api(other, 'PATCH', `/flows/${id}`, { name: 'x' })).statusCode).toBe(404);
    expect((await api(other, 'GET', `/flows/${id}/enrollments`)).statusCode).toBe(404);
    expect((await api(ws, 'DELETE', `/flows/${id}`)).statusCode).toBe(204);
    for (const path of [`/flows/${id}`, `/flows/${id}/enrollments`, `/flows/${id}/report`]) expect((await api(ws, 'GET', path)).statusCode).toBe(404);
    expect((await api(ws, 'GET', '/flows')).json().meta.total).toBe(0);
  });

  // ------------------------------------------------------------------ triggers

  it('an event enrols live flows of its canonical name (aliases, custom names); drafts and paused flows do not enrol', async () => {
    const ws = await h().workspace();
    const ann = await contact(ws, 'subscribed', { first_name: 'Ann' });
    const viewed = await flow(ws, {
      trigger: { type: 'event', event_name: 'viewed_product' },
      steps: [{ type: 'email', subject: 'About {{ event.properties.product_id }}', html: '<p>{{ event.name }} at {{ event.created_at }}</p>' }],
    });
    const custom = await flow(ws, { trigger: { type: 'event', event_name: 'Wishlist Added' } });
    const draft = await flow(ws, { status: 'draft', trigger: { type: 'event', event_name: 'viewed_product' } });
    const paused = await flow(ws, { status: 'paused', trigger: { type: 'event', event_name: 'viewed_product' } });

    const stored = await event(ws, ann, 'product_viewed', { properties: { product_id: 'SKU-1' } });
    await event(ws, ann, 'Wishlist Added');
    await work();

    const [enrolment] = await enrollments(ws, viewed);
    expect(enrolment).toMatchObject({ contact_id: ann, trigger_event_id: stored.id, status: 'completed', current_step: 1, exit_reason: null });
    const [message] = await messagesOf(ws, `flow_id=${viewed}`);
    expect(message).toMatchObject({ contact_id: ann, status: 'captured', subject: 'About SKU-1', enrollment_id: enrolment!.id, campaign_id: null });
    expect(message!.html).toContain(`viewed_product at ${stored.created_at}`);
    expect(await enrollments(ws, custom)).toHaveLength(1);
    // The live flows of the same trigger enrolled in the same pass: the others had their chance.
    expect(await enrollments(ws, draft)).toEqual([]);
    expect(await enrollments(ws, paused)).toEqual([]);
    // Every fact was consumed once.
    const pending = await knex()('trigger_outbox').where({ workspace_id: ws.id }).whereNull('processed_at');
    expect(pending).toEqual([]);
  });

  it('POST /events/batch fires; PUT /events/batch (even when it inserts) does not', async () => {
    const ws = await h().workspace();
    const email = 'batch@example.com';
    const who = await contact(ws, 'subscribed', {}, email);
    const id = await flow(ws, { trigger: { type: 'event', event_name: 'quiz_done' } });
    const put = await api(ws, 'PUT', '/events/batch', { upsert: true, events: [{ email, event_name: 'quiz_done', dedupe_key: 'q-1' }] });
    expect(put.json()).toMatchObject({ inserted: 1 });
    await work();
    // Barrier: a later POST batch enrols, so the PUT was seen and did not.
    const post = await api(ws, 'POST', '/events/batch', { events: [{ email, event_name: 'quiz_done', properties: { n: 2 } }] });
    expect(post.json()).toMatchObject({ processed: 1 });
    await work();
    const rows = await enrollments(ws, id);
    expect(rows).toHaveLength(1);
    expect(rows[0]!.contact_id).toBe(who);
  });

  it('order_placed enrols for webhook and direct orders, and the template sees the order', async () => {
    const ws = await h().workspace();
    const email = 'buyer@example.com';
    const buyer = await contact(ws, 'subscribed', { first_name: 'Bea' }, email);
    const id = await flow(ws, {
      trigger: { type: 'order_placed' },
      message_type: 'transactional',
      steps: [{ type: 'email', subject: 'Order {{ order.id }}', html: '<p>{{ order.total_amount }} {{ order.currency }} ({{ order.status }}, {{ order.external_id }})</p>' }],
    });
    expect((await webhookOrder(ws, email)).json().status).toBe('processed');
    const direct = await api(ws, 'POST', '/ecommerce/orders', {
      contact_id: buyer,
      platform: 'pos',
      order_number: 'POS-7',
      total_amount: 10,
      currency: 'USD',
      status: 'paid',
      ordered_at: new Date().toISOString(),
    });
    expect(direct.statusCode).toBe(201);
    await work();
    expect(await enrollments(ws, id)).toHaveLength(2);
    const subjects = (await messagesOf(ws, `flow_id=${id}`)).map((m) => m.subject).sort();
    expect(subjects).toEqual(['Order #101'.replace('101', `10${orderCount}`), 'Order POS-7'].sort());
    const webhookMessage = (await messagesOf(ws, `flow_id=${id}`)).find((m) => m.subject !== 'Order POS-7')!;
    expect(webhookMessage.html).toContain(`42.5 EUR (paid, order-${orderCount})`);
  });

  it('order_updated enrols on POST /events/order-update', async () => {
    const ws = await h().workspace();
    const email = 'upd@example.com';
    await contact(ws, 'subscribed', {}, email);
    await webhookOrder(ws, email);
    const id = await flow(ws, { trigger: { type: 'order_updated' }, message_type: 'transactional' });
    const reply = await api(ws, 'POST', '/events/order-update', { origin_order_id: `order-${orderCount}`, order_status: { slug: 'delivered' }, customer: { email } });
    expect(reply.json()).toMatchObject({ shipping_status: 'Delivered', has_contact: true });
    await work();
    expect(await enrollments(ws, id)).toHaveLength(1);
  });

  it('shipping_information enrols only on an exact source filter or "all"; the custom-event trigger never fires; the status updates either way', async () => {
    const ws = await h().workspace();
    const email = 'ship@example.com';
    const who = await contact(ws, 'subscribed', {}, email);
    await webhookOrder(ws, email, { order_number: '000006775' });
    const exact = await flow(ws, { trigger: { type: 'shipping_information', source_filter: 'aftership' } });
    const other = await flow(ws, { trigger: { type: 'shipping_information', source_filter: 'AfterShip' } });
    const all = await flow(ws, { trigger: { type: 'shipping_information', source_filter: 'all' } });
    const generic = await flow(ws, { trigger: { type: 'event', event_name: 'shipping_information' } });
    await event(ws, who, 'shipping_information', { source: 'aftership', properties: { order_number: '6775', tracking_status: 'In Transit' } });
    await work();
    expect(await enrollments(ws, exact)).toHaveLength(1);
    expect(await enrollments(ws, all)).toHaveLength(1);
    expect(await enrollments(ws, other)).toEqual([]);
    expect(await enrollments(ws, generic)).toEqual([]);
    const [order] = (await api(ws, 'GET', `/ecommerce/orders?contact_id=${who}`)).json().data;
    expect(order.shipping_status).toBe('in_transit');
  });

  it('email_opened and email_clicked trigger flows', async () => {
    const ws = await h().workspace();
    const who = await contact(ws, 'subscribed');
    const welcome = await flow(ws, { trigger: { type: 'event', event_name: 'signed_up' }, steps: [{ type: 'email', subject: 'Welcome', html: '<a href="https://shop.test/a">A</a>' }] });
    const opened = await flow(ws, { trigger: { type: 'event', event_name: 'email_opened' }, steps: [] });
    const clicked = await flow(ws, { trigger: { type: 'event', event_name: 'email_clicked' }, steps: [] });
    await event(ws, who, 'signed_up');
    await work();
    const [message] = await messagesOf(ws, `flow_id=${welcome}`);
    const pixel = /\/t\/o\/[^"]+/.exec(message!.html)![0];
    const link = /\/t\/c\/[^"]+/.exec(message!.html)![0];
    expect((await h().request({ method: 'GET', url: pixel })).statusCode).toBe(200);
    expect((await h().request({ method: 'GET', url: link })).statusCode).toBe(302);
    await eventually(
      async () => {
        await work();
        return (await enrollments(ws, opened)).length + (await enrollments(ws, clicked)).length;
      },
      (n) => n === 2,
    );
  });

  it('segment_entered enrols those who enter after the flow went live, not those already in the segment', async () => {
    const ws = await h().workspace();
    const early = await contact(ws, 'subscribed');
    const late = await contact(ws, 'subscribed');
    await event(ws, early, 'joined_club');
    await work();
    const segment = await api(ws, 'POST', '/segments', { name: 'Club', conditions: { all: [{ event: 'joined_club', count: { gte: 1 } }] } });
    expect(segment.statusCode).toBe(201);
    const id = await flow(ws, { trigger: { type: 'segment_entered', segment_id: segment.json().id } });
    await event(ws, late, 'joined_club');
    await work();
    const rows = await enrollments(ws, id);
    expect(rows.map((e) => e.contact_id)).toEqual([late]);
    expect(rows[0]!.status).toBe('completed');
  });

  it('filters are checked at enrolment and before each email step (exit reason filters); bad filters are a 400 naming the place', async () => {
    const ws = await h().workspace();
    const bad = await api(ws, 'POST', '/flows', { name: 'F', trigger: { type: 'order_placed' }, filters: { all: [{ property: 'vip', operator: 'is' }] } });
    expect(bad.statusCode).toBe(400);
    expect(bad.json().error).toMatch(/filters\.all\[0\]\.operator/);
    const vip = await contact(ws, 'subscribed', { vip: 'yes' });
    const other = await contact(ws, 'subscribed', { vip: 'no' });
    const id = await flow(ws, {
      trigger: { type: 'event', event_name: 'browse' },
      filters: { all: [{ property: 'vip', operator: 'equals', value: 'yes' }] },
      steps: [{ type: 'delay', minutes: 60 }, EMAIL],
    });
    await event(ws, vip, 'browse');
    await event(ws, other, 'browse');
    await work();
    const rows = await enrollments(ws, id);
    expect(rows.map((e) => e.contact_id)).toEqual([vip]);
    // No longer a VIP when the wait is over: the email step ends the enrolment instead.
    await api(ws, 'PATCH', `/contacts/${vip}`, { properties: { vip: 'lapsed' } });
    await knex()('flow_enrollments').where({ id: rows[0]!.id }).update({ next_run_at: Date.now() - 1 });
    await knex()('jobs').where({ kind: 'flow.step' }).update({ run_at: Date.now() - 1 });
    await work();
    expect((await enrollments(ws, id))[0]).toMatchObject({ status: 'exited', exit_reason: 'filters' });
    expect(await messagesOf(ws, `flow_id=${id}`)).toEqual([]);
  });

  // ------------------------------------------------------------------ steps, waits and statuses

  it('a delay waits (fractional minutes), the enrolment shows waiting with next_run_at, then the next email goes out', async () => {
    const ws = await h().workspace();
    const who = await contact(ws, 'subscribed');
    const id = await flow(ws, {
      trigger: { type: 'event', event_name: 'joined' },
      steps: [EMAIL, { type: 'delay', minutes: 0.005 }, { ...EMAIL, subject: 'Second' }],
    });
    await event(ws, who, 'joined');
    await work();
    const [waiting] = await enrollments(ws, id);
    expect(waiting).toMatchObject({ status: 'waiting', current_step: 2 });
    expect(Date.parse(waiting!.next_run_at)).toBeGreaterThan(Date.parse(waiting!.created_at));
    expect(await messagesOf(ws, `flow_id=${id}`)).toHaveLength(1);
    const worker = running();
    try {
      await eventually(() => enrollments(ws, id), (rows) => rows[0]?.status === 'completed');
    } finally {
      await worker.stop();
    }
    expect((await messagesOf(ws, `flow_id=${id}`)).map((m) => m.subject).sort()).toEqual(['Hi ', 'Second']);
  });

  it('a paused flow holds its enrolments; going live again resumes them', async () => {
    const ws = await h().workspace();
    const who = await contact(ws, 'subscribed');
    const held = await flow(ws, { trigger: { type: 'event', event_name: 'held' }, steps: [{ type: 'delay', minutes: 0.002 }, EMAIL] });
    const barrier = await flow(ws, { trigger: { type: 'event', event_name: 'later' }, steps: [{ type: 'delay', minutes: 0.004 }, EMAIL] });
    await event(ws, who, 'held');
    await work();
    expect((await api(ws, 'PATCH', `/flows/${held}`, { status: 'paused' })).json().status).toBe('paused');
    await event(ws, who, 'later');
    const worker = running();
    try {
      // The barrier's wait started after the held one's and ended: the held one's was due before it.
      await eventually(() => enrollments(ws, barrier), (rows) => rows[0]?.status === 'completed');
      expect((await enrollments(ws, held))[0]).toMatchObject({ status: 'waiting', current_step: 1 });
      expect(await messagesOf(ws, `flow_id=${held}`)).toEqual([]);
      await api(ws, 'PATCH', `/flows/${held}`, { status: 'live' });
      await eventually(() => enrollments(ws, held), (rows) => rows[0]?.status === 'completed');
    } finally {
      await worker.stop();
    }
    expect(await messagesOf(ws, `flow_id=${held}`)).toHaveLength(1);
  });

  it('going live again resumes held enrolments in batched step jobs (one job for enrolments due together)', async () => {
    const ws = await h().workspace();
    const people = [await contact(ws, 'subscribed'), await contact(ws, 'subscribed'), await contact(ws, 'subscribed')];
    const id = await flow(ws, { trigger: { type: 'event', event_name: 'batch_me' }, steps: [{ type: 'delay', minutes: 60 }, EMAIL] });
    for (const who of people) await event(ws, who, 'batch_me');
    await work();
    expect((await api(ws, 'GET', `/flows/${id}/enrollments?status=waiting`)).json().meta.total).toBe(3);
    expect((await api(ws, 'GET', `/flows/${id}/enrollments?status=completed`)).json().meta.total).toBe(0);
    const ids = (await enrollments(ws, id)).map((e) => e.id).sort();
    await api(ws, 'PATCH', `/flows/${id}`, { status: 'paused' });
    const earlier = new Set((await knex()('jobs').where({ kind: 'flow.step' }).select('id')).map((j) => Number(j.id)));
    await api(ws, 'PATCH', `/flows/${id}`, { status: 'live' });
    const added = (await knex()('jobs').where({ kind: 'flow.step' })).filter((j) => !earlier.has(Number(j.id)));
    expect(added).toHaveLength(1);
    const payload = typeof added[0]!.payload === 'string' ? JSON.parse(added[0]!.payload) : added[0]!.payload;
    expect(payload.enrollments.map(([enrollment]: [string, number]) => enrollment).sort()).toEqual(ids);
    expect(payload.enrollments.every(([, step]: [string, number]) => step === 1)).toBe(true);
  });

  it('reentry: always enrols every fact, once enrols a contact once', async () => {
    const ws = await h().workspace();
    const who = await contact(ws, 'subscribed');
    const always = await flow(ws, { trigger: { type: 'event', event_name: 'tick' }, steps: [] });
    const once = await flow(ws, { trigger: { type: 'event', event_name: 'tick' }, steps: [], reentry: 'once' });
    for (let i = 0; i < 3; i++) await event(ws, who, 'tick');
    await work();
    expect(await enrollments(ws, always)).toHaveLength(3);
    expect(await enrollments(ws, once)).toHaveLength(1);
  });

  it('marketing flows skip unsubscribed and suppressed contacts (skipped, enrolment completes); transactional ones email any unsuppressed contact', async () => {
    const ws = await h().workspace();
    const unsubscribed = await contact(ws, 'unsubscribed');
    const fresh = await contact(ws, 'non_subscribed');
    const suppressed = await contact(ws, 'subscribed', {}, 'gone@example.com');
    await api(ws, 'POST', '/suppressions', { emails: ['gone@example.com'] });
    const marketing = await flow(ws, { trigger: { type: 'event', event_name: 'poke' } });
    const transactional = await flow(ws, { trigger: { type: 'event', event_name: 'poke' }, message_type: 'transactional' });
    for (const who of [unsubscribed, fresh, suppressed]) await event(ws, who, 'poke');
    await work();
    expect((await enrollments(ws, marketing)).map((e) => e.status)).toEqual(['completed', 'completed', 'completed']);
    expect(await messagesOf(ws, `flow_id=${marketing}`)).toEqual([]);
    expect((await api(ws, 'GET', `/flows/${marketing}/report`)).json()).toMatchObject({ sent: 0, skipped: 3, enrolled: 3, completed: 3 });
    const sent = await messagesOf(ws, `flow_id=${transactional}`);
    expect(sent.map((m) => m.contact_id).sort()).toEqual([unsubscribed, fresh].sort());
    expect(sent.every((m) => m.status === 'captured')).toBe(true);
    expect((await api(ws, 'GET', `/flows/${transactional}/report`)).json()).toMatchObject({ sent: 2, skipped: 1 });
  });

  it('smart sending skips a contact who got a marketing email within the window', async () => {
    const ws = await h().workspace();
    const recent = await contact(ws, 'subscribed');
    const quiet = await contact(ws, 'subscribed');
    const first = await flow(ws, { trigger: { type: 'event', event_name: 'first' } });
    await event(ws, recent, 'first');
    await work();
    expect(await messagesOf(ws, `flow_id=${first}`)).toHaveLength(1);
    const smart = await flow(ws, { trigger: { type: 'event', event_name: 'second' }, smart_sending_hours: 24 });
    // Transactional: its email to `quiet` in the same pass does not count as marketing for the smart flow.
    const eager = await flow(ws, { trigger: { type: 'event', event_name: 'second' }, message_type: 'transactional' });
    await event(ws, recent, 'second');
    await event(ws, quiet, 'second');
    await work();
    expect((await messagesOf(ws, `flow_id=${smart}`)).map((m) => m.contact_id)).toEqual([quiet]);
    expect(await messagesOf(ws, `flow_id=${eager}`)).toHaveLength(2);
    expect((await api(ws, 'GET', `/flows/${smart}/report`)).json()).toMatchObject({ sent: 1, skipped: 1, completed: 2 });
  });

  it('a template that fails to render fails that message and the enrolment goes on', async () => {
    const ws = await h().workspace();
    const who = await contact(ws, 'subscribed', { n: 100_000_000 });
    const id = await flow(ws, {
      trigger: { type: 'event', event_name: 'boom' },
      // Renders against the sample data of the check at save, but loops past the memory limit for this recipient.
      steps: [{ type: 'email', subject: 'x', html: '{% for i in (1..contact.n) %}{{ i }}{% endfor %}' }, { ...EMAIL, subject: 'After' }],
    });
    await event(ws, who, 'boom');
    await work();
    const messages = await messagesOf(ws, `flow_id=${id}`);
    expect(messages.map((m) => m.status).sort()).toEqual(['captured', 'failed']);
    expect(messages.find((m) => m.status === 'failed')!.error).toMatch(/render failed/);
    expect((await enrollments(ws, id))[0]!.status).toBe('completed');
  });

  it('deleting a flow ends its enrolments (exited, flow_deleted) before it answers 404', async () => {
    const ws = await h().workspace();
    const who = await contact(ws, 'subscribed');
    const id = await flow(ws, { trigger: { type: 'event', event_name: 'slow' }, steps: [{ type: 'delay', minutes: 60 }, EMAIL] });
    await event(ws, who, 'slow');
    await work();
    expect((await enrollments(ws, id))[0]!.status).toBe('waiting');
    expect((await api(ws, 'DELETE', `/flows/${id}`)).statusCode).toBe(204);
    const [row] = await knex()('flow_enrollments').where({ flow_id: id });
    expect(row).toMatchObject({ status: 'exited', exit_reason: 'flow_deleted' });
    await event(ws, who, 'slow');
    await work();
    expect(await knex()('flow_enrollments').where({ flow_id: id })).toHaveLength(1);
  });

  // ------------------------------------------------------------------ abandoned carts

  it('abandoned_cart enrols after the wait with the cart; a new cart event restarts the wait; one enrolment per cart', async () => {
    const ws = await h().workspace();
    const email = 'cart@example.com';
    const who = await contact(ws, 'subscribed', {}, email);
    const id = await flow(ws, {
      trigger: { type: 'abandoned_cart', delay_minutes: 0.003 },
      steps: [{ type: 'email', subject: 'Your cart', html: '<a href="{{ cart.checkout_url }}">{{ cart.total_amount }} {{ cart.currency }}</a>' }],
    });
    await cartEvent(ws, email, 'cart-1');
    await cartEvent(ws, email, 'cart-1');
    const worker = running();
    try {
      await eventually(() => enrollments(ws, id), (rows) => rows[0]?.status === 'completed');
      const [message] = await messagesOf(ws, `flow_id=${id}`);
      expect(message!.html).toContain('19.9 EUR');
      // The same cart abandoned again: still one enrolment; the barrier is that its wait was consumed.
      await cartEvent(ws, email, 'cart-1');
      await eventually(() => h().services.jobs.pendingCount(['flow.cart_check']), (n) => n === 0);
    } finally {
      await worker.stop();
    }
    const rows = await enrollments(ws, id);
    expect(rows).toHaveLength(1);
    expect(rows[0]!.contact_id).toBe(who);
  });

  it('abandoned_cart: an order within the wait means no enrolment', async () => {
    const ws = await h().workspace();
    const email = 'buys-soon@example.com';
    await contact(ws, 'subscribed', {}, email);
    const id = await flow(ws, { trigger: { type: 'abandoned_cart', delay_minutes: 0.001 } });
    await cartEvent(ws, email, 'cart-a');
    await webhookOrder(ws, email);
    const worker = running();
    try {
      // Barrier: the wait ran out and its check was made.
      await eventually(() => h().services.jobs.pendingCount(['flow.cart_check']), (n) => n === 0);
    } finally {
      await worker.stop();
    }
    expect(await enrollments(ws, id)).toEqual([]);
  });

  it('abandoned_cart: an order while enrolled exits the enrolment before its email', async () => {
    const ws = await h().workspace();
    const email = 'buys-later@example.com';
    await contact(ws, 'subscribed', {}, email);
    const id = await flow(ws, { trigger: { type: 'abandoned_cart', delay_minutes: 0.001 }, steps: [{ type: 'delay', minutes: 60 }, EMAIL] });
    await cartEvent(ws, email, 'cart-b');
    const worker = running();
    try {
      await eventually(() => enrollments(ws, id), (rows) => rows[0]?.status === 'waiting');
      await webhookOrder(ws, email);
      await eventually(() => enrollments(ws, id), (rows) => rows[0]?.status === 'exited');
    } finally {
      await worker.stop();
    }
    expect((await enrollments(ws, id))[0]!.exit_reason).toBe('order_placed');
    expect(await messagesOf(ws, `flow_id=${id}`)).toEqual([]);
  });

  it('abandoned_cart: an email step whose enrolment an order did not reach yet exits it itself (order_placed), sending nothing', async () => {
    const ws = await h().workspace();
    const email = 'buys-meanwhile@example.com';
    await contact(ws, 'subscribed', {}, email);
    const id = await flow(ws, { trigger: { type: 'abandoned_cart', delay_minutes: 0.001 }, steps: [{ type: 'delay', minutes: 60 }, EMAIL] });
    await cartEvent(ws, email, 'cart-c');
    const worker = running();
    try {
      await eventually(() => enrollments(ws, id), (rows) => rows[0]?.status === 'waiting');
    } finally {
      await worker.stop();
    }
    await webhookOrder(ws, email);
    await work();
    const [exited] = await enrollments(ws, id);
    expect(exited).toMatchObject({ status: 'exited', exit_reason: 'order_placed' });
    // As if the step had run before the order's fact was consumed: the step's own check must catch the order.
    await knex()('flow_enrollments').where({ id: exited!.id }).update({ status: 'waiting', exit_reason: null, next_run_at: Date.now() - 1 });
    expect((await api(ws, 'PATCH', `/flows/${id}`, { status: 'paused' })).statusCode).toBe(200);
    expect((await api(ws, 'PATCH', `/flows/${id}`, { status: 'live' })).statusCode).toBe(200);
    await work();
    expect((await enrollments(ws, id))[0]).toMatchObject({ status: 'exited', exit_reason: 'order_placed' });
    expect(await messagesOf(ws, `flow_id=${id}`)).toEqual([]);
  });

  it('abandoned_cart also starts from added_to_cart events of the API, with the contact\'s cart', async () => {
    const ws = await h().workspace();
    const who = await contact(ws, 'subscribed');
    const id = await flow(ws, { trigger: { type: 'abandoned_cart', delay_minutes: 0.001 }, steps: [] });
    await event(ws, who, 'product_added_to_cart', { properties: { product_id: 'p1' } });
    await event(ws, who, 'started_checkout');
    const worker = running();
    try {
      await eventually(() => enrollments(ws, id), (rows) => rows.length === 1);
      await eventually(() => h().services.jobs.pendingCount(['flow.cart_check']), (n) => n === 0);
    } finally {
      await worker.stop();
    }
    expect(await enrollments(ws, id)).toHaveLength(1);
  });

  // ------------------------------------------------------------------ engine guarantees and reports

  it('a running worker enrols within 2 seconds of the write', async () => {
    const ws = await h().workspace();
    const who = await contact(ws, 'subscribed');
    const id = await flow(ws, { trigger: { type: 'event', event_name: 'fast' } });
    const worker = running();
    try {
      const started = Date.now();
      await event(ws, who, 'fast');
      await eventually(() => messagesOf(ws, `flow_id=${id}`), (rows) => rows.length === 1, 2_000);
      expect(Date.now() - started).toBeLessThan(2_000);
    } finally {
      await worker.stop();
    }
  });

  it('a fact is consumed once: draining again enrols nobody twice; a fact that cannot be consumed is set aside with its error', async () => {
    const ws = await h().workspace();
    const who = await contact(ws, 'subscribed');
    const id = await flow(ws, { trigger: { type: 'event', event_name: 'once_only' }, steps: [] });
    await event(ws, who, 'once_only');
    expect(await h().services.dispatcher.drain()).toBeGreaterThan(0);
    expect(await h().services.dispatcher.drain()).toBe(0);
    expect(await enrollments(ws, id)).toHaveLength(1);
    // A fact naming a subject that breaks the consumer: the others still go through.
    await knex()('trigger_outbox').insert({
      workspace_id: ws.id,
      trigger_type: 'order_placed',
      contact_id: who,
      subject_type: 'order',
      subject_id: 'x'.repeat(64),
      payload: '{}',
      created_at: Date.now(),
    });
    const broken = await flow(ws, { trigger: { type: 'order_placed' }, steps: [] });
    await event(ws, who, 'once_only');
    expect(await h().services.dispatcher.drain()).toBe(2);
    expect(await enrollments(ws, id)).toHaveLength(2);
    expect(await enrollments(ws, broken)).toHaveLength(1);
  });

  it('the flow report counts sends, opens, clicks, attributed orders and revenue; the revenue report names the flow', async () => {
    const ws = await h().workspace();
    const email = 'fan@example.com';
    const who = await contact(ws, 'subscribed', {}, email);
    const id = await flow(ws, { name: 'Welcome series', trigger: { type: 'event', event_name: 'hello' }, steps: [{ type: 'email', subject: 'Hi', html: '<a href="https://shop.test/x">x</a>' }] });
    await event(ws, who, 'hello');
    await work();
    const [message] = await messagesOf(ws, `flow_id=${id}`);
    const link = /\/t\/c\/[^"]+/.exec(message!.html)![0];
    for (let i = 0; i < 2; i++) expect((await h().request({ method: 'GET', url: link })).statusCode).toBe(302);
    await webhookOrder(ws, email, { total_amount: 80 });
    await work();
    const report = (await api(ws, 'GET', `/flows/${id}/report`)).json();
    expect(report).toMatchObject({ sent: 1, clicks: 2, unique_clicks: 1, orders: 1, revenue: 80, enrolled: 1, completed: 1, exited: 0, skipped: 0 });
    const revenue = (await api(ws, 'GET', '/reports/revenue')).json().data;
    expect(revenue).toEqual([{ flow_id: id, name: 'Welcome series', orders: 1, revenue: 80, currency: 'EUR' }]);
    expect(await emailOf(ws, who)).toBe(email);
  });
});
