import { readFileSync } from 'node:fs';
import type { AddressInfo } from 'node:net';
import type { Browser, BrowserContext, Page } from 'playwright-core';
import { afterAll, afterEach, beforeAll, beforeEach, expect, it } from 'vitest';
import type { EventRecord } from '../src/domain/events/event.schema.js';
import { eventually, launchChromium, observeCollect, startShop, type SeenCollect, type ShopServer } from './helpers/browser.js';
import { describeEachDatabase, type TestWorkspace } from './helpers/harness.js';

/**
 * The browser SDK in a real headless Chromium: the shop's page is served from http://localhost:<port>, emk
 * from http://127.0.0.1:<port> (another origin, as on a real shop), and what the script did is read back
 * through the management API. A hook on the emk server records each Collect request and can answer the next
 * ones 429 or 503, as a busy or draining server would.
 */

const SNIPPET = '<script>window.emk = window.emk || function(){(emk.q = emk.q || []).push(arguments)}</script>';
const DAY_S = 86_400;

let browser: Browser;
beforeAll(async () => {
  browser = await launchChromium();
});
afterAll(async () => {
  await browser?.close();
});

let emailCounter = 0;
const uniqueEmail = (tag: string) => `${tag}-${process.pid}-${++emailCounter}@example.com`;

