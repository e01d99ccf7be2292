import { expect, it } from 'vitest';
import { chromiumOnDemand } from './helpers/browser.js';
import { describeEachDatabase, type TestWorkspace } from './helpers/harness.js';
import { sendingHelpers } from './helpers/sending.js';

/** Launched by the one test that needs it, so the others run (and fail alone) without it. */
const chromium = chromiumOnDemand();

describeEachDatabase(
  'consent: suppressions, unsubscribe and preferences',
  (h) => {
    const { api, contact, campaign, work, messagesOf } = sendingHelpers(h);

    /** A subscriber and the consent links of the campaign message they got. */
    async function subscriberWithLinks(ws: TestWorkspace) {
      const email = `fan${Math.random().toString(36).slice(2)}@example.com`;
      const contactId = await contact(ws, 'subscribed', {}, email);
      const id = await campaign(ws, { html: '<a href="{{ unsubscribe_url }}">u</a><a href="{{ preferences_url }}">p</a>' });
      await api(ws, 'POST', `/campaigns/${id}/send`);
      await work();
      const [message] = await messagesOf(ws, `contact_id=${contactId}`);
      const [unsubscribe, preferences] = [...message!.html.matchAll(/href="([^"]+)"/g)].map((m) => m[1]!);
      return { email, contactId, unsubscribe: unsubscribe!, preferences: preferences!, path: (url: string) => new URL(url).pathname };
    }
    const statusOf = async (ws: TestWorkspace, id: string) => (await api(ws, 'GET', `/contacts/${id}`)).json().subscription_status;

    it('suppressions: add (case-insensitive, idempotent), list, lift; bad input names the field', async () => {
      const ws = await h().workspace();
      expect((await api(ws, 'POST', '/suppressions', { emails: ['A@example.com', 'b@example.com', 'a@EXAMPLE.com'], reason: 'complaint' })).json()).toEqual({ suppressed: 2 });
      expect((await api(ws, 'POST', '/suppressions', { emails: ['a@example.com'] })).json()).toEqual({ suppressed: 0 });
      const list = (await api(ws, 'GET', '/suppressions')).json();
      expect(list.meta.total).toBe(2);
      expect(list.data.map((s: { reason: string }) => s.reason)).toEqual(['complaint', 'complaint']);
      expect((await api(ws, 'DELETE', '/suppressions/a%40example.com')).statusCode).toBe(204);
      expect((await api(ws, 'DELETE', '/suppressions/a%40example.com')).statusCode).toBe(404);
      expect((await api(ws, 'POST', '/suppressions', { emails: ['nope'] })).json().error).toMatch(/emails\[0\]/);
      expect((await api(ws, 'POST', '/suppressions', { emails: [] })).json().error).toMatch(/emails/);
      expect((await api(ws, 'GET', '/suppressions')).json().meta.total).toBe(1);
    });

    it('the unsubscribe page confirms with a button; posting it unsubscribes and records the change', async () => {
      const ws = await h().workspace();
      const s = await subscriberWithLinks(ws);
      const page = await h().request({ method: 'GET', url: s.path(s.unsubscribe) });
      expect(page.statusCode).toBe(200);
      expect(page.headers['content-type']).toMatch(/^text\/html/);
      expect(page.body).toContain('<form method="post"><button type="submit">Unsubscribe</button></form>');
      expect(page.body).toContain(s.email);
      expect(page.body).not.toContain('<script');
      expect(await statusOf(ws, s.contactId)).toBe('subscribed');
      const done = await h().request({ method: 'POST', url: s.path(s.unsubscribe), headers: { 'content-type': 'application/x-www-form-urlencoded' }, payload: '' });
      expect(done.statusCode).toBe(200);
      expect(done.body).toContain('You are unsubscribed');
      expect(await statusOf(ws, s.contactId)).toBe('unsubscribed');
      const history = (await api(ws, 'GET', `/contacts/${s.contactId}/consent`)).json().data;
      expect(history.map((c: { status: string; previous_status: string | null; origin: string }) => [c.previous_status, c.status, c.origin])).toEqual([
        [null, 'subscribed', 'create:api'],
        ['subscribed', 'unsubscribed', 'unsubscribe_page'],
      ]);
      expect(history[1].at).toMatch(/^\d{4}-\d{2}-\d{2}T/);
      expect((await api(ws, 'GET', '/contacts/nobody/consent')).statusCode).toBe(404);
    });

    it("a mail client's one-click POST (RFC 8058) unsubscribes without the page", async () => {
      const ws = await h().workspace();
      const s = await subscriberWithLinks(ws);
      const reply = await h().request({
        method: 'POST',
        url: s.path(s.unsubscribe),
        headers: { 'content-type': 'application/x-www-form-urlencoded' },
        payload: 'List-Unsubscribe=One-Click',
      });
      expect(reply.statusCode).toBe(200);
      expect(await statusOf(ws, s.contactId)).toBe('unsubscribed');
      expect((await api(ws, 'GET', `/contacts/${s.contactId}/consent`)).json().data.at(-1).origin).toBe('one_click');
    });

    it('the preferences page shows the status and changes it (form data or JSON); a bad status is a 400', async () => {
      const ws = await h().workspace();
      const s = await subscriberWithLinks(ws);
      const page = await h().request({ method: 'GET', url: s.path(s.preferences) });
      expect(page.body).toContain('value="subscribed" checked');
      const form = { 'content-type': 'application/x-www-form-urlencoded' };
      expect((await h().request({ method: 'POST', url: s.path(s.preferences), headers: form, payload: 'status=unsubscribed' })).body).toContain('value="unsubscribed" checked');
      expect(await statusOf(ws, s.contactId)).toBe('unsubscribed');
      expect((await h().request({ method: 'POST', url: s.path(s.preferences), json: { status: 'subscribed' } })).statusCode).toBe(200);
      expect(await statusOf(ws, s.contactId)).toBe('subscribed');
      const bad = await h().request({ method: 'POST', url: s.path(s.preferences), headers: form, payload: 'status=maybe' });
      expect(bad.statusCode).toBe(400);
      expect(bad.json().error).toMatch(/status/);
      expect(await statusOf(ws, s.contactId)).toBe('subscribed');
      expect((await api(ws, 'GET', `/contacts/${s.contactId}/consent`)).json().data.map((c: { origin: string }) => c.origin)).toEqual([
        'create:api',
        'preferences_page',
        'preferences_page',
      ]);
    });

    it('a tampered or unknown token is a 404 page and changes nothing', async () => {
      const ws = await h().workspace();
      const s = await subscriberWithLinks(ws);
      const token = s.path(s.unsubscribe).split('/').pop()!;
      const tampered = token.slice(0, 10) + (token[10] === 'A' ? 'B' : 'A') + token.slice(11);
      for (const url of [`/cp/unsubscribe/${tampered}`, '/cp/unsubscribe/x', `/cp/preferences/${tampered}`]) {
        expect((await h().request({ method: 'GET', url })).statusCode, url).toBe(404);
        expect((await h().request({ method: 'POST', url, headers: { 'content-type': 'application/x-www-form-urlencoded' }, payload: 'status=unsubscribed' })).statusCode).toBe(404);
      }
      expect(await statusOf(ws, s.contactId)).toBe('subscribed');
    });

    it('a suppressed or unsubscribed address gets no campaign', async () => {
      const ws = await h().workspace();
      const s = await subscriberWithLinks(ws);
      await h().request({ method: 'POST', url: s.path(s.unsubscribe) });
      const suppressed = await contact(ws, 'subscribed', {}, 'blocked@example.com');
      await api(ws, 'POST', '/suppressions', { emails: ['blocked@example.com'] });
      const id = await campaign(ws);
      expect((await api(ws, 'POST', `/campaigns/${id}/send`)).json().recipients).toBe(0);
      expect(await messagesOf(ws, `contact_id=${suppressed}`)).toHaveLength(0);
    });

    it('in a real browser: open the unsubscribe link, press the button, read the result', async () => {
      const ws = await h().workspace();
      const s = await subscriberWithLinks(ws);
      await h().app.listen({ port: 0, host: '127.0.0.1' });
      const port = (h().app.server.address() as { port: number }).port;
      const context = await (await chromium()).newContext({ javaScriptEnabled: false, viewport: { width: 375, height: 667 } });
      try {
        const page = await context.newPage();
        await page.goto(`http://127.0.0.1:${port}${s.path(s.unsubscribe)}`);
        expect(await page.textContent('h1')).toBe('Unsubscribe');
        await page.click('button');
        await page.waitForSelector('text=You are unsubscribed');
        expect(await statusOf(ws, s.contactId)).toBe('unsubscribed');
        await page.goto(`http://127.0.0.1:${port}${s.path(s.preferences)}`);
        await page.check('input[value="subscribed"]');
        await page.click('button');
        await page.waitForSelector('text=Your preferences are saved');
        expect(await statusOf(ws, s.contactId)).toBe('subscribed');
      } finally {
        await context.close();
      }
    });
  },
);

describeEachDatabase(
  'consent pages are rate limited per address',
  (h) => {
    it('the 31st request in a minute from one address is a 429 with Retry-After', async () => {
      const replies = [];
      for (let i = 0; i < 31; i++) replies.push(await h().request({ method: 'GET', url: '/cp/unsubscribe/x' }));
      expect(replies.slice(0, 30).every((r) => r.statusCode === 404)).toBe(true);
      expect(replies[30]!.statusCode).toBe(429);
      expect(Number(replies[30]!.headers['retry-after'])).toBeGreaterThan(0);
    });
  },
  { EMK_LIMIT_CP_PER_IP: '30' },
);
