import { existsSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { FastifyInstance } from 'fastify';
import { chromium, type Browser } from 'playwright-core';
import { afterAll } from 'vitest';

/** Debian's chromium: `.ci/run` installs it. Playwright never downloads a browser here. */
export const CHROMIUM = '/usr/bin/chromium';
const CHROMIUM_ARGS = [
  '--headless',
  '--no-sandbox',
  '--disable-gpu',
  '--disable-quic',
  '--no-first-run',
  '--disable-background-networking',
  '--disable-component-update',
  '--disable-sync',
];

/**
 * A headless Chromium. Missing, it fails the suite (it never skips): CI installs it. Each launch gets a
 * fresh temporary profile (user-data-dir) from Playwright, and each test a fresh context (cookies, storage).
 */
export async function launchChromium(): Promise<Browser> {
  if (!existsSync(CHROMIUM)) {
    throw new Error(`${CHROMIUM} is missing: install it with apt-get install -y chromium (.ci/run does)`);
  }
  return chromium.launch({ executablePath: CHROMIUM, headless: true, args: CHROMIUM_ARGS });
}

/**
 * One Chromium for a test file: launched by the first test that asks (so the others run, and fail alone, without
 * it) and closed after the file. Call at the top of the file.
 */
export function chromiumOnDemand(): () => Promise<Browser> {
  let browser: Promise<Browser> | undefined;
  afterAll(async () => {
    await (await browser?.catch(() => undefined))?.close();
  });
  return () => (browser ??= launchChromium());
}

/** A shop's own web server: pages on another origin than emk, over http (cookies need it). */
export interface ShopServer {
  /** e.g. http://localhost:40123: another origin than emk's http://127.0.0.1:port. */
  origin: string;
  /** Serve `html` at `path` (query strings ignored). */
  page(path: string, html: string): string;
  close(): Promise<void>;
}

export async function startShop(host = 'localhost'): Promise<ShopServer> {
  const pages = new Map<string, string>();
  const server: Server = createServer((req, res) => {
    const html = pages.get((req.url ?? '/').split('?', 1)[0]!);
    res.writeHead(html === undefined ? 404 : 200, { 'content-type': 'text/html; charset=utf-8' });
    res.end(html ?? 'not found');
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const origin = `http://${host}:${(server.address() as AddressInfo).port}`;
  return {
    origin,
    page(path, html) {
      pages.set(path, html);
      return origin + path;
    },
    close: () => new Promise((resolve) => server.close(() => resolve())),
  };
}

/** Polls `read` until `done` holds for its value, or fails after `timeoutMs` with the last value. */
export async function eventually<T>(read: () => Promise<T> | T, done: (value: T) => boolean, timeoutMs = 10_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await read();
    if (done(value)) return value;
    if (Date.now() > deadline) throw new Error(`condition not met within ${timeoutMs} ms; last value: ${JSON.stringify(value)}`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

/** A request the browser made to the Collect API, as the server saw it. */
export interface SeenCollect {
  method: string;
  path: string;
  contentType: string | undefined;
  body: Record<string, unknown>;
  at: number;
}

/**
 * Watches the Collect API of a test app: every request a page makes to `/collect/*` lands in `seen` (a POST with
 * its parsed body, a CORS preflight as OPTIONS), and a status pushed on `failNext` answers the next POST instead of
 * the route (with `Retry-After`), so a test sees the script retry.
 */
export function observeCollect(app: FastifyInstance) {
  const seen: SeenCollect[] = [];
  const failNext: Array<{ status: number; retryAfter: number }> = [];
  app.addHook('onRequest', async (request, reply) => {
    if (!request.url.startsWith('/collect/')) return;
    if (request.method === 'OPTIONS') seen.push({ method: 'OPTIONS', path: request.url, contentType: undefined, body: {}, at: Date.now() });
    const failure = request.method === 'POST' ? failNext.shift() : undefined;
    if (failure) {
      seen.push({ method: 'POST', path: request.url, contentType: request.headers['content-type'], body: { failed: failure.status }, at: Date.now() });
      return reply
        .code(failure.status)
        .header('retry-after', String(failure.retryAfter))
        .send({ error: failure.status === 429 ? 'rate limit exceeded' : 'server draining' });
    }
  });
  app.addHook('preHandler', async (request) => {
    if (request.method !== 'POST' || !request.url.startsWith('/collect/')) return;
    seen.push({ method: 'POST', path: request.url, contentType: request.headers['content-type'], body: (request.body ?? {}) as Record<string, unknown>, at: Date.now() });
  });
  return { seen, failNext };
}
