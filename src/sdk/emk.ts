/**
 * emk.js: the browser script shops paste into their pages (the spec's "Browser SDK"; docs/api/sdk.md).
 *
 *   <script>window.emk = window.emk || function(){(emk.q = emk.q || []).push(arguments)}</script>
 *   <script async src="https://EMK_HOST/emk.js?s=SITE_ID"></script>
 *
 * Dependency-free and import-free: built on its own (src/sdk/tsconfig.json) into one file, dist/sdk/emk.js,
 * which the server serves at /emk.js. It talks to the Collect API of the server it was loaded from, with
 * `text/plain` JSON bodies (no CORS preflight). It never throws into the host page.
 */
(function (boot: () => void) {
  try {
    boot();
  } catch (error) {
    try {
      console.warn('emk: not started: ' + String(error));
    } catch (_) {
      // no console: nothing to tell
    }
  }
})(function () {
  type Args = ArrayLike<unknown>;
  interface Stub {
    (...args: unknown[]): void;
    q?: Args[];
    /** Set on the real function: a second copy of the script leaves the first in charge. */
    loaded?: boolean;
  }
  interface Job {
    path: string;
    /** The body without `site_id`, already serialised (so a property that cannot be sent fails at the call). */
    json: string;
    tries: number;
    /** Called when the job is given up without a 2xx. */
    failed?: () => void;
  }

  const w = window as unknown as { emk?: Stub };
  const d = document;
  const AID_COOKIE = '_emk_aid';
  const IR_COOKIE = '_ir_id';
  const EMAIL_KEY = '_emk_email';
  const DAY = 86400;
  /** Tries per request (the first and up to five retries: about 30 s of back-off in all). */
  const MAX_TRIES = 6;
  const MAX_DELAY_MS = 30000;
  const KEEPALIVE_MAX_BYTES = 60000;

  const warn = (message: string) => {
    try {
      console.warn('emk: ' + message);
    } catch (_) {
      // no console: nothing to tell
    }
  };
  const isText = (v: unknown, max: number): v is string => typeof v === 'string' && v.length > 0 && v.length <= max;
  const isEmail = (v: unknown): v is string => isText(v, 254) && /^[^\s@]+@[^\s@]+$/.test(v);
  const isObject = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);
  /** The properties themselves, or (as the spec writes the calls) wrapped: `{properties: {...}}`. */
  const propsOf = (v: unknown): Record<string, unknown> | undefined | false => {
    if (v === undefined) return undefined;
    if (!isObject(v)) return false;
    const keys = Object.keys(v);
    return keys.length === 1 && keys[0] === 'properties' && isObject(v.properties) ? v.properties : v;
  };
  const same = (a: string | null, b: string) => a !== null && a.trim().toLowerCase() === b.trim().toLowerCase();

  if (w.emk && w.emk.loaded) return;

  // ------------------------------------------------------------------ storage

  function getCookie(name: string): string | null {
    const m = d.cookie.match(new RegExp('(?:^|; )' + name + '=([^;]*)'));
    if (!m) return null;
    try {
      return decodeURIComponent(m[1]!);
    } catch (_) {
      return null;
    }
  }
  function setCookie(name: string, value: string, days: number): void {
    d.cookie =
      name + '=' + encodeURIComponent(value) + '; max-age=' + days * DAY + '; path=/; samesite=lax' +
      (location.protocol === 'https:' ? '; secure' : '');
  }
  /** localStorage may be missing or refuse (privacy modes): the SDK then forgets the email between pages. */
  function stored(value?: string | null): string | null {
    try {
      if (value === null) localStorage.removeItem(EMAIL_KEY);
      else if (value !== undefined) localStorage.setItem(EMAIL_KEY, value);
      return localStorage.getItem(EMAIL_KEY);
    } catch (_) {
      return value || null;
    }
  }
  function newId(): string {
    const bytes = new Uint8Array(16);
    if (window.crypto && crypto.getRandomValues) crypto.getRandomValues(bytes);
    else for (let i = 0; i < 16; i++) bytes[i] = (Math.random() * 256) | 0;
    let id = '';
    for (let i = 0; i < 16; i++) id += (bytes[i]! + 256).toString(16).slice(1);
    return id;
  }

  // ------------------------------------------------------------------ state

  let base = '';
  let site: string | null = null;
  let source: string | undefined;
  let shop: string | undefined;
  let email = stored();
  let replaying = true;
  let started = false;
  /** Between pagehide and pageshow (the page is being left, or kept in the back-forward cache). */
  let leaving = false;

  const scripts: Array<HTMLScriptElement | null> = [d.currentScript as HTMLScriptElement | null];
  const all = d.getElementsByTagName('script');
  for (let i = 0; i < all.length; i++) scripts.push(all[i]!);
  for (const script of scripts) {
    if (script && /\/emk\.js(\?|#|$)/.test(script.src || '')) {
      const url = new URL(script.src, location.href);
      base = url.origin + url.pathname.replace(/\/emk\.js$/, '');
      site = url.searchParams.get('s') || null;
      break;
    }
  }
  if (!base) warn('cannot find its own <script src=".../emk.js">; nothing will be sent');

  // A visitor's id, rolling one year from their last visit; `_ir_id` from a sent message's link: 14 days.
  const anonymousId = getCookie(AID_COOKIE) || newId();
  setCookie(AID_COOKIE, anonymousId, 365);
  const linkToken = new URLSearchParams(location.search).get(IR_COOKIE);
  if (isText(linkToken, 1000)) setCookie(IR_COOKIE, linkToken, 14);

  // ------------------------------------------------------------------ sending

  const jobs: Job[] = [];
  let inFlight: Job | null = null;
  let timer: number | undefined;

  const bodyOf = (job: Job) => '{"site_id":' + JSON.stringify(site) + ',' + job.json.slice(1);

  function give(job: Job, why: string): void {
    jobs.splice(jobs.indexOf(job), 1);
    warn(job.path + ' ' + why);
    if (job.failed) job.failed();
  }

  function send(path: string, body: Record<string, unknown>, failed?: () => void): void {
    const token = getCookie(IR_COOKIE);
    body.anonymous_id = anonymousId;
    if (token) body.identity_token = token;
    let json: string;
    try {
      json = JSON.stringify(body);
    } catch (_) {
      return warn(path + ' ignored: its properties cannot be sent as JSON');
    }
    jobs.push({ path, json, tries: 0, failed });
    pump();
  }

  /** Status and Retry-After (seconds) of one try; 0 for a network failure. Without fetch: a beacon. */
  function post(job: Job): Promise<number[]> {
    const body = bodyOf(job);
    if (typeof fetch !== 'function') return Promise.resolve([navigator.sendBeacon(base + job.path, body) ? 204 : 0, 0]);
    return fetch(base + job.path, { method: 'POST', body, keepalive: body.length < KEEPALIVE_MAX_BYTES, credentials: 'omit' })
      .then((res) => [res.status, Number(res.headers.get('retry-after'))]);
  }

  /** One request at a time, in call order; 429, 502-504 (a proxy, a drain) and network failures back off. */
  function pump(): void {
    const job = jobs[0];
    if (!job || !site || !base || inFlight || timer !== undefined) return;
    inFlight = job;
    job.tries++;
    post(job)
      .catch(() => [0, 0])
      .then(([status, retryAfter]) => {
        inFlight = null;
        // Cut off by the page going away: the keepalive request carries on without us; no second copy.
        if (status! >= 200 && status! < 300 || (status === 0 && leaving)) jobs.shift();
        else if (status !== 0 && status !== 429 && (status! < 502 || status! > 504)) give(job, 'answered ' + status);
        else if (job.tries >= MAX_TRIES) give(job, 'gave up after ' + job.tries + ' tries');
        else {
          const backoff = Math.min(MAX_DELAY_MS, Math.max((retryAfter || 0) * 1000, 500 * 2 ** job.tries));
          timer = window.setTimeout(() => {
            timer = undefined;
            pump();
          }, backoff * (1 + Math.random() / 4));
          return;
        }
        pump();
      })
      .catch((error) => warn(String(error)));
  }

  /** The page goes away: whatever is still waiting leaves by beacon (the request in flight is keepalive). */
  function flush(): void {
    if (!site || !base) return;
    window.clearTimeout(timer);
    timer = undefined;
    for (const job of jobs.slice()) {
      if (job === inFlight) continue;
      let sent = false;
      try {
        sent = navigator.sendBeacon(base + job.path, bodyOf(job));
      } catch (_) {
        // too large or refused: it stays queued
      }
      if (sent) jobs.splice(jobs.indexOf(job), 1);
    }
    pump();
  }
  addEventListener('pagehide', () => {
    leaving = true;
    flush();
  });
  addEventListener('pageshow', () => {
    leaving = false;
  });
  addEventListener('visibilitychange', () => {
    if (d.visibilityState === 'hidden') flush();
  });

  // ------------------------------------------------------------------ calls

  function track(name: unknown, properties?: unknown): void {
    const given = propsOf(properties);
    if (!isText(name, 255)) return warn('track needs an event name');
    if (given === false) return warn('track properties must be an object');
    const props: Record<string, unknown> = Object.assign({}, given);
    if (shop) props._shop = shop;
    const body: Record<string, unknown> = { event_name: name, properties: props };
    if (source) body.source = source;
    if (email) body.email = email;
    send('/collect/event', body);
  }

  function identify(address: unknown, properties?: unknown): void {
    const given = propsOf(properties);
    if (!isEmail(address)) return warn('identify needs an email address');
    if (given === false) return warn('identify properties must be an object');
    stored(address);
    email = address;
    const body: Record<string, unknown> = { email: address };
    if (given) body.properties = given;
    // Not identified after all (refused or unreachable): the next setCustomer tries again.
    send('/collect/identify', body, () => {
      if (email === address) email = stored(null);
    });
  }

  function start(): void {
    if (replaying || started || !site) return;
    started = true;
    track('active_on_site', { url: location.href, title: d.title, referrer: d.referrer });
  }

  const calls: Record<string, (a?: unknown, b?: unknown) => void> = {
    init(id) {
      if (!isText(id, 64)) return warn('init needs a site id');
      if (site && site !== id) return warn('already initialised with site ' + site);
      site = id;
      start();
    },
    config(options) {
      if (!isObject(options)) return warn('config needs an object');
      const { platform, shop: domain } = options as { platform?: unknown; shop?: unknown };
      if (platform !== undefined) isText(platform, 255) ? (source = platform) : warn('config platform must be text');
      if (domain !== undefined) isText(domain, 255) ? (shop = domain) : warn('config shop must be text');
    },
    identify,
    setCustomer(address) {
      if (!isEmail(address)) return warn('setCustomer needs an email address');
      if (!same(email, address)) identify(address);
    },
    track,
  };

  const api: Stub = function () {
    try {
      const args = arguments;
      const call = typeof args[0] === 'string' && calls.hasOwnProperty(args[0]) ? calls[args[0]] : undefined;
      if (call) call(args[1], args[2]);
      else warn('unknown call ' + String(args[0]));
    } catch (error) {
      warn('call failed: ' + String(error));
    }
  };
  api.loaded = true;
  const queued = (w.emk && w.emk.q) || [];
  w.emk = api;
  // Replay the snippet's queue in order; the page view follows it, so queued config and identify apply to it.
  for (let i = 0; i < queued.length; i++) api.apply(null, Array.prototype.slice.call(queued[i]));
  replaying = false;
  start();
});