describeEachDatabase('Browser SDK (emk.js) in Chromium', (h) => {
  let emk = '';
  let shop: ShopServer;
  let ws: TestWorkspace;
  let context: BrowserContext;
  let page: Page;
  let warnings: string[];
  let pageErrors: string[];
  let seen: SeenCollect[] = [];
  let failNext: ReturnType<typeof observeCollect>['failNext'] = [];

  beforeAll(async () => {
    const app = h().app;
    ({ seen, failNext } = observeCollect(app));
    await app.listen({ port: 0, host: '127.0.0.1' });
    emk = `http://127.0.0.1:${(app.server.address() as AddressInfo).port}`;
    shop = await startShop('localhost');
  });
  afterAll(async () => {
    await shop?.close();
  });

  beforeEach(async () => {
    ws = await h().workspace();
    seen.length = 0;
    failNext.length = 0;
    warnings = [];
    pageErrors = [];
    context = await browser.newContext();
    page = await context.newPage();
    page.on('console', (message) => {
      if (message.type() === 'warning') warnings.push(message.text());
    });
    page.on('pageerror', (error) => pageErrors.push(String(error)));
  });
  afterEach(async () => {
    await context.close();
    // The SDK never throws into the host page, whatever a test did to it.
    expect(pageErrors).toEqual([]);
  });

  /** A shop page with the snippet, queued calls (`before`) and the script tag (`src`: with `?s=` by default). */
  function shopPage(path: string, options: { before?: string; src?: string; title?: string } = {}): string {
    const src = options.src ?? `${emk}/emk.js?s=${ws.siteId}`;
    return shop.page(
      path,
      `<!doctype html><html><head><title>${options.title ?? 'A shop'}</title>${SNIPPET}` +
        `<script>${options.before ?? ''}</script><script async src="${src}"></script></head>` +
        `<body><a id="next" href="/next">next</a></body></html>`,
    );
  }
  async function open(url: string, referer?: string): Promise<void> {
    await page.goto(url, referer ? { referer } : {});
    await page.waitForFunction('window.emk && window.emk.loaded === true');
  }
  const call = (expression: string) => page.evaluate(expression);
  const posts = (path?: string) => seen.filter((s) => s.method === 'POST' && !('failed' in s.body) && (!path || s.path === `/collect/${path}`));
  const eventNames = () => posts('event').map((s) => s.body.event_name);
  const waitForPosts = (count: number, path?: string) => eventually(() => posts(path).length, (n) => n >= count);

  async function events(query = ''): Promise<EventRecord[]> {
    const res = await h().request({ method: 'GET', url: `/api/v1/events${query}`, key: ws.apiKey });
    expect(res.statusCode).toBe(200);
    return res.json().data;
  }
  async function contactOf(email: string): Promise<{ id: string; properties: Record<string, unknown>; anonymous_ids: string[] }> {
    const res = await h().request({ method: 'GET', url: `/api/v1/contacts?email=${encodeURIComponent(email)}`, key: ws.apiKey });
    expect(res.statusCode).toBe(200);
    const [contact] = res.json().data;
    expect(contact).toBeDefined();
    return contact;
  }
  async function cookie(name: string) {
    const found = (await context.cookies()).find((c) => c.name === name);
    expect(found, `cookie ${name}`).toBeDefined();
    return found!;
  }
  const expiresInDays = (expires: number) => (expires - Date.now() / 1000) / DAY_S;

  // ---------------------------------------------------------------- loading and page views

  it('?s= initialises and tracks the page view: active_on_site with url, title and referrer, as text/plain without preflight', async () => {
    const url = shopPage('/landing', { title: 'Spring sale' });
    await open(`${url}?utm=mail`, 'https://search.example/q');
    await waitForPosts(1);
    const [view] = posts('event');
    expect(view!.contentType).toMatch(/^text\/plain/);
    expect(view!.body).toMatchObject({
      site_id: ws.siteId,
      event_name: 'active_on_site',
      properties: { url: `${url}?utm=mail`, title: 'Spring sale', referrer: 'https://search.example/q' },
      anonymous_id: expect.stringMatching(/^[0-9a-f]{32}$/),
    });
    expect(view!.body).not.toHaveProperty('email');
    // Cross-origin (localhost page, 127.0.0.1 API) with a safelisted content type: no OPTIONS preflight.
    expect(seen.filter((s) => s.method === 'OPTIONS')).toEqual([]);
    const [stored] = await eventually(() => events('?event_name=active_on_site'), (rows) => rows.length === 1);
    expect(stored).toMatchObject({ contact_id: null, properties: { url: `${url}?utm=mail`, title: 'Spring sale' } });
    expect(warnings).toEqual([]);
  });

  it("without ?s= nothing is sent until emk('init', site_id); calls before init wait and then go in order", async () => {
    const url = shopPage('/no-site', { src: `${emk}/emk.js`, before: "emk('track', 'early')" });
    await open(url);
    await call("emk('track', 'before_init')");
    await call(`emk('init', ${JSON.stringify(ws.siteId)})`);
    // Exactly the queued calls, in order, each with the site id: nothing went out before init could name it.
    await waitForPosts(3);
    expect(eventNames()).toEqual(['early', 'before_init', 'active_on_site']);
    expect(posts().every((s) => s.body.site_id === ws.siteId)).toBe(true);
    // A second init with another site is refused with a warning; the first stays.
    await call("emk('init', 'another-site')");
    await call("emk('track', 'after')");
    await waitForPosts(4);
    expect(posts().at(-1)!.body.site_id).toBe(ws.siteId);
    await eventually(() => warnings, (w) => w.some((text) => text.includes('already initialised')));
  });

  it('calls queued before load are replayed in order, then the page view; config adds source and _shop to every event', async () => {
    const url = shopPage('/queued', {
      before: [
        "emk('config', {platform: 'shopify', shop: 'shop.test'})",
        "emk('track', 'first', {n: 1})",
        "emk('track', 'viewed_product', {product_id: 'p1'})",
        "emk('track', 'third')",
      ].join(';'),
    });
    await open(url);
    await waitForPosts(4);
    expect(eventNames()).toEqual(['first', 'viewed_product', 'third', 'active_on_site']);
    for (const post of posts('event')) {
      expect(post.body.source).toBe('shopify');
      expect((post.body.properties as Record<string, unknown>)._shop).toBe('shop.test');
    }
    const stored = await eventually(() => events(), (rows) => rows.length === 4);
    expect(stored.map((e) => [e.event_name, e.source, e.properties._shop]).sort()).toEqual([
      ['active_on_site', 'shopify', 'shop.test'],
      ['first', 'shopify', 'shop.test'],
      ['third', 'shopify', 'shop.test'],
      ['viewed_product', 'shopify', 'shop.test'],
    ]);
    expect(stored.find((e) => e.event_name === 'first')!.properties).toEqual({ n: 1, _shop: 'shop.test' });
    // After load, emk() runs at once: a later config applies to later events.
    await call("emk('config', {platform: 'woo'})");
    await call("emk('track', 'later')");
    await waitForPosts(5);
    expect(posts().at(-1)!.body).toMatchObject({ event_name: 'later', source: 'woo', properties: { _shop: 'shop.test' } });
  });

  // ---------------------------------------------------------------- anonymous visitors and identify

  it('an anonymous visitor keeps one _emk_aid cookie (1 year) across pages; identify attaches their earlier events', async () => {
    const email = uniqueEmail('anon');
    await open(shopPage('/one'));
    await call("emk('track', 'added_to_cart', {product_id: 'p9'})");
    await waitForPosts(2);
    const aid = await cookie('_emk_aid');
    expect(aid.domain).toBe('localhost');
    expect(expiresInDays(aid.expires)).toBeGreaterThan(364);
    expect(expiresInDays(aid.expires)).toBeLessThanOrEqual(365);
    expect(posts().every((s) => s.body.anonymous_id === aid.value)).toBe(true);

    await open(shopPage('/two'));
    await waitForPosts(3);
    expect(posts().at(-1)!.body.anonymous_id).toBe(aid.value);
    const anonymous = await events();
    expect(anonymous.every((e) => e.contact_id === null)).toBe(true);

    await call(`emk('identify', ${JSON.stringify(email)}, {first_name: 'Ann'})`);
    await call("emk('track', 'started_checkout')");
    await waitForPosts(5);
    expect(posts('identify')[0]!.body).toEqual({ site_id: ws.siteId, email, properties: { first_name: 'Ann' }, anonymous_id: aid.value });
    expect(posts().at(-1)!.body).toMatchObject({ event_name: 'started_checkout', email, anonymous_id: aid.value });

    const contact = await contactOf(email);
    expect(contact.properties).toMatchObject({ first_name: 'Ann' });
    expect(contact.anonymous_ids).toContain(aid.value);
    const owned = await eventually(() => events(`?contact_id=${contact.id}`), (rows) => rows.length === 4);
    expect(owned.map((e) => e.event_name).sort()).toEqual(['active_on_site', 'active_on_site', 'added_to_cart', 'started_checkout']);
  });

  it('identify before track: the events that follow belong to the contact, on this page and the next', async () => {
    const email = uniqueEmail('first');
    await open(shopPage('/id-first', { before: `emk('identify', ${JSON.stringify(email)})` }));
    await call("emk('track', 'viewed_product', {product_id: 'p1'})");
    await waitForPosts(3);
    expect(posts().map((s) => s.path)).toEqual(['/collect/identify', '/collect/event', '/collect/event']);
    expect(posts('identify')[0]!.body).not.toHaveProperty('properties');
    await open(shopPage('/id-next'));
    await call("emk('track', 'cart_viewed')");
    await waitForPosts(5);
    expect(posts('event').every((s) => s.body.email === email)).toBe(true);
    const contact = await contactOf(email);
    const owned = await eventually(() => events(`?contact_id=${contact.id}`), (rows) => rows.length === 4);
    expect(owned.map((e) => e.event_name).sort()).toEqual(['active_on_site', 'active_on_site', 'cart_viewed', 'viewed_product']);
    expect(await events()).toHaveLength(4);
  });

  it('setCustomer identifies once: skipped when that email is already identified, also on later pages', async () => {
    const email = uniqueEmail('customer');
    await open(shopPage('/account', { before: `emk('setCustomer', ${JSON.stringify(email)})` }));
    await call(`emk('setCustomer', ${JSON.stringify(email.toUpperCase())})`);
    await waitForPosts(2);
    await open(shopPage('/account-2', { before: `emk('setCustomer', ${JSON.stringify(email)})` }));
    await call("emk('track', 'form_submitted')");
    await waitForPosts(4);
    expect(posts('identify')).toHaveLength(1);
    expect(posts('identify')[0]!.body).toMatchObject({ email });
    // Another customer logs in on the same browser: identified anew, and the events follow them.
    const other = uniqueEmail('customer-b');
    await call(`emk('setCustomer', ${JSON.stringify(other)})`);
    await call("emk('track', 'after_switch')");
    await waitForPosts(6);
    expect(posts('identify').map((s) => s.body.email)).toEqual([email, other]);
    expect(posts().at(-1)!.body).toMatchObject({ event_name: 'after_switch', email: other });
    const first = await contactOf(email);
    expect((await events(`?contact_id=${first.id}`)).map((e) => e.event_name).sort()).toEqual([
      'active_on_site',
      'active_on_site',
      'form_submitted',
    ]);
    // identify itself is never skipped (its properties may be new).
    await call(`emk('identify', ${JSON.stringify(other)}, {last_name: 'Lee'})`);
    await waitForPosts(3, 'identify');
  });

  it('_ir_id in the URL is kept 14 days in the _ir_id cookie and sent as identity_token with every call', async () => {
    const email = uniqueEmail('ir');
    const contact = (await h().request({ method: 'POST', url: '/collect/identify', json: { site_id: ws.siteId, email } })).json();
    const token = await h().services.identityTokens.mint(ws.id, { contactId: contact.contact_id, campaignId: 'c1' });
    seen.length = 0;
    await open(`${shopPage('/from-mail')}?_ir_id=${encodeURIComponent(token)}&utm_source=emk`);
    const ir = await cookie('_ir_id');
    expect(ir.value).toBe(token);
    expect(expiresInDays(ir.expires)).toBeGreaterThan(13.9);
    expect(expiresInDays(ir.expires)).toBeLessThanOrEqual(14);
    // Later pages (without the parameter) still send it.
    await open(shopPage('/later'));
    await call(`emk('identify', ${JSON.stringify(email)})`);
    await call("emk('track', 'viewed_product')");
    await waitForPosts(4);
    expect(posts().map((s) => s.body.identity_token)).toEqual([token, token, token, token]);
  });

  it("properties may be given as the spec writes them, {properties: {...}}, or directly", async () => {
    const email = uniqueEmail('wrapped');
    await open(shopPage('/wrapped'));
    await call(`emk('identify', ${JSON.stringify(email)}, {properties: {first_name: 'Wren'}})`);
    await call("emk('track', 'viewed_product', {properties: {product_id: 'p1'}}); emk('track', 'viewed_product', {product_id: 'p2'})");
    await waitForPosts(4);
    expect(posts('identify')[0]!.body.properties).toEqual({ first_name: 'Wren' });
    expect(posts('event').slice(1).map((s) => s.body.properties)).toEqual([{ product_id: 'p1' }, { product_id: 'p2' }]);
    expect((await contactOf(email)).properties).toMatchObject({ first_name: 'Wren' });
  });

  it('the example shop page in fixtures/ works as its comments say', async () => {
    const html = readFileSync(new URL('../fixtures/shop.html', import.meta.url), 'utf8')
      .replaceAll('https://emk.example.com', emk)
      .replaceAll('YOUR_SITE_ID', ws.siteId);
    const customer = uniqueEmail('fixture');
    await open(shop.page('/mug', html.replace('ann@example.com', customer)));
    await waitForPosts(3);
    await page.click('#add-to-cart');
    await page.click('button[type=submit]');
    await waitForPosts(6);
    expect(posts().map((s) => `${s.path.slice(9)} ${s.body.event_name ?? s.body.email}`)).toEqual([
      `identify ${customer}`,
      'event viewed_product',
      'event active_on_site',
      'event added_to_cart',
      'identify ann.lee@example.com',
      'event form_submitted',
    ]);
    for (const post of posts('event')) {
      expect(post.body.source).toBe('example-shop');
      expect((post.body.properties as Record<string, unknown>)._shop).toBe('shop.example.com');
    }
    // The requests were seen leaving the page; their writes may still be committing.
    await eventually(() => events('?event_name=form_submitted'), (rows) => rows.length === 1 && rows[0]!.contact_id !== null);
    const customerId = (await contactOf(customer)).id;
    const owned = await eventually(() => events(`?contact_id=${customerId}`), (rows) => rows.length >= 3);
    expect(owned.map((e) => e.event_name).sort()).toEqual(['active_on_site', 'added_to_cart', 'viewed_product']);
    const subscriber = await eventually(() => contactOf('ann.lee@example.com'), (c) => c.properties.first_name === 'Ann');
    const submitted = await eventually(() => events(`?contact_id=${subscriber.id}`), (rows) => rows.length >= 1);
    expect(submitted.map((e) => e.event_name)).toEqual(['form_submitted']);
  });

  // ---------------------------------------------------------------- robustness

  it('bad arguments are ignored with a console warning, never thrown into the page', async () => {
    await open(shopPage('/bad', { before: "emk('track'); emk('nonsense', 1)" }));
    const results = await call(`[
      emk('track', ''),
      emk('track', 'x', 'not an object'),
      emk('track', 'x', [1]),
      emk('identify', 'not-an-email'),
      emk('identify'),
      emk('setCustomer', 42),
      emk('config', 'shopify'),
      emk('config', {platform: 7}),
      emk('init'),
      emk(),
      (function () { var loop = {}; loop.self = loop; return emk('track', 'circular', {loop: loop}); })(),
      'survived'
    ]`);
    expect((results as unknown[]).at(-1)).toBe('survived');
    await call("emk('track', 'good')");
    await waitForPosts(2);
    expect(eventNames()).toEqual(['active_on_site', 'good']);
    await eventually(() => warnings.length, (n) => n >= 13);
    expect(warnings.every((w) => w.startsWith('emk: '))).toBe(true);
  });

  it('a second copy of the script leaves the first in charge (one page view)', async () => {
    const url = shop.page(
      '/twice',
      `<!doctype html><html><head><title>t</title>${SNIPPET}<script src="${emk}/emk.js?s=${ws.siteId}"></script>` +
        `<script src="${emk}/emk.js?s=${ws.siteId}"></script></head><body></body></html>`,
    );
    await open(url);
    await call("emk('track', 'once')");
    // A barrier: the page view and 'once' were sent before it, so a second copy of either would be in by then.
    await call("emk('track', 'barrier')");
    await waitForPosts(3);
    expect(eventNames()).toEqual(['active_on_site', 'once', 'barrier']);
  });

  it('429 and 503 are retried after Retry-After with back-off, in order, without blocking the page', async () => {
    failNext.push({ status: 503, retryAfter: 1 }, { status: 429, retryAfter: 2 });
    const started = Date.now();
    await open(shopPage('/busy'));
    await call("emk('track', 'queued_behind')");
    // The page stays usable while the SDK waits.
    expect(await call('1 + 1')).toBe(2);
    const arrivals = await waitForPosts(2);
    expect(arrivals).toBe(2);
    const attempts = seen.filter((s) => s.path === '/collect/event');
    expect(attempts.map((s) => s.body.failed ?? s.body.event_name)).toEqual([503, 429, 'active_on_site', 'queued_behind']);
    expect(attempts[1]!.at - attempts[0]!.at).toBeGreaterThanOrEqual(950);
    expect(attempts[2]!.at - attempts[1]!.at).toBeGreaterThanOrEqual(1950);
    expect(Date.now() - started).toBeLessThan(15_000);
    await eventually(() => events(), (rows) => rows.length === 2);
  });

  it('retries are bounded: after 6 tries a request is given up with a warning and the next one goes', async () => {
    await page.clock.install();
    failNext.push(...Array.from({ length: 6 }, () => ({ status: 503, retryAfter: 1 })));
    await open(shopPage('/down'));
    await call("emk('track', 'next_one')");
    const tries = () => seen.filter((s) => 'failed' in s.body).length;
    await eventually(
      async () => {
        await page.clock.runFor(40_000);
        return tries();
      },
      (n) => n >= 6,
      20_000,
    );
    await eventually(
      async () => {
        await page.clock.runFor(1000);
        return eventNames();
      },
      (names) => names.length >= 1,
    );
    expect(eventNames()).toEqual(['next_one']);
    expect(tries()).toBe(6);
    await eventually(() => warnings, (w) => w.includes('emk: /collect/event gave up after 6 tries'));
  });

  it('a request refused with another 4xx is dropped with a warning (no retry)', async () => {
    await open(shopPage('/refused'));
    await waitForPosts(1);
    failNext.push({ status: 400, retryAfter: 0 });
    await call("emk('track', 'refused'); emk('track', 'kept')");
    await waitForPosts(2);
    expect(eventNames()).toEqual(['active_on_site', 'kept']);
    await eventually(() => warnings, (w) => w.includes('emk: /collect/event answered 400'));
  });

  /** The page a visitor leaves to: the shop's own, without the SDK. */
  const plainNextPage = () => shop.page('/next', '<!doctype html><title>next</title><p>next</p>');

  it('survives unload: calls made just before leaving the page still arrive (keepalive fetch, then beacons)', async () => {
    plainNextPage();
    await open(shopPage('/leaving'));
    await waitForPosts(1);
    await call("emk('track', 'clicked_away', {n: 1}); emk('track', 'clicked_away', {n: 2}); emk('track', 'clicked_away', {n: 3}); document.getElementById('next').click()");
    await page.waitForURL(/\/next$/);
    await waitForPosts(4);
    expect(eventNames().sort()).toEqual(['active_on_site', 'clicked_away', 'clicked_away', 'clicked_away']);
    await eventually(() => events('?event_name=clicked_away'), (rows) => rows.length === 3);
  });

  it('a call waiting to be retried when the page goes away leaves by beacon', async () => {
    plainNextPage();
    failNext.push({ status: 503, retryAfter: 30 });
    await open(shopPage('/leaving-busy'));
    await eventually(() => seen.filter((s) => 'failed' in s.body).length, (n) => n === 1);
    await page.goto(`${shop.origin}/next`);
    await waitForPosts(1);
    expect(eventNames()).toEqual(['active_on_site']);
  });
});
