import { mkdirSync } from 'node:fs';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import type { Page } from 'playwright-core';
import { beforeAll, expect, it } from 'vitest';
import { chromiumOnDemand } from './helpers/browser.js';
import { consoleShop, HOSTILE_NAME, type ConsoleShop } from './helpers/console.js';
import { describeEachDatabase } from './helpers/harness.js';

/**
 * The console in a real headless Chromium: sign in, every page, a chart drawn, a message in its sandboxed frame,
 * no horizontal scrolling at a phone's width, sign out. With EMK_SCREENSHOTS=1 (SQLite run) it saves a PNG of
 * each page into docs/console/ for docs/console.md.
 */
const browser = chromiumOnDemand();
const SCREENSHOTS = process.env.EMK_SCREENSHOTS === '1' ? join(import.meta.dirname, '..', 'docs', 'console') : null;

describeEachDatabase('the console in Chromium', (h, dialect) => {
  let emk = '';
  let shop: ConsoleShop;

  beforeAll(async () => {
    shop = await consoleShop(h);
    await h().app.listen({ port: 0, host: '127.0.0.1' });
    emk = `http://127.0.0.1:${(h().app.server.address() as AddressInfo).port}`;
  });

  const snap = async (page: Page, name: string) => {
    if (!SCREENSHOTS || dialect !== 'sqlite') return;
    mkdirSync(SCREENSHOTS, { recursive: true });
    await page.screenshot({ path: join(SCREENSHOTS, `${name}.png`), fullPage: true });
  };
  /** Whether the page is wider than the window (a phone would scroll sideways). */
  const overflows = (page: Page) => page.evaluate<boolean>('document.documentElement.scrollWidth > window.innerWidth');
  const metric = async (page: Page, name: string) => Number(await page.locator(`[data-metric="${name}"]`).first().getAttribute('data-value'));

  it('signed out to sign-in, each page, a chart, a message in a sandboxed frame, a phone’s width, sign out', { timeout: 60_000 }, async () => {
    const context = await (await browser()).newContext({ viewport: { width: 1280, height: 800 } });
    const page = await context.newPage();
    const dialogs: string[] = [];
    const errors: string[] = [];
    page.on('dialog', (dialog) => {
      dialogs.push(dialog.message());
      void dialog.dismiss();
    });
    page.on('pageerror', (error) => errors.push(String(error)));
    page.on('console', (message) => {
      if (message.type() === 'error') errors.push(message.text());
    });
    try {
      await page.goto(`${emk}/`);
      await expect(page.locator('a[href="/console"]').first().isVisible()).resolves.toBe(true);
      await snap(page, 'landing');

      await page.goto(`${emk}/console/campaigns`);
      expect(new URL(page.url()).pathname).toBe('/console/sign-in');
      await page.fill('input[name=email]', shop.email);
      await page.fill('input[name=password]', 'not the password');
      await page.click('button[type=submit]');
      await expect(page.locator('[role=alert]').textContent()).resolves.toBe('Wrong email or password.');
      await snap(page, 'sign-in');
      await page.fill('input[name=password]', shop.password);
      await page.click('button[type=submit]');
      expect(new URL(page.url()).pathname).toBe('/console');
      await expect(page.locator('h1').textContent()).resolves.toBe('Overview');
      expect(await metric(page, 'contacts')).toBe(3);
      expect(await metric(page, 'revenue')).toBe(42.5);
      await snap(page, 'overview');

      await page.click('nav >> text=Campaigns');
      await page.click(`a:text-is(${JSON.stringify(HOSTILE_NAME)})`);
      expect(new URL(page.url()).pathname).toBe(`/console/campaigns/${shop.campaignId}`);
      await expect(page.locator('h1').textContent()).resolves.toBe(HOSTILE_NAME);
      // The chart: three series over 30 days, a point where something happened, drawn inside the SVG's box.
      for (const series of ['opens', 'clicks', 'revenue']) {
        const path = page.locator(`svg path[data-series="${series}"]`);
        expect((await path.getAttribute('d'))!.split(' ')).toHaveLength(30);
        const box = await path.boundingBox();
        expect(box!.width).toBeGreaterThan(300);
      }
      await expect(page.locator('svg circle').count()).resolves.toBe(3);
      await snap(page, 'campaign');

      await page.click('nav >> text=Flows');
      await snap(page, 'flows');
      await page.click('a:text-is("Browse <abandon>")');
      expect(await metric(page, 'waiting')).toBe(1);
      await snap(page, 'flow');

      await page.click('nav >> text=Segments');
      expect(await metric(page, 'member_count')).toBe(3);
      await snap(page, 'segments');

      await page.click('nav >> text=Messages');
      await expect(page.locator('tr[data-message]').count()).resolves.toBe(3);
      await snap(page, 'messages');
      await page.goto(`${emk}/console/messages/${shop.messageId}`);
      const frame = page.frameLocator('iframe[sandbox]');
      await expect(frame.locator('h1').textContent()).resolves.toBe('Autumn favourites');
      await expect(frame.locator('h1').evaluate((el) => (globalThis as unknown as { getComputedStyle(e: unknown): { color: string } }).getComputedStyle(el).color)).resolves.toBe('rgb(194, 65, 12)');
      expect(await page.locator('iframe').getAttribute('sandbox')).toBe('');
      await snap(page, 'message');
      // Looking at a message fetched no open pixel: the report still counts the one open.
      const report = await h().request({ method: 'GET', url: `/api/v1/campaigns/${shop.campaignId}/report`, key: shop.ws.apiKey });
      expect(report.json().opens).toBe(1);

      // A phone's width: nothing wider than the screen (tables scroll in their own box).
      await page.setViewportSize({ width: 375, height: 740 });
      for (const path of ['/console', '/console/campaigns', `/console/campaigns/${shop.campaignId}`, '/console/flows', `/console/flows/${shop.flowId}`, '/console/segments', '/console/messages', `/console/messages/${shop.messageId}`]) {
        await page.goto(`${emk}${path}`);
        expect(await overflows(page), path).toBe(false);
      }
      await page.goto(`${emk}/console`);
      await snap(page, 'overview-phone');

      await page.click('header button:text-is("Sign out")');
      expect(new URL(page.url()).pathname).toBe('/console/sign-in');
      expect(await context.cookies()).toEqual([]);
      await page.goto(`${emk}/console/segments`);
      expect(new URL(page.url()).pathname).toBe('/console/sign-in');
      expect(dialogs).toEqual([]);
      // The browser's own notes: the wrong password's 401, and the open pixel the page's policy refused to load.
      const pixelBlocked = (text: string) => /Loading the image '[^']*\/t\/o\/[^']*' violates .*"img-src data:"/.test(text);
      expect(errors.some(pixelBlocked)).toBe(true);
      expect(errors.filter((text) => !pixelBlocked(text) && !text.includes('status of 401'))).toEqual([]);
    } finally {
      await context.close();
    }
  });
});
