import { readFileSync } from 'node:fs';
import { expect, it } from 'vitest';
import { STARTERS } from '../src/domain/starters/starter-catalog.js';
import { runEmk } from './helpers/cli.js';
import { describeEachDatabase, type TestWorkspace } from './helpers/harness.js';
import { sendingHelpers } from './helpers/sending.js';

/** The demo shop's first lines (fixtures/demo, what `emk seed` loads): products and an order of them. */
const demoLines = (file: string, n: number) =>
  readFileSync(new URL(`../fixtures/demo/${file}`, import.meta.url), 'utf8')
    .split('\n')
    .filter(Boolean)
    .slice(0, n)
    .map((line) => JSON.parse(line) as Record<string, any>);
const DEMO_PRODUCTS = demoLines('products.jsonl', 10);
const FLOW_STARTERS = STARTERS.filter((s) => s.kind === 'flow').map((s) => s.id);
const CAMPAIGN_STARTERS = STARTERS.filter((s) => s.kind === 'campaign').map((s) => s.id);

describeEachDatabase('starters', (h) => {
  const { api, contact } = sendingHelpers(h);

  it('GET /starters and `emk starters list --json` list every starter: the six flows of the issue and the campaign templates', async () => {
    const ws = await h().workspace();
    const reply = await api(ws, 'GET', '/starters');
    expect(reply.statusCode).toBe(200);
    const { data } = reply.json() as { data: Array<Record<string, string>> };
    expect(data.filter((s) => s.kind === 'flow').map((s) => s.id)).toEqual([
      'welcome_series',
      'abandoned_cart',
      'browse_abandonment',
      'post_purchase_cross_sell',
      'win_back',
      'shipping_updates',
    ]);
    expect(data.filter((s) => s.kind === 'campaign').map((s) => s.id)).toEqual(['newsletter', 'product_launch']);
    for (const starter of data) expect(Object.keys(starter).sort()).toEqual(['description', 'id', 'kind', 'name']);
    const cli = await runEmk(['starters', 'list', '--json']);
    expect(cli.code, cli.stderr).toBe(0);
    expect(JSON.parse(cli.stdout)).toEqual({ data });
    expect((await h().request({ method: 'GET', url: '/api/v1/starters' })).statusCode).toBe(401);
  });

  it('POST /flows and /campaigns with a starter make drafts ready to edit, with the feed or segment they need', async () => {
    const ws = await h().workspace();
    for (const id of FLOW_STARTERS) {
      const reply = await api(ws, 'POST', '/flows', { starter: id });
      expect(reply.statusCode, `${id}: ${reply.body}`).toBe(201);
      const flow = reply.json();
      expect(flow).toMatchObject({ status: 'draft', name: STARTERS.find((s) => s.id === id)!.name });
      const emails = flow.steps.filter((s: { type: string }) => s.type === 'email');
      expect(emails.length, id).toBeGreaterThan(0);
      for (const step of emails) expect(step.format).toBe('mjml');
      // Ready to edit: a PATCH of its first step's subject passes the same checks.
      const steps = flow.steps.map((s: Record<string, unknown>, i: number) => (i === flow.steps.indexOf(emails[0]) ? { ...s, subject: 'Edited' } : s));
      expect((await api(ws, 'PATCH', `/flows/${flow.id}`, { steps })).statusCode, id).toBe(200);
    }
    const named = await api(ws, 'POST', '/flows', { starter: 'abandoned_cart', name: 'My cart flow' });
    expect(named.json()).toMatchObject({ name: 'My cart flow', trigger: { type: 'abandoned_cart', delay_minutes: 60 } });
    expect(named.json().steps[0].html).toContain('{% for item in cart.items %}');

    const winBack = (await api(ws, 'POST', '/flows', { starter: 'win_back' })).json();
    expect(winBack.trigger.type).toBe('segment_entered');
    const segment = await api(ws, 'GET', `/segments/${winBack.trigger.segment_id}`);
    expect(segment.statusCode).toBe(200);
    expect(segment.json().conditions).toEqual({ all: [{ orders: { count: { gte: 1 } } }, { orders: { count: { lte: 0 } }, within_days: 90 }] });

    const crossSell = (await api(ws, 'POST', '/flows', { starter: 'post_purchase_cross_sell' })).json();
    const feedId = /\{% products feed: "([^"]+)"/.exec(crossSell.steps[1].html)![1];
    const feed = await api(ws, 'GET', `/product-feeds/${feedId}`);
    expect(feed.statusCode, feed.body).toBe(200);
    expect(feed.json().feed.recommendation_type).toBe('may_also_like');

    for (const id of CAMPAIGN_STARTERS) {
      const reply = await api(ws, 'POST', '/campaigns', { starter: id, name: `Campaign ${id}` });
      expect(reply.statusCode, reply.body).toBe(201);
      expect(reply.json()).toMatchObject({ status: 'draft', format: 'mjml', name: `Campaign ${id}` });
    }
  });

  it('a starter request names `starter` when wrong: unknown, of the other kind, or with other fields; nothing is made', async () => {
    const ws = await h().workspace();
    const bad: Array<['/flows' | '/campaigns', Record<string, unknown>, RegExp]> = [
      ['/flows', { starter: 'nope' }, /starter must be one of welcome_series, abandoned_cart/],
      ['/flows', { starter: 'newsletter' }, /starter newsletter is a campaign starter, not a flow starter/],
      ['/campaigns', { starter: 'abandoned_cart' }, /starter abandoned_cart is a flow starter, not a campaign starter/],
      ['/campaigns', { starter: 'nope' }, /starter must be one of newsletter, product_launch/],
      ['/flows', { starter: 'abandoned_cart', steps: [] }, /steps/],
      ['/flows', { starter: 12 }, /starter/],
      ['/campaigns', { starter: 'newsletter', name: '' }, /name/],
    ];
    for (const [url, body, message] of bad) {
      const reply = await api(ws, 'POST', url, body);
      expect(reply.statusCode, JSON.stringify(body)).toBe(400);
      expect(reply.json().error, JSON.stringify(body)).toMatch(message);
    }
    expect((await api(ws, 'GET', '/flows')).json().meta.total).toBe(0);
    expect((await api(ws, 'GET', '/campaigns')).json().meta.total).toBe(0);
    expect((await api(ws, 'GET', '/product-feeds')).json().meta.total).toBe(0);
  });

  /** The demo shop's products, a customer who viewed two and ordered three of them. */
  async function demoShop(ws: TestWorkspace): Promise<{ contactId: string; order: Record<string, any> }> {
    // From the shop's integration, as its webhook writes them (recommendations rank no manual product).
    const shop = { workspaceId: ws.id, platform: 'website', domain: 'demo-shop.example.com' };
    await h().services.db.writeTransaction(async (trx) => {
      for (const product of DEMO_PRODUCTS) expect(await h().services.products.applyWebhookEvent(trx, shop, 'product_created', product)).toBe('applied');
    });
    const contactId = await contact(ws, 'subscribed', { first_name: 'Isla' }, 'isla@example.com');
    for (const product of DEMO_PRODUCTS.slice(0, 2)) {
      const event = await api(ws, 'POST', '/events', { contact_id: contactId, event_name: 'viewed_product', properties: { product_id: product.external_id } });
      expect(event.statusCode, event.body).toBeLessThan(300);
    }
    const items = DEMO_PRODUCTS.slice(2, 5).map((p) => ({ external_id: p.external_id, title: p.title, quantity: 1, price: p.price }));
    const order = { email: 'isla@example.com', external_id: 'DEMO-O-TEST', order_number: '10999', total_amount: 100, currency: 'EUR', status: 'fulfilled', ordered_at: new Date().toISOString(), items };
    const result = await h().services.orders.sync(ws.id, { orders: [order] });
    expect(result.errors).toEqual([]);
    return { contactId, order };
  }

  it('every email of every starter renders against the demo shop: a real contact, cart, order and filled product blocks', async () => {
    const ws = await h().workspace();
    const { contactId, order } = await demoShop(ws);
    const cartItems = DEMO_PRODUCTS.slice(5, 7).map((p) => ({ external_id: p.external_id, title: p.title, quantity: 2, price: p.price }));
    const variables = {
      contact: { email: 'isla@example.com', first_name: 'Isla', last_name: null, phone: null },
      order: { id: order.order_number, external_id: order.external_id, total_amount: order.total_amount, currency: 'EUR', status: order.status, items: order.items },
      cart: { external_id: 'cart-1', total_amount: 50, currency: 'EUR', checkout_url: 'https://demo-shop.example.com/checkout/1', items: cartItems },
      event: { name: 'viewed_product', properties: { product_id: DEMO_PRODUCTS[0]!.external_id }, created_at: new Date().toISOString() },
      workspace: { name: 'Demo shop' },
      unsubscribe_url: 'https://emk.test/cp/unsubscribe/x',
      preferences_url: 'https://emk.test/cp/preferences/x',
    };
    const titles = DEMO_PRODUCTS.map((p) => p.title as string);
    const made = [
      ...(await Promise.all(FLOW_STARTERS.map(async (id) => ({ id, record: (await api(ws, 'POST', '/flows', { starter: id })).json() })))),
      ...(await Promise.all(CAMPAIGN_STARTERS.map(async (id) => ({ id, record: (await api(ws, 'POST', '/campaigns', { starter: id })).json() })))),
    ];
    let rendered = 0;
    for (const { id, record } of made) {
      const emails = record.steps ? record.steps.filter((s: { type: string }) => s.type === 'email') : [record];
      for (const email of emails) {
        const out = await h().services.templates.renderMessage({ subject: email.subject, html: email.html, text: null, format: email.format }, variables, { workspaceId: ws.id, contactId });
        rendered++;
        expect(out.html, id).not.toMatch(/\{\{|\{%|<mj-|emkliquid/);
        expect(out.html, id).toContain('Demo shop');
        expect(out.html, id).toMatch(/Hi Isla,/);
        expect(out.subject, id).not.toMatch(/\{\{|\{%/);
        if (email.html.includes('{% products')) {
          const shown = titles.filter((t) => out.html.includes(t));
          expect(shown.length, `${id}: a product block with products`).toBeGreaterThan(0);
          expect(out.html, id).toContain('src="https://demo-shop.example.com/img/');
        }
        if (id === 'abandoned_cart') {
          for (const item of cartItems) expect(out.html).toContain(item.title);
          expect(out.html).toContain('href="https://demo-shop.example.com/checkout/1"');
        }
        if (id === 'shipping_updates') {
          expect(out.subject).toBe('Your order 10999 is on its way');
          for (const item of order.items) expect(out.html).toContain(item.title);
          expect(out.html).not.toContain('Unsubscribe');
        }
        if (id === 'post_purchase_cross_sell') expect(out.html).toContain('thanks again for order 10999');
      }
    }
    expect(rendered).toBe(12);
  });
});
