/**
 * emk custom pixel for Shopify: Settings → Customer events → Add custom pixel (docs/platforms/shopify.md,
 * "Storefront events"). Copy it filled in from GET {emk}/platforms/shopify-pixel.js?s=<site_id>, or replace the
 * two values below by hand.
 *
 * It forwards Shopify's standard customer events to emk's Collect API with emk's event names, under one
 * anonymous visitor id (`_emk_aid`, the cookie emk.js uses too), and identifies the visitor when Shopify knows
 * the email (a logged-in customer, or the email typed at checkout): the visitor's earlier events then become
 * the contact's. Plain JavaScript for Shopify's sandbox (its `analytics`, `browser` and `init`); it never throws.
 */
const EMK_BASE_URL = 'EMK_BASE_URL'; // your emk address, e.g. 'https://emk.example.com'
const EMK_SITE_ID = 'EMK_SITE_ID'; // your workspace's site_id

/**
 * Subscribes to the events emk takes and returns the handler (one Shopify event → its requests; the promise
 * settles once they are answered). `pixel` is Shopify's Standard API: `{analytics, browser, init}`.
 */
function emkShopifyPixel(pixel, settings) {
  const AID = '_emk_aid';
  const EMAIL = '_emk_email';
  const IR = '_ir_id';
  const YEAR_S = 365 * 86400;
  const TRIES = 4;
  const { analytics, browser, init } = pixel;
  const base = String(settings.baseUrl).replace(/\/+$/, '');
  const site = settings.siteId;
  // The integration's domain, as its webhooks name it (X-Shopify-Shop-Domain): events share its source.
  const shop = init.data?.shop?.myshopifyDomain || init.context?.document?.location?.hostname || 'unknown';

  const warn = (message) => {
    try {
      console.warn('emk: ' + message);
    } catch (_) {
      // no console: nothing to tell
    }
  };
  const text = (v) => (typeof v === 'string' && v.trim() !== '' ? v : undefined);
  /** Shopify's ids are numbers as text, or GraphQL gids (`gid://shopify/Product/123`): emk keys the number. */
  const idOf = (v) => {
    if (typeof v === 'number') return String(v);
    const id = text(v);
    const gid = id && /^gid:\/\/shopify\/\w+\/(\d+)/.exec(id);
    return gid ? gid[1] : id;
  };
  const countOf = (list) => (Array.isArray(list) ? list.length : undefined);
  const amountOf = (money) => (money && typeof money.amount === 'number' ? money.amount : undefined);
  /** Without the keys whose value is missing (Shopify sends null for what a page does not know). */
  const defined = (props) => {
    const out = {};
    for (const key of Object.keys(props)) if (props[key] !== undefined && props[key] !== null) out[key] = props[key];
    return out;
  };
  const pageOf = (event) => event.context?.document ?? init.context?.document ?? {};
  const absolute = (url, page) => {
    try {
      return url ? new URL(url, page.location?.href).href : undefined;
    } catch (_) {
      return text(url);
    }
  };

  const variantProps = (variant, page) =>
    defined({
      product_id: idOf(variant?.product?.id),
      variant_id: idOf(variant?.id),
      title: text(variant?.product?.title),
      variant_title: text(variant?.title),
      sku: text(variant?.sku),
      price: amountOf(variant?.price),
      currency: text(variant?.price?.currencyCode),
      url: absolute(variant?.product?.url, page),
      image_url: absolute(variant?.image?.src, page),
    });
  const lineProps = (line, page) => defined({ ...variantProps(line?.merchandise, page), quantity: line?.quantity });
  const checkoutProps = (checkout) =>
    defined({
      checkout_token: text(checkout?.token),
      order_id: idOf(checkout?.order?.id),
      value: amountOf(checkout?.totalPrice),
      currency: text(checkout?.currencyCode) ?? text(checkout?.totalPrice?.currencyCode),
      items: (checkout?.lineItems ?? []).map((item) =>
        defined({
          product_id: idOf(item?.variant?.product?.id),
          variant_id: idOf(item?.variant?.id),
          title: text(item?.title) ?? text(item?.variant?.product?.title),
          quantity: item?.quantity,
          price: amountOf(item?.variant?.price),
        }),
      ),
    });

  /** Shopify's event → emk's name and properties (and the email it reveals). */
  const EVENTS = {
    page_viewed: (e, page) => ['active_on_site', defined({ url: page.location?.href, title: text(page.title), referrer: text(page.referrer) })],
    product_viewed: (e, page) => ['viewed_product', variantProps(e.data?.productVariant, page)],
    collection_viewed: (e, page) => [
      'collection_viewed',
      defined({ collection_id: idOf(e.data?.collection?.id), title: text(e.data?.collection?.title), url: page.location?.href }),
    ],
    search_submitted: (e, page) => [
      'search_submitted',
      defined({ query: text(e.data?.searchResult?.query), results: countOf(e.data?.searchResult?.productVariants), url: page.location?.href }),
    ],
    product_added_to_cart: (e, page) => ['added_to_cart', lineProps(e.data?.cartLine, page)],
    product_removed_from_cart: (e, page) => ['removed_from_cart', lineProps(e.data?.cartLine, page)],
    cart_viewed: (e) => [
      'cart_viewed',
      defined({ value: amountOf(e.data?.cart?.cost?.totalAmount), currency: text(e.data?.cart?.cost?.totalAmount?.currencyCode) }),
    ],
    checkout_started: (e) => ['started_checkout', checkoutProps(e.data?.checkout), e.data?.checkout?.email],
    checkout_completed: (e) => ['checkout_completed', checkoutProps(e.data?.checkout), e.data?.checkout?.email],
  };

  // ---------------------------------------------------------------- the visitor, kept in the shop's top frame

  const secure = init.context?.document?.location?.protocol === 'https:' ? '; secure' : '';
  const setCookie = (name, value, seconds) =>
    browser.cookie.set(name + '=' + encodeURIComponent(value) + '; max-age=' + seconds + '; path=/; samesite=lax' + secure);
  const getCookie = (name) =>
    browser.cookie.get(name).then((v) => {
      try {
        return text(v) && decodeURIComponent(v);
      } catch (_) {
        return undefined;
      }
    });
  const newId = () => {
    const bytes = crypto.getRandomValues(new Uint8Array(16));
    return Array.from(bytes, (b) => (b + 256).toString(16).slice(1)).join('');
  };
  const quietly = (promise) => Promise.resolve(promise).catch(() => undefined);

  /** `{anonymousId, email, token}`: read once per page; the anonymous id is renewed for a year on every page. */
  const visitor = (async () => {
    const anonymousId = (await quietly(getCookie(AID))) || text(await quietly(browser.localStorage.getItem(AID))) || newId();
    await quietly(setCookie(AID, anonymousId, YEAR_S));
    await quietly(browser.localStorage.setItem(AID, anonymousId));
    // A visitor from an emk message: the link's `_ir_id` (kept 14 days, as emk.js keeps it).
    const linked = text(new URLSearchParams(init.context?.document?.location?.search ?? '').get(IR));
    if (linked) await quietly(setCookie(IR, linked, 14 * 86400));
    const token = linked || (await quietly(getCookie(IR)));
    const email = text(await quietly(browser.localStorage.getItem(EMAIL)));
    return { anonymousId, token, email };
  })();

  // ---------------------------------------------------------------- sending: in order, one request at a time

  const pause = (ms) => new Promise((resolve) => setTimeout(resolve, ms));
  /** POSTs as text/plain JSON (no preflight); retries 429, 502-504 and network failures after a back-off. */
  async function post(path, body) {
    for (let tries = 1; ; tries++) {
      let status = 0;
      let retryAfter = 0;
      try {
        const res = await fetch(base + path, { method: 'POST', body: JSON.stringify(body), keepalive: true, credentials: 'omit' });
        status = res.status;
        retryAfter = Number(res.headers.get('retry-after')) || 0;
      } catch (_) {
        // offline or cut off: retried like a busy server
      }
      if (status >= 200 && status < 300) return true;
      if ((status !== 0 && status !== 429 && (status < 502 || status > 504)) || tries >= TRIES) {
        warn(path + (status ? ' answered ' + status : ' failed') + ' after ' + tries + (tries > 1 ? ' tries' : ' try'));
        return false;
      }
      await pause(Math.max(retryAfter * 1000, 500 * 2 ** tries));
    }
  }

  let queue = Promise.resolve();
  const enqueue = (step) => (queue = queue.then(() => visitor).then(step).catch((error) => warn(String(error))));

  async function identify(me, email) {
    if (me.email && me.email.toLowerCase() === email.toLowerCase()) return;
    const body = { site_id: site, email, anonymous_id: me.anonymousId };
    if (await post('/collect/identify', body)) {
      me.email = email;
      await quietly(browser.localStorage.setItem(EMAIL, email));
    }
  }

  const customerEmail = text(init.data?.customer?.email);
  /** One Shopify event: identify first when it reveals a new email, then the event (as the contact's once known). */
  function handle(event) {
    const mapping = event && EVENTS[event.name];
    if (!mapping) return Promise.resolve();
    let name, properties, email;
    try {
      [name, properties, email] = mapping(event, pageOf(event));
    } catch (error) {
      warn(event.name + ' not sent: ' + String(error));
      return Promise.resolve();
    }
    return enqueue(async (me) => {
      const known = text(email) || customerEmail;
      if (known) await identify(me, known);
      const body = { site_id: site, event_name: name, properties, source: 'shopify:' + shop, anonymous_id: me.anonymousId };
      if (me.email) body.email = me.email;
      else if (me.token) body.identity_token = me.token;
      await post('/collect/event', body);
    });
  }

  // A copy not filled in (a wrong site id is refused by emk with 404, warned per request).
  if (!/^https?:\/\//.test(base) || !text(site)) {
    warn('EMK_BASE_URL and EMK_SITE_ID are not filled in: nothing is sent');
    return () => Promise.resolve();
  }
  for (const name of Object.keys(EVENTS)) analytics.subscribe(name, handle);
  return handle;
}

try {
  emkShopifyPixel({ analytics, browser, init }, { baseUrl: EMK_BASE_URL, siteId: EMK_SITE_ID });
} catch (error) {
  console.warn('emk: pixel not started: ' + String(error));
}
