import { expect, it } from 'vitest';
import { NotFoundError } from '../src/domain/errors.js';
import { describeEachDatabase, type TestWorkspace } from './helpers/harness.js';

const DEFAULTS = {
  click_window_days: 5,
  open_window_days: 3,
  contact_limit: null,
  sender: { from_email: null, from_name: null },
  own_domains: [],
  footer_html: null,
  footer_text: null,
  postal_address: null,
  domain_rates: {},
  event_retention_days: null,
  currency: 'USD',
};

describeEachDatabase('settings', (h) => {
  const get = (ws: TestWorkspace) => h().request({ method: 'GET', url: '/api/v1/settings', key: ws.apiKey });
  const patch = (ws: TestWorkspace, json: unknown) =>
    h().request({ method: 'PATCH', url: '/api/v1/settings', key: ws.apiKey, json });

  it('GET answers the defaults of a new workspace', async () => {
    const ws = await h().workspace();
    const res = await get(ws);
    expect(res.statusCode).toBe(200);
    expect(res.json()).toEqual(DEFAULTS);
  });

  it('PATCH changes only the fields sent and answers the whole settings', async () => {
    const ws = await h().workspace();
    const res = await patch(ws, { click_window_days: 7 });
    expect(res.statusCode).toBe(200);
    expect(res.json()).toEqual({ ...DEFAULTS, click_window_days: 7 });
    await patch(ws, { open_window_days: 0, contact_limit: 1000 });
    expect((await get(ws)).json()).toEqual({ ...DEFAULTS, click_window_days: 7, open_window_days: 0, contact_limit: 1000 });
    await patch(ws, { contact_limit: null });
    expect((await get(ws)).json()).toEqual({ ...DEFAULTS, click_window_days: 7, open_window_days: 0 });
    const row = await h().services.db.knex('workspaces').where({ id: ws.id }).first();
    expect(Number(row.click_window_days)).toBe(7);
    expect(Number(row.open_window_days)).toBe(0);
  });

  it('sender fields merge: one sent leaves the other; null clears', async () => {
    const ws = await h().workspace();
    await patch(ws, { sender: { from_email: 'news@shop.test', from_name: 'The Shop' } });
    expect((await get(ws)).json().sender).toEqual({ from_email: 'news@shop.test', from_name: 'The Shop' });
    await patch(ws, { sender: { from_name: 'Shop Team' } });
    expect((await get(ws)).json().sender).toEqual({ from_email: 'news@shop.test', from_name: 'Shop Team' });
    await patch(ws, { sender: { from_email: null } });
    expect((await get(ws)).json().sender).toEqual({ from_email: null, from_name: 'Shop Team' });
    await patch(ws, { sender: {} });
    expect((await get(ws)).json().sender).toEqual({ from_email: null, from_name: 'Shop Team' });
  });

  it('own_domains: bare lower-case hosts, repeats dropped, stored in the workspace row; null or [] clears', async () => {
    const ws = await h().workspace();
    const res = await patch(ws, { own_domains: ['https://Blog.Shop.example/path', 'shop-two.example', 'shop-two.example'] });
    expect(res.statusCode, res.body).toBe(200);
    expect(res.json().own_domains).toEqual(['blog.shop.example', 'shop-two.example']);
    await patch(ws, { click_window_days: 4 });
    expect((await get(ws)).json().own_domains).toEqual(['blog.shop.example', 'shop-two.example']);
    const row = await h().services.db.knex('workspaces').where({ id: ws.id }).first();
    expect(h().services.dialect.readJson(row.own_domains)).toEqual(['blog.shop.example', 'shop-two.example']);
    await patch(ws, { own_domains: null });
    expect((await get(ws)).json().own_domains).toEqual([]);
    await patch(ws, { own_domains: ['a.example'] });
    await patch(ws, { own_domains: [] });
    expect((await get(ws)).json().own_domains).toEqual([]);
  });

  it('the window bounds are 0 and 365 days', async () => {
    const ws = await h().workspace();
    expect((await patch(ws, { click_window_days: 0, open_window_days: 365 })).statusCode).toBe(200);
    expect((await get(ws)).json()).toMatchObject({ click_window_days: 0, open_window_days: 365 });
  });

  it('refuses bad values with 400 naming the field, and a refused PATCH changes nothing', async () => {
    const ws = await h().workspace();
    await patch(ws, { click_window_days: 6, sender: { from_email: 'a@shop.test', from_name: 'A' } });
    const before = (await get(ws)).json();
    const cases: Array<[unknown, RegExp]> = [
      [{ click_window_days: -1 }, /click_window_days/],
      [{ click_window_days: 1.5 }, /click_window_days/],
      [{ click_window_days: 366 }, /click_window_days/],
      [{ click_window_days: '5' }, /click_window_days/],
      [{ click_window_days: null }, /click_window_days/],
      [{ open_window_days: -3 }, /open_window_days/],
      [{ open_window_days: 1000 }, /open_window_days/],
      [{ contact_limit: -1 }, /contact_limit/],
      [{ contact_limit: 2.5 }, /contact_limit/],
      [{ contact_limit: 1e12 }, /contact_limit/],
      [{ sender: { from_email: 'not-an-email' } }, /sender\.from_email/],
      [{ sender: 'me@shop.test' }, /sender/],
      [{ sender: { from_name: 'x'.repeat(201) } }, /sender\.from_name/],
      [{ sender: { reply_to: 'a@b.c' } }, /unknown field reply_to/],
      [{ click_window: 4 }, /unknown field click_window/],
      [{ own_domains: 'shop.example' }, /own_domains/],
      [{ own_domains: ['not a domain'] }, /own_domains/],
      [{ own_domains: ['com'] }, /own_domains/],
      [{ own_domains: [''] }, /own_domains/],
      [{ own_domains: [42] }, /own_domains/],
      [{ own_domains: Array.from({ length: 101 }, (_, i) => `d${i}.example`) }, /own_domains/],
      [[], /body/],
      // One good field and one bad one: nothing is applied.
      [{ open_window_days: 1, click_window_days: -5 }, /click_window_days/],
      [{ contact_limit: 10, sender: { from_email: 'bad' } }, /sender\.from_email/],
    ];
    for (const [json, field] of cases) {
      const res = await patch(ws, json);
      expect(res.statusCode, JSON.stringify(json)).toBe(400);
      expect(res.json().error, JSON.stringify(json)).toMatch(/^invalid request: /);
      expect(res.json().error, JSON.stringify(json)).toMatch(field);
    }
    expect((await get(ws)).json()).toEqual(before);
  });

  it('each workspace has its own settings', async () => {
    const mine = await h().workspace('mine');
    const theirs = await h().workspace('theirs');
    await patch(mine, { click_window_days: 9 });
    expect((await get(theirs)).json()).toEqual(DEFAULTS);
    expect((await h().services.settings.get(mine.id)).click_window_days).toBe(9);
  });

  it('a change is visible at once, also through the workspace record cached by site id', async () => {
    const ws = await h().workspace();
    expect((await h().services.workspaces.findBySiteId(ws.siteId)).click_window_days).toBe(5); // cached now
    await patch(ws, { click_window_days: 2, contact_limit: 50 });
    const workspace = await h().services.workspaces.findBySiteId(ws.siteId);
    expect(workspace).toMatchObject({ click_window_days: 2, contact_limit: 50 });
    expect(await h().services.settings.get(ws.id)).toMatchObject({ click_window_days: 2, contact_limit: 50 });
  });

  it('get of an unknown workspace is NotFoundError; the routes need the workspace key', async () => {
    await expect(h().services.settings.get('nope')).rejects.toBeInstanceOf(NotFoundError);
    expect((await h().request({ method: 'GET', url: '/api/v1/settings' })).statusCode).toBe(401);
    expect((await h().request({ method: 'PATCH', url: '/api/v1/settings', json: { click_window_days: 1 } })).statusCode).toBe(401);
  });
});
