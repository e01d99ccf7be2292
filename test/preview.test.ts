import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { chromiumOnDemand } from './helpers/browser.js';
import { describeEachDatabase, type TestWorkspace } from './helpers/harness.js';
import { sendingHelpers } from './helpers/sending.js';

const chromium = chromiumOnDemand();

/** A 2×1 PNG: what the shop's image server answers for every product picture. */
const PNG = Buffer.from('iVBORw0KGgoAAAANSUhEUgAAAAIAAAABCAYAAAD0In+KAAAADklEQVR4nGP4z8AAQv8BD/kD/YURmXYAAAAASUVORK5CYII=', 'base64');

/** The shop's image host on loopback: answers /p/<n>.png, counts what it served. */
async function startImages(): Promise<{ origin: string; served: string[]; close(): Promise<void> }> {
  const served: string[] = [];
  const server: Server = createServer((req, res) => {
    const ok = /^\/p\/\d+\.png$/.test(req.url ?? '');
    if (ok) served.push(req.url!);
    res.writeHead(ok ? 200 : 404, { 'content-type': ok ? 'image/png' : 'text/plain' });
    res.end(ok ? PNG : 'not found');
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    origin: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    served,
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}

describeEachDatabase('preview pages (preview.html) in Chromium', (h) => {
  const { api, contact, campaign } = sendingHelpers(h);
  let emk = '';
  let images: Awaited<ReturnType<typeof startImages>>;

  beforeAll(async () => {
    await h().app.listen({ port: 0, host: '127.0.0.1' });
    emk = `http://127.0.0.1:${(h().app.server.address() as AddressInfo).port}`;
    images = await startImages();
  });
  afterAll(async () => {
    await images?.close();
  });

  /** Two products with pictures on the image host, and a feed of them; the MJML grid of the docs around it. */
  async function shopCampaign(ws: TestWorkspace): Promise<{ id: string; mjml: string }> {
    for (const n of [1, 2]) {
      const reply = await api(ws, 'POST', '/ecommerce/products', {
        external_id: `p${n}`,
        title: `Mug ${n}`,
        price: 9 + n,
        currency: 'EUR',
        url: `https://shop.test/p/${n}?utm_source=emk`,
        image_url: `${images.origin}/p/${n}.png`,
      });
      expect(reply.statusCode, reply.body).toBeLessThan(300);
    }
    const feed = (await api(ws, 'POST', '/product-feeds', { name: 'New', max_items: 10, recommendation_type: 'newest' })).json().feed.id;
    const mjml = `<mjml><mj-body>
  <mj-section><mj-column><mj-text>Hi {{ contact.first_name }}</mj-text></mj-column></mj-section>
  <mj-section>
    <mj-raw>{% products feed: "${feed}", limit: 2 %}</mj-raw>
    <mj-column width="50%">
      <mj-image src="{{ item.image_url }}" href="{{ item.url }}" alt="{{ item.title }}" width="200px" />
      <mj-text align="center"><a href="{{ item.url }}">{{ item.title }}</a> {{ item.price }} {{ item.currency }}</mj-text>
    </mj-column>
    <mj-raw>{% endproducts %}</mj-raw>
  </mj-section>
  <mj-raw><script>document.title = 'script ran'</script></mj-raw>
</mj-body></mjml>`;
    return { id: await campaign(ws, { format: 'mjml', html: mjml }), mjml };
  }

  it('a campaign preview opens in Chromium: the product images load, links as written, the footer as sent, no script runs', async () => {
    const ws = await h().workspace();
    const ann = await contact(ws, 'subscribed', { first_name: 'Ann' });
    const { id } = await shopCampaign(ws);
    const context = await (await chromium()).newContext();
    try {
      await context.setExtraHTTPHeaders({ 'x-api-key': ws.apiKey });
      const page = await context.newPage();
      const violations: string[] = [];
      page.on('console', (message) => {
        if (/Content Security Policy/i.test(message.text())) violations.push(message.text());
      });
      const response = await page.goto(`${emk}/api/v1/campaigns/${id}/preview.html?contact_id=${ann}`);
      expect(response?.status()).toBe(200);
      expect(response?.headers()['content-type']).toBe('text/html; charset=utf-8');
      expect(response?.headers()['content-security-policy']).toContain("default-src 'none'");
      expect(await page.textContent('body')).toContain('Hi Ann');
      const pictures = await page.$$eval('img', (all) =>
        all.filter((img) => img.src.includes('/p/')).map((img) => ({ src: img.src, width: img.naturalWidth, alt: img.alt, complete: img.complete })),
      );
      expect(pictures).toEqual([
        { src: `${images.origin}/p/2.png`, width: 2, alt: 'Mug 2', complete: true },
        { src: `${images.origin}/p/1.png`, width: 2, alt: 'Mug 1', complete: true },
      ]);
      expect(images.served).toEqual(expect.arrayContaining(['/p/1.png', '/p/2.png']));
      // Links as written (a preview's links are not tracking-wrapped: its message is never stored).
      const links = await page.$$eval('a', (all) => all.map((a) => ({ href: a.getAttribute('href'), text: a.textContent?.trim() })));
      expect(links).toEqual(
        expect.arrayContaining([
          { href: 'https://shop.test/p/1?utm_source=emk', text: 'Mug 1' },
          { href: 'https://shop.test/p/2?utm_source=emk', text: 'Mug 2' },
          { href: expect.stringMatching(/\/cp\/unsubscribe\//), text: 'Unsubscribe' },
        ]),
      );
      expect(links.some((l) => l.href?.includes('/t/c/'))).toBe(false);
      expect(await page.title()).not.toBe('script ran');
      expect(violations.length).toBeGreaterThan(0);
    } finally {
      await context.close();
    }
  });

  it('preview.html needs the API key, names a missing contact_id, 404s another workspace’s campaign or an unknown contact', async () => {
    const ws = await h().workspace();
    const ann = await contact(ws, 'subscribed', { first_name: 'Ann' });
    const id = await campaign(ws, { html: '<p>Hi {{ contact.first_name }}</p>' });
    const get = (url: string, key?: string) => h().request({ method: 'GET', url: `/api/v1${url}`, ...(key ? { key } : {}) });
    expect((await get(`/campaigns/${id}/preview.html?contact_id=${ann}`)).statusCode).toBe(401);
    const missing = await get(`/campaigns/${id}/preview.html`, ws.apiKey);
    expect(missing.statusCode).toBe(400);
    expect(missing.json().error).toMatch(/contact_id/);
    expect((await get(`/campaigns/${id}/preview.html?contact_id=nobody`, ws.apiKey)).statusCode).toBe(404);
    const other = await h().workspace();
    expect((await get(`/campaigns/${id}/preview.html?contact_id=${ann}`, other.apiKey)).statusCode).toBe(404);
    const page = await get(`/campaigns/${id}/preview.html?contact_id=${ann}`, ws.apiKey);
    expect(page.statusCode).toBe(200);
    expect(page.headers['cache-control']).toBe('no-store');
    // The footer as sent: this body has no unsubscribe link, so the workspace's footer follows it.
    expect(page.body).toMatch(/^<p>Hi Ann<\/p>[\s\S]*Unsubscribe<\/a>/);
  });

  it('a flow email step previews by its path, with the trigger the contact’s latest enrolment saw', async () => {
    const ws = await h().workspace();
    const ann = await contact(ws, 'subscribed', { first_name: 'Ann' });
    const flow = await api(ws, 'POST', '/flows', {
      name: 'Thanks',
      trigger: { type: 'event', event_name: 'reviewed' },
      message_type: 'transactional',
      steps: [
        { type: 'delay', minutes: 60 },
        { type: 'email', subject: 'Thanks', format: 'mjml', html: '<mjml><mj-body><mj-section><mj-column><mj-text>Thanks {{ contact.first_name }} for {{ event.properties.product | default: "nothing" }}</mj-text></mj-column></mj-section></mj-body></mjml>' },
      ],
    });
    expect(flow.statusCode, flow.body).toBe(201);
    const flowId = flow.json().id;
    const get = (path: string, contactId = ann) => h().request({ method: 'GET', url: `/api/v1/flows/${flowId}/steps/${path}/preview.html?contact_id=${contactId}`, key: ws.apiKey });
    const before = await get('1');
    expect(before.statusCode, before.body).toBe(200);
    expect(before.headers['content-type']).toBe('text/html; charset=utf-8');
    expect(before.body).toContain('Thanks Ann for nothing');
    // Transactional: no marketing footer.
    expect(before.body).not.toContain('Unsubscribe');

    await api(ws, 'PATCH', `/flows/${flowId}`, { status: 'live' });
    expect((await api(ws, 'POST', '/events', { contact_id: ann, event_name: 'reviewed', properties: { product: 'Mug 1' } })).statusCode).toBeLessThan(300);
    await sendingHelpers(h).work();
    expect((await get('1')).body).toContain('Thanks Ann for Mug 1');
    // A later enrolment is what the preview shows by default; enrollment_id picks one (its contact implied).
    expect((await api(ws, 'POST', '/events', { contact_id: ann, event_name: 'reviewed', properties: { product: 'Mug 2' } })).statusCode).toBeLessThan(300);
    await sendingHelpers(h).work();
    expect((await get('1')).body).toContain('Thanks Ann for Mug 2');
    const enrolments = (await api(ws, 'GET', `/flows/${flowId}/enrollments`)).json().data as Array<{ id: string; contact_id: string }>;
    expect(enrolments).toHaveLength(2);
    const first = [...enrolments].sort((a, b) => (a.id < b.id ? -1 : 1))[0]!.id;
    const byEnrolment = (query: string) => h().request({ method: 'GET', url: `/api/v1/flows/${flowId}/steps/1/preview.html?${query}`, key: ws.apiKey });
    expect((await byEnrolment(`contact_id=${ann}&enrollment_id=${first}`)).body).toContain('Thanks Ann for Mug 1');
    expect((await byEnrolment(`enrollment_id=${first}`)).body).toContain('Thanks Ann for Mug 1');
    const bob = (await api(ws, 'POST', '/contacts', { email: 'bob-preview@example.com', properties: { first_name: 'Bob' } })).json().id;
    const another = await byEnrolment(`contact_id=${bob}&enrollment_id=${first}`);
    expect(another.statusCode).toBe(400);
    expect(another.json().error).toBe("invalid request: enrollment_id names another contact's enrolment");
    expect((await byEnrolment(`enrollment_id=nothing-like-it`)).statusCode).toBe(404);
    const neither = await byEnrolment('');
    expect(neither.statusCode).toBe(400);
    expect(neither.json().error).toMatch(/^invalid request: contact_id is required/);

    const delay = await get('0');
    expect(delay.statusCode).toBe(400);
    expect(delay.json().error).toMatch(/path names a delay step, not an email step/);
    for (const path of ['2', '1.yes.0']) expect((await get(path)).statusCode, path).toBe(404);
    const bad = await get('one');
    expect(bad.statusCode).toBe(400);
    expect(bad.json().error).toMatch(/path/);
    expect((await get('1', 'nobody')).statusCode).toBe(404);

    // A step inside a branch is named by its path in the flow program (2.no.0).
    const branched = await api(ws, 'POST', '/flows', {
      name: 'Branched',
      trigger: { type: 'event', event_name: 'reviewed' },
      steps: [
        { type: 'delay', minutes: 1 },
        { type: 'delay', minutes: 1 },
        { type: 'branch', conditions: { all: [{ subscription_status: 'subscribed' }] }, yes: [], no: [{ type: 'email', subject: 'Nested', html: '<p>Nested for {{ contact.first_name }}</p>' }] },
      ],
    });
    expect(branched.statusCode, branched.body).toBe(201);
    const nested = (path: string) => h().request({ method: 'GET', url: `/api/v1/flows/${branched.json().id}/steps/${path}/preview.html?contact_id=${ann}`, key: ws.apiKey });
    const inside = await nested('2.no.0');
    expect(inside.statusCode, inside.body).toBe(200);
    expect(inside.body).toContain('Nested for Ann');
    for (const path of ['2.yes.0', '2.no.1', '3']) expect((await nested(path)).statusCode, path).toBe(404);
    // An enrolment of another flow is not found in this one.
    const elsewhere = await h().request({ method: 'GET', url: `/api/v1/flows/${branched.json().id}/steps/2.no.0/preview.html?enrollment_id=${first}`, key: ws.apiKey });
    expect([elsewhere.statusCode, elsewhere.json().error]).toEqual([404, 'enrollment not found']);
  });
});
