import { expect, it } from 'vitest';
import { runEmk, runEmkInTerminal } from './helpers/cli.js';
import { describeEachDatabase, type TestWorkspace } from './helpers/harness.js';
import { sendingHelpers } from './helpers/sending.js';

type Row = Record<string, any>;

/** Every table that holds a contact's traces, by its contact_id column. */
const TRACE_TABLES = [
  'events',
  'messages',
  'carts',
  'engagements',
  'trigger_outbox',
  'flow_enrollments',
  'segment_members',
  'contact_anonymous_ids',
  'subscription_changes',
  'contact_user_ids',
];

describeEachDatabase('data rights: erase, export, consent', (h) => {
  const { api, contact, campaign, work, messagesOf } = sendingHelpers(h);
  const knex = () => h().services.db.knex;
  const path = (url: string) => new URL(url).pathname;
  const hook = async (ws: TestWorkspace, body: unknown) => {
    const reply = await h().request({ method: 'POST', url: `/ecom/website/${ws.integrationId}`, headers: { authorization: `Bearer ${ws.integrationKey}` }, json: body });
    expect(reply.statusCode, reply.body).toBe(200);
  };
  const views = async (ws: TestWorkspace, email: string, productId: string, n: number) => {
    const events = Array.from({ length: n }, () => ({ email, event_name: 'viewed_product', properties: { product_id: productId } }));
    expect((await api(ws, 'POST', '/events/batch', { events })).json().errors).toEqual([]);
  };
  const mostViewed = async (ws: TestWorkspace, feedId: string) =>
    (await api(ws, 'GET', `/product-feeds/${feedId}/products`)).json().data.map((p: { external_id: string }) => p.external_id);
  const traces = async (contactId: string) => {
    const counts: Record<string, number> = {};
    for (const table of TRACE_TABLES) counts[table] = Number((await knex()(table).where({ contact_id: contactId }).count({ n: '*' }))[0]!.n);
    return counts;
  };

  /**
   * A shop with a person who has data of every kind (events and views, a message and a click, an attributed
   * order, a cart, an anonymous id, two consent changes, a segment membership, an enrolment in progress) and
   * another shopper whose views stay.
   */
  async function personWithEverything() {
    const ws = await h().workspace();
    for (const id of ['tee', 'cap']) await hook(ws, { event_type: 'product_created', external_id: `p-${id}`, product: { external_id: id, title: id, price: 10 } });
    const email = `erin${Math.random().toString(36).slice(2)}@example.com`;
    const id = await contact(ws, 'subscribed', { first_name: 'Erin' }, email);
    await contact(ws, 'subscribed', { first_name: 'Kim' }, 'kim@example.com');
    const identified = await h().request({ method: 'POST', url: '/collect/identify', json: { site_id: ws.siteId, email, anonymous_id: 'anon-erin' } });
    expect(identified.json().contact_id).toBe(id);
    // Known to Segment-compatible ingest by a userId too.
    const segmentIdentify = await h().request({
      method: 'POST',
      url: '/v1/identify',
      json: { writeKey: ws.siteId, userId: 'user-erin', traits: { email }, messageId: 'm-erin-1' },
    });
    expect(segmentIdentify.statusCode).toBe(200);

    const segment = (await api(ws, 'POST', '/segments', { name: 'Erins', conditions: { all: [{ property: 'first_name', operator: 'equals', value: 'Erin' }] } })).json().id;
    const flow = (await api(ws, 'POST', '/flows', {
      name: 'Club',
      status: 'live',
      trigger: { type: 'event', event_name: 'joined_club' },
      steps: [{ type: 'delay', minutes: 600 }, { type: 'email', subject: 'Welcome', html: '<p>Hi</p>' }],
    })).json().id;
    const campaignId = await campaign(ws, { html: '<a href="https://shop.test/p/1">Product</a>' });
    await api(ws, 'POST', `/campaigns/${campaignId}/send`);
    await work();
    const [message] = await messagesOf(ws, `contact_id=${id}`);
    const link = /href="([^"]+)"/.exec(message!.html)![1]!.replace(/&amp;/g, '&');
    expect((await h().request({ method: 'GET', url: path(link) })).statusCode).toBe(302);
    await hook(ws, { event_type: 'order_placed', external_id: 'd-o1', email, order: { external_id: 'o1', total_amount: 100, currency: 'EUR', items: [{ external_id: 'tee', quantity: 1 }] } });
    await hook(ws, { event_type: 'added_to_cart', external_id: 'd-c1', email, cart: { external_id: 'c1', items: [{ external_id: 'cap', quantity: 1 }] } });
    await views(ws, email, 'cap', 3);
    await views(ws, 'kim@example.com', 'tee', 2);
    expect((await api(ws, 'POST', '/events', { contact_id: id, event_name: 'joined_club' })).statusCode).toBe(201);
    expect((await api(ws, 'PATCH', `/contacts/${id}`, { subscription_status: 'unsubscribed' })).statusCode).toBe(200);
    await work();
    const feed = (await api(ws, 'POST', '/product-feeds', { name: 'Popular', recommendation_type: 'most_viewed', max_items: 10 })).json().feed.id;
    return { ws, id, email, segment, flow, campaignId, feed };
  }

  it('erasure deletes every trace in one go, keeps the orders on a tombstone and the revenue, and takes the views out of the rankings', async () => {
    const { ws, id, email, segment, flow, campaignId, feed } = await personWithEverything();
    const before = await traces(id);
    for (const table of TRACE_TABLES) expect(before[table], table).toBeGreaterThan(0);
    expect((await api(ws, 'GET', `/flows/${flow}/enrollments`)).json().data.map((e: Row) => [e.contact_id, e.status])).toEqual([[id, 'waiting']]);
    expect(await mostViewed(ws, feed)).toEqual(['cap', 'tee']);
    const revenue = (await api(ws, 'GET', '/reports/revenue')).json();
    expect(revenue.data).toMatchObject([{ campaign_id: campaignId, orders: 1, revenue: 100 }]);
    const report = (await api(ws, 'GET', `/campaigns/${campaignId}/report`)).json();
    expect(report).toMatchObject({ orders: 1, revenue: 100 });

    expect((await api(ws, 'DELETE', `/contacts/${id}`)).statusCode).toBe(204);

    expect(await traces(id)).toEqual(Object.fromEntries(TRACE_TABLES.map((table) => [table, 0])));
    const tombstone = await knex()('contacts').where({ id }).first();
    expect(tombstone).toMatchObject({ email: '', email_key: id, source: null, subscription_status: 'non_subscribed' });
    expect(typeof tombstone.properties === 'string' ? JSON.parse(tombstone.properties) : tombstone.properties).toEqual({});
    expect(Number(tombstone.erased_at)).toBeGreaterThan(0);
    // Orders stay (on the tombstone), so revenue reports do not change.
    expect((await api(ws, 'GET', `/ecommerce/orders?contact_id=${id}`)).json().data.map((o: Row) => [o.external_id, o.total_amount])).toEqual([['o1', 100]]);
    expect((await api(ws, 'GET', '/reports/revenue')).json()).toEqual(revenue);
    expect((await api(ws, 'GET', `/campaigns/${campaignId}/report`)).json()).toMatchObject({ orders: 1, revenue: 100 });
    // The person's three views of cap are gone; Kim's two of tee stay.
    expect(await mostViewed(ws, feed)).toEqual(['tee']);
    const totals = await knex()('product_activity_totals').where({ workspace_id: ws.id }).orderBy('product_key');
    expect(totals.map((r: Row) => [r.product_key, Number(r.views), Number(r.units_sold)])).toEqual([
      ['cap', 0, 0],
      ['tee', 2, 1],
    ]);
    expect((await api(ws, 'GET', `/segments/${segment}/members`)).json().meta.total).toBe(0);
    expect((await api(ws, 'GET', `/flows/${flow}/enrollments`)).json().data).toEqual([]);
    await work();

    // 404 everywhere.
    for (const [method, url, body] of [
      ['GET', `/contacts/${id}`],
      ['PATCH', `/contacts/${id}`, { properties: { a: 1 } }],
      ['DELETE', `/contacts/${id}`],
      ['GET', `/contacts/${id}/consent`],
      ['GET', `/contacts/${id}/export`],
      ['POST', '/events', { contact_id: id, event_name: 'joined_club' }],
    ] as const) {
      expect((await api(ws, method, url, body)).statusCode, `${method} ${url}`).toBe(404);
    }
    expect((await api(ws, 'GET', `/events?contact_id=${id}`)).json()).toMatchObject({ data: [], meta: { total: 0 } });
    expect((await api(ws, 'GET', `/contacts?email=${email}`)).json().meta.total).toBe(0);
    expect((await api(ws, 'GET', `/contacts?email=${id}`)).json().meta.total).toBe(0);
    expect((await api(ws, 'GET', '/contacts')).json().data.map((c: Row) => c.email)).toEqual(['kim@example.com']);

    // A campaign to everyone subscribed reaches Kim alone.
    const next = await campaign(ws, { name: 'Next' });
    expect((await api(ws, 'POST', `/campaigns/${next}/send`)).json().recipients).toBe(1);

    // The same address is a new person afterwards: a new contact, no history, nothing attached.
    const again = await h().request({ method: 'POST', url: '/collect/identify', json: { site_id: ws.siteId, email: email.toUpperCase(), anonymous_id: 'anon-erin' } });
    const fresh = again.json().contact_id;
    expect(fresh).not.toBe(id);
    expect((await api(ws, 'GET', `/contacts/${fresh}`)).json()).toMatchObject({ email: email.toUpperCase(), anonymous_ids: ['anon-erin'], orders_count: 0, lifetime_revenue: 0 });
    expect((await api(ws, 'GET', `/events?contact_id=${fresh}`)).json().meta.total).toBe(0);
  });

  it('export holds everything kept about the person; consent lists every change with its origin', async () => {
    const { ws, id, email } = await personWithEverything();
    const consent = (await api(ws, 'GET', `/contacts/${id}/consent`)).json();
    expect(consent.data.map((c: Row) => [c.previous_status, c.status, c.origin])).toEqual([
      [null, 'subscribed', 'create:api'],
      ['subscribed', 'unsubscribed', 'api:update'],
    ]);
    expect(consent.data.every((c: Row) => !Number.isNaN(Date.parse(c.at)))).toBe(true);

    const reply = await api(ws, 'GET', `/contacts/${id}/export`);
    expect(reply.statusCode).toBe(200);
    const exported = reply.json();
    expect(Object.keys(exported).sort()).toEqual(['carts', 'consent', 'contact', 'events', 'messages', 'orders']);
    expect(exported.contact).toEqual((await api(ws, 'GET', `/contacts/${id}`)).json());
    expect(exported.contact).toMatchObject({ email, anonymous_ids: ['anon-erin'], properties: { first_name: 'Erin' } });
    expect(exported.events).toEqual((await api(ws, 'GET', `/events?contact_id=${id}&perPage=500`)).json().data);
    expect(exported.events.map((e: Row) => e.event_name)).toEqual(expect.arrayContaining(['viewed_product', 'joined_club', 'email_clicked']));
    expect(exported.events.filter((e: Row) => e.event_name === 'viewed_product')).toHaveLength(3);
    expect(exported.orders.map((o: Row) => [o.external_id, o.total_amount, o.items.length])).toEqual([['o1', 100, 1]]);
    expect(exported.carts.map((c: Row) => [c.external_id, c.items])).toEqual([['c1', [{ external_id: 'cap', quantity: 1 }]]]);
    expect(exported.messages).toEqual(await messagesOf(ws, `contact_id=${id}`));
    expect(exported.messages).toHaveLength(1);
    expect(exported.consent).toEqual(consent.data);
    expect((await api(ws, 'GET', '/contacts/nobody/export')).statusCode).toBe(404);
  });

  it("export lists the person's carts, last changed first, with items, totals, recovery URL and conversion; no one else's", async () => {
    const ws = await h().workspace();
    const email = `cara${Math.random().toString(36).slice(2)}@example.com`;
    const id = await contact(ws, 'subscribed', {}, email);
    const kim = await contact(ws, 'subscribed', {}, 'kim@example.com');
    const items = [
      { external_id: 'tee', title: 'Tee', quantity: 2, price: 19.95 },
      { external_id: 'cap', title: 'Cap', quantity: 1, price: 20 },
    ];
    const recover = 'https://shop.test/checkouts/c-open/recover?key=k1';
    await hook(ws, { event_type: 'started_checkout', external_id: 'd-c-open', email, cart: { external_id: 'c-open', total_amount: 59.9, currency: 'EUR', checkout_url: recover, items } });
    await hook(ws, { event_type: 'started_checkout', external_id: 'd-c-kim', email: 'kim@example.com', cart: { external_id: 'c-kim', total_amount: 5, currency: 'EUR', checkout_url: 'https://shop.test/checkouts/c-kim/recover', items: [{ external_id: 'cap', quantity: 1 }] } });
    // A checkout completed days ago (a platform's completed checkout marks its cart converted).
    const day = 86_400_000;
    const before = Date.now() - 4 * day;
    const converted = { workspaceId: ws.id, contactId: id, externalId: 'c-done', totalAmount: 20, currency: 'USD', checkoutUrl: null, items: [items[1]], source: 'test' };
    await h().services.db.writeTransaction((trx) =>
      h().services.carts.applyCartChanges(trx, [
        { ...converted, eventType: 'added_to_cart', at: before },
        { ...converted, eventType: 'started_checkout', converted: true, at: before + day },
      ]),
    );

    const exported = (await api(ws, 'GET', `/contacts/${id}/export`)).json();
    expect(exported.carts).toEqual([
      {
        id: expect.any(String),
        external_id: 'c-open',
        last_event_type: 'started_checkout',
        items,
        total_amount: 59.9,
        currency: 'EUR',
        checkout_url: recover,
        converted_at: null,
        created_at: expect.any(String),
        updated_at: expect.any(String),
      },
      {
        id: expect.any(String),
        external_id: 'c-done',
        last_event_type: 'started_checkout',
        items: [items[1]],
        total_amount: 20,
        currency: 'USD',
        checkout_url: null,
        converted_at: new Date(before + day).toISOString(),
        created_at: new Date(before).toISOString(),
        updated_at: new Date(before + day).toISOString(),
      },
    ]);
    const [open] = exported.carts;
    expect(Date.parse(open.updated_at)).toBeGreaterThan(before + day);
    // Kim's cart is hers alone: in her export, in no one else's.
    expect((await api(ws, 'GET', `/contacts/${kim}/export`)).json().carts.map((c: Row) => [c.external_id, c.checkout_url])).toEqual([
      ['c-kim', 'https://shop.test/checkouts/c-kim/recover'],
    ]);
    expect(JSON.stringify(exported)).not.toContain('c-kim');
    // Paged like the other lists: one cart a page gives the same text.
    let text = '';
    for await (const piece of await h().services.dataRights.exportJson(ws.id, id, { pageSize: 1 })) text += piece;
    expect(JSON.parse(text)).toEqual(exported);
  });

  it('emk contacts export|erase: by email (any case), JSON or human, confirmation required, exit codes', async () => {
    const { ws, id, email } = await personWithEverything();
    const emk = (args: string[]) => runEmk(['contacts', ...args, '--workspace', ws.id, '--db', h().database.url]);
    const exported = (await api(ws, 'GET', `/contacts/${id}/export`)).json();

    const json = await emk(['export', '--email', email.toUpperCase(), '--json']);
    expect(json.code, json.stderr).toBe(0);
    expect(JSON.parse(json.stdout)).toEqual(exported);
    const human = await emk(['export', '--email', email]);
    expect(human.code, human.stderr).toBe(0);
    expect(JSON.parse(human.stdout)).toEqual(exported);

    for (const args of [['export', '--email', 'nobody@example.com'], ['erase', '--email', 'nobody@example.com', '--yes']]) {
      const unknown = await emk(args);
      expect([unknown.code, unknown.stdout, unknown.stderr.trim()]).toEqual([1, '', 'emk: contact nobody@example.com not found']);
    }
    const bad = await emk(['export', '--email', 'not-an-email']);
    expect([bad.code, bad.stderr]).toEqual([2, expect.stringMatching(/--email/)]);

    // No terminal and no --yes: nothing happens, exit 2 with the hint (also with --json).
    for (const extra of [[], ['--json']]) {
      const refused = await emk(['erase', '--email', email, ...extra]);
      expect([refused.code, refused.stdout]).toEqual([2, '']);
      expect(refused.stderr).toMatch(/--yes/);
    }
    expect((await api(ws, 'GET', `/contacts/${id}`)).statusCode).toBe(200);

    const erased = await emk(['erase', '--email', email.toUpperCase(), '--yes', '--json']);
    expect(erased.code, erased.stderr).toBe(0);
    expect(JSON.parse(erased.stdout)).toEqual({ id, email, erased: true });
    expect((await api(ws, 'GET', `/contacts/${id}`)).statusCode).toBe(404);
    expect((await emk(['erase', '--email', email, '--yes'])).code).toBe(1);

    // Human output, and the question at a terminal.
    const other = await contact(ws, 'non_subscribed', {}, 'other@example.com');
    const asked = await runEmkInTerminal(
      ['contacts', 'erase', '--email', 'other@example.com', '--workspace', ws.id, '--db', h().database.url],
      [['Yes / ', 'y\r']],
    );
    expect(asked.code, asked.stdout).toBe(0);
    expect(asked.stdout).toMatch(new RegExp(`erased contact ${other}`));
    expect((await api(ws, 'GET', `/contacts/${other}`)).statusCode).toBe(404);
  }, 180_000);

  /** Every record of a management list, read page after page through the API (what the export held whole before). */
  const wholeList = async (ws: TestWorkspace, url: string) => {
    const all: Row[] = [];
    for (let page = 1; ; page++) {
      const { data, meta } = (await api(ws, 'GET', `${url}&perPage=500&page=${page}`)).json();
      all.push(...data);
      if (all.length >= meta.total || data.length === 0) return all;
    }
  };

  /** A person with a long history: 2,100 events (three of the export's default pages), orders, messages. */
  async function personWithHistory(events: number) {
    const ws = await h().workspace();
    const email = `long${Math.random().toString(36).slice(2)}@example.com`;
    const id = await contact(ws, 'subscribed', { first_name: 'Lee' }, email);
    for (let done = 0; done < events; done += 1000) {
      const rows = Array.from({ length: Math.min(1000, events - done) }, (_, i) => ({ email, event_name: 'viewed_page', properties: { n: done + i } }));
      expect((await api(ws, 'POST', '/events/batch', { events: rows })).json().errors).toEqual([]);
    }
    const orders = Array.from({ length: 5 }, (_, i) => ({ email, external_id: `lo-${i}`, order_number: String(i), total_amount: 10 + i, currency: 'EUR', status: 'paid', ordered_at: '2026-05-01T10:00:00Z' }));
    expect((await api(ws, 'POST', '/ecommerce/sync-historical-orders', { orders })).json().errors).toEqual([]);
    for (let i = 0; i < 3; i++) await api(ws, 'POST', `/campaigns/${await campaign(ws)}/send`);
    await work();
    return { ws, id, email };
  }

  it('export is streamed: the same shape and content as the lists hold, over HTTP, the command line and any page size', async () => {
    const { ws, id, email } = await personWithHistory(2_100);
    const reply = await api(ws, 'GET', `/contacts/${id}/export`);
    expect(reply.statusCode).toBe(200);
    expect(reply.headers['content-type']).toMatch(/^application\/json/);
    const exported = reply.json();
    expect(Object.keys(exported)).toEqual(['contact', 'events', 'orders', 'carts', 'messages', 'consent']);
    expect(exported.contact).toEqual((await api(ws, 'GET', `/contacts/${id}`)).json());
    expect(exported.events).toHaveLength(2_100);
    expect(exported.events).toEqual(await wholeList(ws, `/events?contact_id=${id}`));
    expect(exported.orders).toHaveLength(5);
    expect(exported.orders).toEqual(await wholeList(ws, `/ecommerce/orders?contact_id=${id}`));
    expect(exported.messages).toHaveLength(3);
    expect(exported.messages).toEqual(await messagesOf(ws, `contact_id=${id}`));
    expect(exported.consent).toEqual((await api(ws, 'GET', `/contacts/${id}/consent`)).json().data);
    // Pages of any size, one record or more, join into the same text.
    for (const pageSize of [7, 2_100, 5_000]) {
      let text = '';
      for await (const piece of await h().services.dataRights.exportJson(ws.id, id, { pageSize })) text += piece;
      expect(text, `page size ${pageSize}`).toBe(reply.body);
    }
    const cli = await runEmk(['contacts', 'export', '--email', email, '--json', '--workspace', ws.id, '--db', h().database.url]);
    expect(cli.code, cli.stderr).toBe(0);
    expect(cli.stdout).toBe(`${reply.body}\n`);
    // A contact with nothing but itself: empty arrays.
    const bare = await contact(ws, 'non_subscribed');
    expect((await api(ws, 'GET', `/contacts/${bare}/export`)).json()).toMatchObject({ events: [], orders: [], carts: [], messages: [] });
  }, 180_000);

  it('export reads a page only after the page before it was taken: at most one page is held', async () => {
    const { ws, id } = await personWithHistory(10);
    const log: string[] = [];
    const pieces = await h().services.dataRights.exportJson(ws.id, id, { pageSize: 3, onPage: (list, page, rows) => log.push(`read ${list} ${page}: ${rows}`) });
    for await (const piece of pieces) {
      // A page's text: records, no structure of the reply around them.
      if (!/^(\{"contact"|,"\w+":|\])/.test(piece)) log.push(`wrote ${JSON.parse(`[${piece.replace(/^,/, '')}]`).length}`);
    }
    expect(log).toEqual([
      // 10 events, 5 orders, 3 messages: the last page of each is read when the one before was written.
      ...['read events 1: 3', 'wrote 3', 'read events 2: 3', 'wrote 3', 'read events 3: 3', 'wrote 3', 'read events 4: 1', 'wrote 1'],
      ...['read orders 1: 3', 'wrote 3', 'read orders 2: 2', 'wrote 2'],
      // No carts: one empty page read, nothing written.
      'read carts 1: 0',
      ...['read messages 1: 3', 'wrote 3'],
    ]);
  });
});
