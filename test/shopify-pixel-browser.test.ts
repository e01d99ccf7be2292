import { readFileSync } from 'node:fs';
import { createServer, type AddressInfo } from 'node:net';
import type { BrowserContext, Page } from 'playwright-core';
import { afterAll, afterEach, beforeAll, beforeEach, expect, it } from 'vitest';
import type { EventRecord } from '../src/domain/events/event.schema.js';
import { SHOPIFY_PIXEL_PATH } from '../src/server/routes/sdk/shopify-pixel-routes.js';
import { chromiumOnDemand, eventually, observeCollect, startShop, type SeenCollect, type ShopServer } from './helpers/browser.js';
import { describeEachDatabase, type TestWorkspace } from './helpers/harness.js';

/**
 * The Shopify custom pixel (src/sdk/shopify-pixel.js) as GET /platforms/shopify-pixel.js serves it, run in real
 * Chromium inside a small stand-in for Shopify's sandbox: `analytics.subscribe` (a registry the test publishes
 * Shopify-shaped events into), `browser.cookie` / `browser.localStorage` over the shop page's own, and `init`.
 * The shop page is http://localhost:<port>, emk http://127.0.0.1:<port> (another origin, as on a real shop);
 * what the pixel sent is read back through the management API.
 */

const SHOP_DOMAIN = 'pixel-shop.myshopify.com';
const SOURCE = `shopify:${SHOP_DOMAIN}`;
const DAY_S = 86_400;

/** A port free now, for EMK_BASE_URL: the served pixel posts to the address the server is configured with. */
async function freePort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  await new Promise((resolve) => server.close(resolve));
  return port;
}

let emk = '';
beforeAll(async () => {
  emk = `http://127.0.0.1:${await freePort()}`;
});
// Read when each database's harness is built (after the port above was chosen); the two run one after the other.
const env = {
  get EMK_BASE_URL() {
    return emk;
  },
};

const chromium = chromiumOnDemand();

let counter = 0;
const uniqueEmail = (tag: string) => `${tag}-${process.pid}-${++counter}@example.com`;

// ---------------------------------------------------------------- Shopify-shaped events (Web Pixels API)

const context = (href: string, title = 'Blue Mug – Pixel shop') => ({
  document: { location: { href }, title, referrer: 'https://search.example/q' },
  navigator: { userAgent: 'test' },
  window: {},
});
let eventCounter = 0;
function shopifyEvent(name: string, href: string, data: unknown) {
  return { name, id: `sh-${++eventCounter}`, clientId: 'client-1', timestamp: new Date().toISOString(), seq: eventCounter, type: 'standard', context: context(href), data };
}
const mugVariant = (productId = '8000000001') => ({
  id: '44000000011',
  title: 'Large',
  sku: 'MUG-L',
  untranslatedTitle: 'Large',
  price: { amount: 12.5, currencyCode: 'EUR' },
  image: { src: '//cdn.shopify.example/mug.jpg' },
  product: { id: productId, title: 'Blue Mug', untranslatedTitle: 'Blue Mug', url: '/products/blue-mug', type: 'Mug', vendor: 'Acme' },
});
const checkout = (email: string | null, token = 'ck-token-1') => ({
  token,
  email,
  currencyCode: 'EUR',
  totalPrice: { amount: 25, currencyCode: 'EUR' },
  subtotalPrice: { amount: 25, currencyCode: 'EUR' },
  order: null,
  lineItems: [{ id: 'li-1', title: 'Blue Mug', quantity: 2, variant: mugVariant('gid://shopify/Product/8000000001') }],
});

