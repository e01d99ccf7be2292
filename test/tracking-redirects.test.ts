import { expect, it } from 'vitest';
import { uuidv7 } from '../src/domain/shared/ids.js';
import { describeEachDatabase, type TestWorkspace } from './helpers/harness.js';
import { sendingHelpers } from './helpers/sending.js';

/**
 * Issue 32, points 3 and 7b: only links of stored messages redirect (no open redirect through previews or
 * erased contacts' mail), and `_ir_id` goes only to the workspace's own domains.
 */
describeEachDatabase('tracking: no open redirect, _ir_id only on own domains', (h) => {
  const helpers = sendingHelpers(h);
  const { api, contact, campaign } = helpers;
  const path = (url: string) => new URL(url).pathname;
  /** The links of a message's HTML, but for the consent links of the marketing footer (docs/email.md, Footer). */
  const linksOf = (html: string) =>
    [...html.matchAll(/href="([^"]+)"/g)].map((m) => m[1]!.replace(/&amp;/g, '&')).filter((link) => !new URL(link).pathname.startsWith('/cp/'));
  const click = (link: string) => h().request({ method: 'GET', url: path(link) });

  /** A captured campaign message to one new subscriber, with the links of `html`. */
  async function sentMessage(ws: TestWorkspace, html: string) {
    const sent = await helpers.sentMessage(ws, html);
    return { ...sent, links: linksOf(sent.message.html) };
  }

  /** The link a click token names, for a message id that was never stored (what a preview signed before). */
  async function linkOfUnstoredMessage(ws: TestWorkspace, url: string) {
    const signer = await h().services.tracking.signerFor(ws.id);
    return linksOf(signer.decorate(uuidv7(), `<a href="${url}">x</a>`))[0]!;
  }

  const expectNoRedirect = (reply: Awaited<ReturnType<typeof click>>) => {
    expect(reply.statusCode).toBe(404);
    expect(reply.headers.location).toBeUndefined();
    expect(reply.body).not.toContain('evil.example');
  };

  it('a preview leaves its links as written, adds no pixel, and stores nothing', async () => {
    const ws = await h().workspace();
    const ann = await contact(ws, 'subscribed', { first_name: 'Ann' });
    const id = await campaign(ws, { html: '<p>Hi {{ contact.first_name }}</p><a href="https://evil.example/phish">Log in</a>' });
    const reply = await api(ws, 'POST', `/campaigns/${id}/preview`, { contact_id: ann });
    expect(reply.statusCode).toBe(200);
    const { html } = reply.json();
    expect(linksOf(html)).toEqual(['https://evil.example/phish']);
    expect(html).not.toContain('/t/c/');
    expect(html).not.toContain('/t/o/');
    expect(await h().services.db.knex('messages').where({ workspace_id: ws.id })).toHaveLength(0);
  });

  it('a signed click token of a message that was never stored does not redirect and records nothing', async () => {
    const ws = await h().workspace();
    const link = await linkOfUnstoredMessage(ws, 'https://evil.example/phish');
    expect(link).toMatch(/\/t\/c\//);
    expectNoRedirect(await click(link));
    expect(await h().services.db.knex('engagements').where({ workspace_id: ws.id })).toHaveLength(0);
  });

  it("a link of an erased contact's message stops redirecting; a sent message's link still does", async () => {
    const ws = await h().workspace();
    const kept = await sentMessage(ws, '<a href="https://evil.example/phish">x</a>');
    const erased = await sentMessage(ws, '<a href="https://evil.example/phish">x</a>');
    const before = await click(erased.links[0]!);
    expect(before.statusCode).toBe(302);
    expect((await api(ws, 'DELETE', `/contacts/${erased.contactId}`)).statusCode).toBe(204);
    expectNoRedirect(await click(erased.links[0]!));
    const after = await click(kept.links[0]!);
    expect(after.statusCode).toBe(302);
    expect(after.headers.location).toBe('https://evil.example/phish');
  });

  it("a token signed by one workspace for another workspace's message does not redirect or record", async () => {
    const mine = await h().workspace('mine');
    const theirs = await h().workspace('theirs');
    const { message } = await sentMessage(theirs, '<a href="https://shop.test/p">x</a>');
    const signer = await h().services.tracking.signerFor(mine.id);
    const forged = linksOf(signer.decorate(message.id, '<a href="https://evil.example/phish">x</a>'))[0]!;
    expectNoRedirect(await click(forged));
    expect((await api(theirs, 'GET', `/messages/${message.id}`)).json().clicked_at).toBeNull();
  });

  it("a click to a third party's URL is recorded and redirects without _ir_id; own hosts and their subdomains get it", async () => {
    const ws = await h().workspace();
    const urls = [
      'https://partner.example/offer?x=1',
      'https://shop.test/p/1',
      'https://WWW.Shop.Test:8443/p/2#top',
      'https://notshop.test/p',
      'https://shop.test.evil.example/p',
      'https://evil.example/?next=https://shop.test/',
    ];
    const { contactId, message, links } = await sentMessage(ws, urls.map((u) => `<a href="${u}">x</a>`).join(''));
    expect(links).toHaveLength(urls.length);
    const locations: string[] = [];
    for (const link of links) {
      const reply = await click(link);
      expect(reply.statusCode).toBe(302);
      locations.push(reply.headers.location as string);
    }
    const hasIr = (location: string) => new URL(location).searchParams.has('_ir_id');
    expect(locations.map(hasIr)).toEqual([false, true, true, false, false, false]);
    // Third-party destinations are exactly the links as written.
    expect([locations[0], locations[3], locations[4], locations[5]]).toEqual([urls[0], urls[3], urls[4], urls[5]]);
    expect(new URL(locations[2]!).hash).toBe('#top');
    // Every click counts, third-party ones too.
    expect((await api(ws, 'GET', `/messages/${message.id}`)).json().clicked_at).not.toBeNull();
    const clicked = (await api(ws, 'GET', `/events?contact_id=${contactId}&event_name=email_clicked&perPage=50`)).json().data;
    expect(clicked.map((e: { properties: { url: string } }) => e.properties.url).sort()).toEqual([...urls].sort());
  });

  it('settings.own_domains adds domains (and their subdomains) whose links get _ir_id; a deactivated website integration no longer counts', async () => {
    const ws = await h().workspace();
    const { links } = await sentMessage(ws, '<a href="https://other-shop.example/a">a</a><a href="https://blog.other-shop.example/b">b</a><a href="https://shop.test/c">c</a>');
    const irOf = async (link: string) => new URL((await click(link)).headers.location as string).searchParams.has('_ir_id');
    expect([await irOf(links[0]!), await irOf(links[1]!), await irOf(links[2]!)]).toEqual([false, false, true]);

    const patched = await api(ws, 'PATCH', '/settings', { own_domains: ['Other-Shop.example'] });
    expect(patched.statusCode, patched.body).toBe(200);
    expect(patched.json().own_domains).toEqual(['other-shop.example']);
    expect([await irOf(links[0]!), await irOf(links[1]!), await irOf(links[2]!)]).toEqual([true, true, true]);

    expect((await api(ws, 'PATCH', `/integrations/${ws.integrationId}`, { active: false })).statusCode).toBe(200);
    expect([await irOf(links[0]!), await irOf(links[2]!)]).toEqual([true, false]);

    expect((await api(ws, 'PATCH', '/settings', { own_domains: null })).json().own_domains).toEqual([]);
    expect(await irOf(links[0]!)).toBe(false);
  });
});
