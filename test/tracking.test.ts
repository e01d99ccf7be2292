import { expect, it } from 'vitest';
import { runEmk } from './helpers/cli.js';
import { describeEachDatabase, type TestWorkspace } from './helpers/harness.js';
import { sendingHelpers } from './helpers/sending.js';

describeEachDatabase('tracking and attribution', (h) => {
  const helpers = sendingHelpers(h);
  const { api } = helpers;
  const path = (url: string) => new URL(url).pathname;
  const linksOf = (html: string) => [...html.matchAll(/href="([^"]+)"/g)].map((m) => m[1]!.replace(/&amp;/g, '&'));
  const pixelOf = (html: string) => /<img src="([^"]+)"/.exec(html)![1]!;
  const sentMessage = (ws: TestWorkspace, html = '<a href="https://shop.test/p/1?ref=mail#reviews">Product</a>') => helpers.sentMessage(ws, html);

  const hook = (ws: TestWorkspace, body: unknown) =>
    h().request({ method: 'POST', url: `/ecom/website/${ws.integrationId}`, headers: { authorization: `Bearer ${ws.integrationKey}` }, json: body });

  it('a click records the engagement once-first, an email_clicked event, and redirects to the original URL with _ir_id', async () => {
    const ws = await h().workspace();
    const { contactId, campaignId, message } = await sentMessage(ws);
    const [link] = linksOf(message.html);
    const click = await h().request({ method: 'GET', url: path(link!) });
    expect(click.statusCode).toBe(302);
    const location = new URL(click.headers.location as string);
    expect(`${location.origin}${location.pathname}`).toBe('https://shop.test/p/1');
    expect(location.searchParams.get('ref')).toBe('mail');
    expect(location.hash).toBe('#reviews');
    expect(location.searchParams.get('_ir_id')).toMatch(/^[A-Za-z0-9_-]{40,}$/);
    const clickedAt = (await api(ws, 'GET', `/messages/${message.id}`)).json().clicked_at;
    expect(clickedAt).not.toBeNull();
    await h().request({ method: 'GET', url: path(link!) });
    expect((await api(ws, 'GET', `/messages/${message.id}`)).json().clicked_at).toBe(clickedAt);
    const events = (await api(ws, 'GET', `/events?contact_id=${contactId}&event_name=email_clicked`)).json().data;
    expect(events).toHaveLength(2);
    expect(events[0].properties).toEqual({ message_id: message.id, campaign_id: campaignId, url: 'https://shop.test/p/1?ref=mail#reviews' });
    expect((await api(ws, 'GET', `/campaigns/${campaignId}/report`)).json()).toMatchObject({ clicks: 2, unique_clicks: 1 });
  });

  it('the pixel answers a no-cache GIF and records opens; unique opens count messages', async () => {
    const ws = await h().workspace();
    const { contactId, campaignId, message } = await sentMessage(ws);
    const pixel = path(pixelOf(message.html));
    for (let i = 0; i < 2; i++) {
      const open = await h().request({ method: 'GET', url: pixel });
      expect(open.statusCode).toBe(200);
      expect(open.headers['content-type']).toBe('image/gif');
      expect(open.headers['cache-control']).toContain('no-store');
      expect(open.rawPayload.subarray(0, 6).toString()).toBe('GIF89a');
    }
    expect((await api(ws, 'GET', `/messages/${message.id}`)).json().opened_at).not.toBeNull();
    expect((await api(ws, 'GET', `/events?contact_id=${contactId}&event_name=email_opened`)).json().meta.total).toBe(2);
    expect((await api(ws, 'GET', `/campaigns/${campaignId}/report`)).json()).toMatchObject({ sent: 1, opens: 2, unique_opens: 1, clicks: 0 });
  });

  it('unsigned, tampered and foreign tokens are 404 and never redirect', async () => {
    const ws = await h().workspace();
    const { message } = await sentMessage(ws);
    const link = path(linksOf(message.html)[0]!);
    const token = link.split('/').pop()!;
    const flipped = token.slice(0, 20) + (token[20] === 'A' ? 'B' : 'A') + token.slice(21);
    for (const url of [`/t/c/${flipped}`, '/t/c/not-a-token', `/t/c/${token}x`, `/t/o/${token}`, '/t/o/AAAA', `/t/c/${'A'.repeat(5000)}`]) {
      const reply = await h().request({ method: 'GET', url });
      expect(reply.statusCode, url).toBe(404);
      expect(reply.headers.location).toBeUndefined();
    }
    expect((await api(ws, 'GET', `/messages/${message.id}`)).json().clicked_at).toBeNull();
  });

  it('mailto, tel, in-page anchors and the consent links are not rewritten', async () => {
    const ws = await h().workspace();
    const { message } = await sentMessage(
      ws,
      '<a href="mailto:a@shop.test">m</a><a href="tel:+123">t</a><a href="#top">a</a><a href=\'https://shop.test/x?a=1&amp;b=2\'>x</a><a href="{{ preferences_url }}">p</a>',
    );
    const links = linksOf(message.html);
    expect(links.slice(0, 3)).toEqual(['mailto:a@shop.test', 'tel:+123', '#top']);
    expect(links[3]).toMatch(/\/t\/c\//);
    expect(links[4]).toMatch(/\/cp\/preferences\//);
    const click = await h().request({ method: 'GET', url: path(links[3]!) });
    expect(click.headers.location).toMatch(/^https:\/\/shop\.test\/x\?a=1&b=2&_ir_id=/);
  });

  it('an order after a click is credited to the campaign (click beats a later open), net of refunds and cancellations', async () => {
    const ws = await h().workspace();
    const clicked = await sentMessage(ws);
    const opened = await sentMessage(ws);
    await h().request({ method: 'GET', url: path(linksOf(clicked.message.html)[0]!) });
    // The same person opens the other campaign afterwards: the click still wins.
    await h().request({ method: 'GET', url: path(pixelOf(opened.message.html)) });
    const placed = await hook(ws, { event_type: 'order_placed', email: clicked.email, order: { external_id: 'o-1', total_amount: 100, currency: 'EUR' } });
    expect(placed.statusCode).toBe(200);
    const [order] = (await api(ws, 'GET', `/ecommerce/orders?contact_id=${clicked.contactId}`)).json().data;
    expect(order).toMatchObject({ attributed_campaign_id: clicked.campaignId, attributed_flow_id: null });
    expect((await api(ws, 'GET', `/campaigns/${clicked.campaignId}/report`)).json()).toMatchObject({ orders: 1, revenue: 100 });

    await hook(ws, { event_type: 'refunded_order', email: clicked.email, order: { external_id: 'o-1', refund_amount: 30 } });
    expect((await api(ws, 'GET', `/campaigns/${clicked.campaignId}/report`)).json()).toMatchObject({ orders: 1, revenue: 70 });
    const revenue = (await api(ws, 'GET', '/reports/revenue')).json();
    expect(revenue.data).toEqual([{ campaign_id: clicked.campaignId, name: `Campaign ${clicked.email}`, orders: 1, revenue: 70, currency: 'EUR' }]);
    const cli = await runEmk(['report', 'revenue', '--json', '--workspace', ws.id, '--db', h().database.url]);
    expect(cli.code, cli.stderr).toBe(0);
    expect(JSON.parse(cli.stdout)).toEqual(revenue);

    await hook(ws, { event_type: 'cancelled_order', email: clicked.email, order: { external_id: 'o-1' } });
    expect((await api(ws, 'GET', `/campaigns/${clicked.campaignId}/report`)).json()).toMatchObject({ revenue: 0 });
    expect((await api(ws, 'GET', '/reports/revenue?from=2000-01-01')).json().data[0]).toMatchObject({ revenue: 0 });
    expect((await api(ws, 'GET', '/reports/revenue?from=yesterday')).statusCode).toBe(400);
  });

  it('an open alone credits the order to the opened campaign; the _ir_id of a click ties an order sent with another email to the clicker', async () => {
    const ws = await h().workspace();
    const opened = await sentMessage(ws);
    await h().request({ method: 'GET', url: path(pixelOf(opened.message.html)) });
    await hook(ws, { event_type: 'order_placed', email: opened.email, order: { external_id: 'o-open', total_amount: 40 } });
    expect((await api(ws, 'GET', `/ecommerce/orders?contact_id=${opened.contactId}`)).json().data[0].attributed_campaign_id).toBe(opened.campaignId);

    const clicked = await sentMessage(ws);
    const location = new URL((await h().request({ method: 'GET', url: path(linksOf(clicked.message.html)[0]!) })).headers.location as string);
    const token = location.searchParams.get('_ir_id')!;
    const tokenOrder = await hook(ws, { event_type: 'order_placed', identity_token: token, order: { external_id: 'o-token', total_amount: 55 } });
    expect(tokenOrder.json(), tokenOrder.body).toMatchObject({ status: 'processed' });
    const orders = (await api(ws, 'GET', `/ecommerce/orders?contact_id=${clicked.contactId}`)).json().data;
    expect(orders).toHaveLength(1);
    expect(orders[0]).toMatchObject({ external_id: 'o-token', attributed_campaign_id: clicked.campaignId });
  });
});