describeEachDatabase(
  'Shopify custom pixel in Chromium',
  (h) => {
    let shop: ShopServer;
    let ws: TestWorkspace;
    let browserContext: BrowserContext;
    let page: Page;
    let warnings: string[];
    let pageErrors: string[];
    let seen: SeenCollect[] = [];
    let failNext: ReturnType<typeof observeCollect>['failNext'] = [];

    beforeAll(async () => {
      const app = h().app;
      ({ seen, failNext } = observeCollect(app));
      await app.listen({ port: Number(new URL(emk).port), host: '127.0.0.1' });
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
      browserContext = await (await chromium()).newContext();
      page = await browserContext.newPage();
      page.on('console', (message) => {
        if (message.type() === 'warning') warnings.push(message.text());
      });
      page.on('pageerror', (error) => pageErrors.push(String(error)));
    });
    afterEach(async () => {
      await browserContext.close();
      // The pixel never throws into Shopify's sandbox, whatever it was given.
      expect(pageErrors).toEqual([]);
    });

    /**
     * A shop page running the pixel in a Web-Pixels-shaped sandbox. `customer`: the logged-in customer's email
     * (init.data.customer). `pixelSrc`: the script's URL (the served pixel by default).
     */
    async function openShop(path: string, options: { customer?: string; pixelSrc?: string; query?: string } = {}): Promise<string> {
      const href = `${shop.origin}${path}${options.query ?? ''}`;
      const url = new URL(href);
      const init = {
        context: {
          document: {
            location: { href, hostname: url.hostname, protocol: url.protocol, search: url.search, pathname: url.pathname, origin: url.origin },
            title: 'Pixel shop',
            referrer: '',
          },
        },
        data: {
          customer: options.customer ? { id: '7000000001', email: options.customer, firstName: 'Ann', lastName: 'Lee', phone: null, ordersCount: 1 } : null,
          cart: null,
          shop: { name: 'Pixel shop', myshopifyDomain: SHOP_DOMAIN, countryCode: 'DE', storefrontUrl: shop.origin },
        },
      };
      const sandbox = `
        (function () {
          var handlers = {};
          window.analytics = {
            subscribe: function (name, callback) { (handlers[name] = handlers[name] || []).push(callback); return Promise.resolve(true); },
          };
          window.browser = {
            cookie: {
              get: function (name) {
                var m = document.cookie.match(new RegExp('(?:^|; )' + name + '=([^;]*)'));
                return Promise.resolve(m ? m[1] : '');
              },
              set: function (cookieOrName, value) {
                document.cookie = value === undefined ? cookieOrName : cookieOrName + '=' + value;
                return Promise.resolve(document.cookie);
              },
            },
            localStorage: {
              getItem: function (key) { return Promise.resolve(localStorage.getItem(key)); },
              setItem: function (key, value) { return Promise.resolve(localStorage.setItem(key, value)); },
              removeItem: function (key) { return Promise.resolve(localStorage.removeItem(key)); },
            },
          };
          window.init = ${JSON.stringify(init)};
          window.publish = function (event) {
            return Promise.all((handlers[event.name] || []).map(function (callback) { return callback(event); }));
          };
          window.subscribed = function () { return Object.keys(handlers).sort(); };
        })();`;
      const src = options.pixelSrc ?? `${emk}/platforms/shopify-pixel.js?s=${ws.siteId}`;
      shop.page(path, `<!doctype html><html><head><title>Pixel shop</title><script>${sandbox}</script><script src="${src}"></script></head><body></body></html>`);
      await page.goto(href);
      return href;
    }
    /** Publishes one event and waits until the pixel's requests for it were answered. */
    const publish = (event: unknown) => page.evaluate(`publish(${JSON.stringify(event)})`);
    const subscribed = () => page.evaluate('subscribed()');
    const posts = (path?: string) => seen.filter((s) => s.method === 'POST' && !('failed' in s.body) && (!path || s.path === `/collect/${path}`));

    async function events(query = ''): Promise<EventRecord[]> {
      const res = await h().request({ method: 'GET', url: `/api/v1/events${query}`, key: ws.apiKey });
      expect(res.statusCode).toBe(200);
      return res.json().data;
    }
    const eventsNamed = async (name: string) => (await events(`?event_name=${name}`))[0];
    async function contactOf(email: string): Promise<{ id: string; anonymous_ids: string[]; subscription_status: string }> {
      const res = await h().request({ method: 'GET', url: `/api/v1/contacts?email=${encodeURIComponent(email)}`, key: ws.apiKey });
      const [contact] = res.json().data;
      expect(contact, email).toBeDefined();
      return contact;
    }
    async function cookie(name: string) {
      const found = (await browserContext.cookies()).find((c) => c.name === name);
      expect(found, `cookie ${name}`).toBeDefined();
      return found!;
    }

    it('forwards each standard event with emk’s name, the product id and one anonymous id, as text/plain without preflight', async () => {
      const href = await openShop('/products/blue-mug');
      await publish(shopifyEvent('page_viewed', href, {}));
      await publish(shopifyEvent('product_viewed', href, { productVariant: mugVariant() }));
      await publish(shopifyEvent('collection_viewed', `${shop.origin}/collections/mugs`, { collection: { id: 'gid://shopify/Collection/450000001', title: 'Mugs', productVariants: [mugVariant()] } }));
      await publish(shopifyEvent('search_submitted', `${shop.origin}/search?q=mug`, { searchResult: { query: 'mug', productVariants: [mugVariant(), mugVariant('8000000002')] } }));
      const cartLine = { quantity: 2, cost: { totalAmount: { amount: 25, currencyCode: 'EUR' } }, merchandise: mugVariant('gid://shopify/Product/8000000001') };
      await publish(shopifyEvent('product_added_to_cart', href, { cartLine }));
      await publish(shopifyEvent('checkout_started', `${shop.origin}/checkouts/cn/ck-token-1`, { checkout: checkout(null) }));

      expect(posts().map((s) => s.body.event_name)).toEqual([
        'active_on_site',
        'viewed_product',
        'collection_viewed',
        'search_submitted',
        'added_to_cart',
        'started_checkout',
      ]);
      const aid = await cookie('_emk_aid');
      expect(aid.value).toMatch(/^[0-9a-f]{32}$/);
      expect(aid.domain).toBe('localhost');
      expect((aid.expires - Date.now() / 1000) / DAY_S).toBeGreaterThan(364);
      expect(await page.evaluate("localStorage.getItem('_emk_aid')")).toBe(aid.value);
      for (const post of posts()) {
        expect(post.body).toMatchObject({ site_id: ws.siteId, anonymous_id: aid.value, source: SOURCE });
        expect(post.body).not.toHaveProperty('email');
        expect(post.contentType).toMatch(/^text\/plain/);
      }
      expect(seen.filter((s) => s.method === 'OPTIONS')).toEqual([]);

      const stored = await eventually(() => events(), (rows) => rows.length === 6);
      expect(stored.every((e) => e.contact_id === null && e.source === SOURCE)).toBe(true);
      expect((await eventsNamed('active_on_site'))!.properties).toEqual({ url: href, title: 'Blue Mug – Pixel shop', referrer: 'https://search.example/q' });
      expect((await eventsNamed('viewed_product'))!.properties).toEqual({
        product_id: '8000000001',
        variant_id: '44000000011',
        title: 'Blue Mug',
        variant_title: 'Large',
        sku: 'MUG-L',
        price: 12.5,
        currency: 'EUR',
        url: `${shop.origin}/products/blue-mug`,
        image_url: 'http://cdn.shopify.example/mug.jpg',
      });
      expect((await eventsNamed('collection_viewed'))!.properties).toEqual({ collection_id: '450000001', title: 'Mugs', url: `${shop.origin}/collections/mugs` });
      expect((await eventsNamed('search_submitted'))!.properties).toEqual({ query: 'mug', results: 2, url: `${shop.origin}/search?q=mug` });
      // The PRODUCT id, the number of its gid: what catalog products and order items are keyed by.
      expect((await eventsNamed('added_to_cart'))!.properties).toMatchObject({ product_id: '8000000001', variant_id: '44000000011', quantity: 2, price: 12.5 });
      expect((await eventsNamed('started_checkout'))!.properties).toEqual({
        checkout_token: 'ck-token-1',
        value: 25,
        currency: 'EUR',
        items: [{ product_id: '8000000001', variant_id: '44000000011', title: 'Blue Mug', quantity: 2, price: 12.5 }],
      });
      expect(warnings).toEqual([]);
    });

    it('the email typed at checkout identifies the visitor: earlier events become the contact’s, later ones carry the email', async () => {
      const email = uniqueEmail('checkout');
      const href = await openShop('/products/blue-mug');
      await publish(shopifyEvent('product_viewed', href, { productVariant: mugVariant() }));
      await publish(shopifyEvent('checkout_started', `${shop.origin}/checkouts/cn/ck-2`, { checkout: checkout(email, 'ck-2') }));
      await publish(shopifyEvent('checkout_completed', `${shop.origin}/checkouts/cn/ck-2/thank-you`, { checkout: { ...checkout(email, 'ck-2'), order: { id: '5500000001', customer: null } } }));

      expect(posts().map((s) => `${s.path} ${s.body.event_name ?? s.body.email}`)).toEqual([
        '/collect/event viewed_product',
        `/collect/identify ${email}`,
        '/collect/event started_checkout',
        '/collect/event checkout_completed',
      ]);
      const aid = (await cookie('_emk_aid')).value;
      expect(posts('identify')[0]!.body).toEqual({ site_id: ws.siteId, email, anonymous_id: aid });
      expect(posts('event')[0]!.body).not.toHaveProperty('email');
      expect(posts('event').slice(1).every((s) => s.body.email === email && s.body.anonymous_id === aid)).toBe(true);

      const contact = await contactOf(email);
      expect(contact.anonymous_ids).toContain(aid);
      const owned = await eventually(() => events(`?contact_id=${contact.id}`), (rows) => rows.length === 3);
      expect(owned.map((e) => e.event_name).sort()).toEqual(['checkout_completed', 'started_checkout', 'viewed_product']);
      expect(owned.find((e) => e.event_name === 'checkout_completed')!.properties).toMatchObject({ checkout_token: 'ck-2', order_id: '5500000001', value: 25 });
      expect(await events()).toHaveLength(3);
    });

    it('a logged-in customer (init.data.customer) is identified once: later pages keep the anonymous id and skip identify', async () => {
      const email = uniqueEmail('customer');
      const first = await openShop('/account', { customer: email });
      await publish(shopifyEvent('page_viewed', first, {}));
      const second = await openShop('/products/blue-mug', { customer: email });
      await publish(shopifyEvent('page_viewed', second, {}));
      await publish(shopifyEvent('product_viewed', second, { productVariant: mugVariant() }));

      expect(posts().map((s) => s.path)).toEqual(['/collect/identify', '/collect/event', '/collect/event', '/collect/event']);
      const aid = (await cookie('_emk_aid')).value;
      expect(posts().every((s) => s.body.anonymous_id === aid && s.body.email === email)).toBe(true);
      const contact = await contactOf(email);
      // Created by the identify of the Collect API: consent is the webhooks' business, not the pixel's.
      expect(contact.subscription_status).toBe('non_subscribed');
      const owned = await eventually(() => events(`?contact_id=${contact.id}`), (rows) => rows.length === 3);
      expect(owned.map((e) => e.event_name).sort()).toEqual(['active_on_site', 'active_on_site', 'viewed_product']);
    });

    it('a visitor from an emk message (_ir_id in the landing URL) is the message’s contact until identified', async () => {
      const email = uniqueEmail('linked');
      const identified = (await h().request({ method: 'POST', url: '/collect/identify', json: { site_id: ws.siteId, email } })).json();
      const token = await h().services.identityTokens.mint(ws.id, { contactId: identified.contact_id, campaignId: 'c1' });
      seen.length = 0;
      const landing = await openShop('/landing', { query: `?_ir_id=${encodeURIComponent(token)}` });
      await publish(shopifyEvent('page_viewed', landing, {}));
      expect((await cookie('_ir_id')).value).toBe(token);
      // A later page without the parameter still sends it (from the cookie).
      const later = await openShop('/products/blue-mug');
      await publish(shopifyEvent('product_viewed', later, { productVariant: mugVariant() }));
      expect(posts().map((s) => s.body.identity_token)).toEqual([token, token]);
      const owned = await eventually(() => events(`?contact_id=${identified.contact_id}`), (rows) => rows.length === 2);
      expect(owned.map((e) => e.event_name).sort()).toEqual(['active_on_site', 'viewed_product']);
    });

    it('subscribes only to the events emk takes; a malformed event is sent with what it has and never throws', async () => {
      const href = await openShop('/odd');
      expect(await subscribed()).toEqual([
        'cart_viewed',
        'checkout_completed',
        'checkout_started',
        'collection_viewed',
        'page_viewed',
        'product_added_to_cart',
        'product_removed_from_cart',
        'product_viewed',
        'search_submitted',
      ]);
      await publish(shopifyEvent('alert_displayed', href, { alert: { message: 'x' } }));
      await publish({ name: 'product_viewed' });
      await publish(shopifyEvent('product_added_to_cart', href, { cartLine: null }));
      await publish(shopifyEvent('search_submitted', href, { searchResult: { query: 42, productVariants: 'none' } }));
      expect(posts().map((s) => [s.body.event_name, s.body.properties])).toEqual([
        ['viewed_product', {}],
        ['added_to_cart', {}],
        ['search_submitted', { url: href }],
      ]);
      await eventually(() => events(), (rows) => rows.length === 3);
    });

    it('a busy server (503, Retry-After) is tried again; the events keep their order', async () => {
      const href = await openShop('/busy');
      failNext.push({ status: 503, retryAfter: 1 });
      const started = Date.now();
      await publish(shopifyEvent('page_viewed', href, {}));
      await publish(shopifyEvent('product_viewed', href, { productVariant: mugVariant() }));
      expect(Date.now() - started).toBeGreaterThanOrEqual(950);
      expect(seen.filter((s) => s.path === '/collect/event').map((s) => s.body.failed ?? s.body.event_name)).toEqual([503, 'active_on_site', 'viewed_product']);
      await eventually(() => events(), (rows) => rows.length === 2);
    });

    it('the copy in the repository, placeholders not filled in, warns and subscribes to nothing', async () => {
      shop.page('/raw-pixel.js', readFileSync(SHOPIFY_PIXEL_PATH, 'utf8'));
      await openShop('/raw', { pixelSrc: `${shop.origin}/raw-pixel.js` });
      expect(await subscribed()).toEqual([]);
      expect(warnings).toEqual(['emk: EMK_BASE_URL and EMK_SITE_ID are not filled in: nothing is sent']);
    });

    // ---------------------------------------------------------------- GET /platforms/shopify-pixel.js

    it('GET /platforms/shopify-pixel.js fills in EMK_BASE_URL and the site id; an unknown site is 404, none 400', async () => {
      const res = await h().request({ method: 'GET', url: `/platforms/shopify-pixel.js?s=${ws.siteId}` });
      expect(res.statusCode).toBe(200);
      expect(res.headers['content-type']).toBe('text/javascript; charset=utf-8');
      expect(res.body).toContain(`const EMK_BASE_URL = ${JSON.stringify(emk)};`);
      expect(res.body).toContain(`const EMK_SITE_ID = ${JSON.stringify(ws.siteId)};`);
      expect(res.body).not.toContain("'EMK_BASE_URL'");
      expect(res.body).not.toContain("'EMK_SITE_ID'");
      // Only the two values differ from the file in the repository.
      const raw = readFileSync(SHOPIFY_PIXEL_PATH, 'utf8');
      expect(res.body.replace(JSON.stringify(emk), "'EMK_BASE_URL'").replace(JSON.stringify(ws.siteId), "'EMK_SITE_ID'")).toBe(raw);

      const unknown = await h().request({ method: 'GET', url: '/platforms/shopify-pixel.js?s=no-such-site' });
      expect(unknown.statusCode).toBe(404);
      expect(unknown.json()).toMatchObject({ error: 'unknown site_id' });
      const missing = await h().request({ method: 'GET', url: '/platforms/shopify-pixel.js' });
      expect(missing.statusCode).toBe(400);
      expect(missing.json().error).toMatch(/\bs\b/);
    });
  },
  env,
);
