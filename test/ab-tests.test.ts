import { expect, it } from 'vitest';
import { pickWinner, splitKey } from '../src/domain/campaigns/ab-split.js';
import { createServices, emailOptionsOf } from '../src/domain/create-services.js';
import { openDatabase } from '../src/domain/db/database.js';
import { campaignAudience } from '../src/domain/segments/audience.js';
import { runDueJobs, workerOptionsFor } from '../src/worker/worker.js';
import { runEmk } from './helpers/cli.js';
import { describeEachDatabase, type TestWorkspace } from './helpers/harness.js';
import { sendingHelpers } from './helpers/sending.js';

const VARIANTS = [{ subject: 'A {{ contact.first_name }}' }, { subject: 'B', html: '<p>B body</p><a href="https://shop.test/b">Shop</a>' }, { html: '<p>C body</p><a href="https://shop.test/c">Shop</a>' }];
const HTML = '<p>Base body</p><a href="https://shop.test/">Shop</a>';

describeEachDatabase('campaign A/B tests', (h) => {
  const { api, contact, campaign, work, messagesOf } = sendingHelpers(h);
  const knex = () => h().services.db.knex;
  const path = (url: string) => new URL(url).pathname;
  const linkOf = (html: string) => path(/href="([^"]+\/t\/c\/[^"]+)"/.exec(html)![1]!);
  const pixelOf = (html: string) => path(/<img src="([^"]+)"/.exec(html)![1]!);
  const hook = (ws: TestWorkspace, body: unknown) =>
    h().request({ method: 'POST', url: `/ecom/website/${ws.integrationId}`, headers: { authorization: `Bearer ${ws.integrationKey}` }, json: body });

  /** `n` subscribers; their ids in creation order, and their emails by id. */
  async function subscribers(ws: TestWorkspace, n: number, tag: string) {
    const emails = new Map<string, string>();
    for (let i = 0; i < n; i++) {
      const email = `${tag}${i}@example.com`;
      emails.set(await contact(ws, 'subscribed', { first_name: `P${i}` }, email), email);
    }
    return emails;
  }
  const abCampaign = (ws: TestWorkspace, abTest: Record<string, unknown>, variants: unknown = VARIANTS) =>
    campaign(ws, { subject: 'Base', html: HTML, variants, ab_test: { wait_minutes: 60, ...abTest } });
  /** Makes the campaign's winner job due now (its wait is over). */
  const endWait = (campaignId: string) =>
    knex()('jobs')
      .where({ kind: 'campaign.ab_winner' })
      .whereRaw(`payload ${h().dialect === 'postgres' ? "->> 'campaignId'" : "->> '$.campaignId'"} = ?`, [campaignId])
      .update({ run_at: Date.now() - 1 });
  const winnerJobs = (campaignId: string) =>
    knex()('jobs').where({ kind: 'campaign.ab_winner' }).whereRaw(`payload ${h().dialect === 'postgres' ? "->> 'campaignId'" : "->> '$.campaignId'"} = ?`, [campaignId]);
  const get = async (ws: TestWorkspace, id: string) => (await api(ws, 'GET', `/campaigns/${id}`)).json();
  const report = async (ws: TestWorkspace, id: string) => (await api(ws, 'GET', `/campaigns/${id}/report`)).json();
  const byVariant = (messages: Array<Record<string, any>>) => {
    const counts: Record<string, number> = {};
    for (const m of messages) counts[String(m.variant)] = (counts[String(m.variant)] ?? 0) + 1;
    return counts;
  };

  it('validation: variants and ab_test together, 2 to 4 variants each with a field, templates checked, bounds; 400 names the field and stores nothing', async () => {
    const ws = await h().workspace();
    const base = { name: 'N', subject: 'S', html: 'x' };
    const ab = { test_share: 0.2, metric: 'unique_opens', wait_minutes: 60 };
    const two = [{ subject: 'A' }, { subject: 'B' }];
    const bad: Array<[Record<string, unknown>, RegExp]> = [
      [{ ...base, variants: two }, /^invalid request: ab_test is required with variants$/],
      [{ ...base, ab_test: ab }, /^invalid request: variants is required with ab_test$/],
      [{ ...base, variants: [{ subject: 'A' }], ab_test: ab }, /variants must have at least 2 entries/],
      [{ ...base, variants: [...two, ...two, { subject: 'E' }], ab_test: ab }, /variants must have at most 4 entries/],
      [{ ...base, variants: [{ subject: 'A' }, {}], ab_test: ab }, /variants\[1\] must set subject, html or text/],
      [{ ...base, variants: [{ subject: 'A' }, { subject: '' }], ab_test: ab }, /variants\[1\]\.subject must not be empty/],
      [{ ...base, variants: [{ subject: 'A' }, { html: '{% if %}' }], ab_test: ab }, /^html: |variants\[1\]\.html: /],
      [{ ...base, variants: [{ subject: '{{ x' }, { subject: 'B' }], ab_test: ab }, /variants\[0\]\.subject: /],
      [{ ...base, variants: two, ab_test: { ...ab, test_share: 0 } }, /ab_test\.test_share must be more than 0/],
      [{ ...base, variants: two, ab_test: { ...ab, test_share: 1.5 } }, /ab_test\.test_share must be at most 1/],
      [{ ...base, variants: two, ab_test: { ...ab, wait_minutes: 0 } }, /ab_test\.wait_minutes must be at least 1/],
      [{ ...base, variants: two, ab_test: { ...ab, wait_minutes: 43_201 } }, /ab_test\.wait_minutes must be at most 43200/],
      [{ ...base, variants: two, ab_test: { ...ab, wait_minutes: 1.5 } }, /ab_test\.wait_minutes/],
      [{ ...base, variants: two, ab_test: { ...ab, metric: 'opens' } }, /ab_test\.metric/],
      [{ ...base, variants: two, ab_test: { test_share: 0.2, metric: 'revenue' } }, /ab_test\.wait_minutes/],
      [{ ...base, variants: 'AB', ab_test: ab }, /variants/],
    ];
    for (const [body, message] of bad) {
      const reply = await api(ws, 'POST', '/campaigns', body);
      expect(reply.statusCode, JSON.stringify(body)).toBe(400);
      expect(reply.json().error, JSON.stringify(body)).toMatch(message);
    }
    expect((await api(ws, 'GET', '/campaigns')).json().meta.total).toBe(0);
    // The html check names the variant's field, not the campaign's.
    expect((await api(ws, 'POST', '/campaigns', { ...base, variants: [{ subject: 'A' }, { html: '{% if %}' }], ab_test: ab })).json().error).toMatch(/variants\[1\]\.html: /);

    // PATCH while a draft: the pair is checked against what the draft holds.
    const plain = await campaign(ws);
    expect((await get(ws, plain)).variants).toBeNull();
    expect((await get(ws, plain)).ab_test).toBeNull();
    expect((await api(ws, 'PATCH', `/campaigns/${plain}`, { variants: two })).json().error).toMatch(/ab_test is required/);
    expect((await api(ws, 'PATCH', `/campaigns/${plain}`, { variants: two, ab_test: { ...ab, wait_minutes: 0 } })).statusCode).toBe(400);
    const patched = await api(ws, 'PATCH', `/campaigns/${plain}`, { variants: two, ab_test: ab });
    expect(patched.statusCode).toBe(200);
    expect(patched.json()).toMatchObject({ variants: two, ab_test: { ...ab, winner: null, test_ends_at: null } });
    expect((await api(ws, 'PATCH', `/campaigns/${plain}`, { variants: [{ subject: 'X' }, { html: '{% for %}' }] })).json().error).toMatch(/variants\[1\]\.html/);
    expect((await api(ws, 'PATCH', `/campaigns/${plain}`, { variants: [{ subject: 'X' }, { subject: 'Y' }, { subject: 'Z' }] })).json().variants).toHaveLength(3);
    expect((await api(ws, 'PATCH', `/campaigns/${plain}`, { ab_test: null })).json().error).toMatch(/variants is required|ab_test is required/);
    expect((await api(ws, 'PATCH', `/campaigns/${plain}`, { variants: null, ab_test: null })).json()).toMatchObject({ variants: null, ab_test: null });
    await api(ws, 'PATCH', `/campaigns/${plain}`, { variants: two, ab_test: ab });
    await api(ws, 'POST', `/campaigns/${plain}/send`);
    expect((await api(ws, 'PATCH', `/campaigns/${plain}`, { variants: null, ab_test: null })).statusCode).toBe(409);
  });

  it('the split: deterministic from the ids alone, the test share of the audience, even across variants; each variant its own content', async () => {
    expect(splitKey('c1', 'k1')).toBe(splitKey('c1', 'k1'));
    expect(splitKey('c1', 'k1')).not.toBe(splitKey('c2', 'k1'));
    expect(pickWinner([1, 3, 3, 2])).toBe(1);
    expect(pickWinner([0, 0, 0])).toBe(0);

    const ws = await h().workspace();
    const emails = await subscribers(ws, 31, 'split');
    await contact(ws, 'unsubscribed');
    const id = await abCampaign(ws, { test_share: 0.5, metric: 'unique_opens' });
    const sent = await api(ws, 'POST', `/campaigns/${id}/send`);
    expect(sent.json()).toEqual({ id, status: 'testing', recipients: 16 });
    await work();
    const messages = await messagesOf(ws, `campaign_id=${id}`);
    expect(messages).toHaveLength(16);
    expect(byVariant(messages)).toEqual({ 0: 6, 1: 5, 2: 5 });
    // The same split computed from the ids alone, as any process on any database would.
    const ranked = [...emails.keys()].sort((a, b) => splitKey(id, a) - splitKey(id, b) || (a < b ? -1 : 1));
    const expected = new Map(ranked.slice(0, 16).map((contactId, place) => [contactId, place % 3]));
    expect(new Map(messages.map((m) => [m.contact_id, m.variant]))).toEqual(expected);
    // Each variant overrides the campaign's subject and/or html, and keeps the rest.
    for (const m of messages) {
      const first = `P${[...emails.keys()].indexOf(m.contact_id)}`;
      expect(m.subject).toBe(m.variant === 0 ? `A ${first}` : m.variant === 1 ? 'B' : 'Base');
      expect(m.html).toContain(m.variant === 0 ? 'Base body' : m.variant === 1 ? 'B body' : 'C body');
    }
    const record = await get(ws, id);
    expect(record).toMatchObject({ status: 'testing', recipients: 16, sent_at: null, ab_test: { test_share: 0.5, metric: 'unique_opens', wait_minutes: 60, winner: null } });
    // The test ends the wait after the test group was sent.
    const endsAt = Date.parse(record.ab_test.test_ends_at);
    expect(endsAt - Date.now()).toBeGreaterThan(59 * 60_000);
    expect(endsAt - Date.now()).toBeLessThanOrEqual(60 * 60_000);
    expect(await winnerJobs(id)).toHaveLength(1);
    // A campaign without variants: messages name no variant, its report has no variants.
    const plain = await campaign(ws, { name: 'Plain' });
    await api(ws, 'POST', `/campaigns/${plain}/send`);
    await work();
    expect(new Set((await messagesOf(ws, `campaign_id=${plain}`)).map((m) => m.variant))).toEqual(new Set([null]));
    expect(await report(ws, plain)).not.toHaveProperty('variants');
  });

  it("a variant's text part is its own, else made from its own html, else the campaign's; a variant is checked and sent in the campaign's format, and previewed by index", async () => {
    const ws = await h().workspace();
    const ab = { test_share: 1, metric: 'unique_opens', wait_minutes: 60 };
    const mjml = (words: string) => `<mjml><mj-body><mj-section><mj-column><mj-text>${words}</mj-text></mj-column></mj-section></mj-body></mjml>`;
    const base = { name: 'Parts', subject: 'Base', format: 'mjml', html: mjml('Base words'), text: 'Base text for {{ contact.first_name }}' };
    const variants = [{ subject: 'Subject only' }, { html: mjml('Second words') }, { html: mjml('Third words'), text: 'Third text' }, { text: 'Fourth text' }];

    // A variant's html is in the campaign's format: broken MJML is a 400 naming the variant's field and the line.
    const broken = { html: '<mjml>\n<mj-body>\n<mj-column><mj-text>x</mj-text></mj-column>\n</mj-body>\n</mjml>' };
    const refused = await api(ws, 'POST', '/campaigns', { ...base, variants: [variants[0], broken], ab_test: ab });
    expect(refused.statusCode).toBe(400);
    expect(refused.json().error).toMatch(/^variants\[1\]\.html: line 3: mj-column cannot be used inside mj-body/);
    expect((await api(ws, 'POST', '/campaigns', { ...base, variants: [variants[0], { text: '{% if %}' }], ab_test: ab })).json().error).toMatch(/^variants\[1\]\.text: /);
    // A PATCH of the format alone checks the variants' html in the new format.
    const html = await campaign(ws, { html: HTML, variants: [{ subject: 'A' }, { html: '<p>plain</p>' }], ab_test: ab });
    const toMjml = await api(ws, 'PATCH', `/campaigns/${html}`, { format: 'mjml', html: mjml('now MJML') });
    expect(toMjml.statusCode).toBe(400);
    expect(toMjml.json().error).toMatch(/^variants\[1\]\.html: line 1: an MJML template starts with <mjml>/);
    expect((await get(ws, html)).format).toBe('html');

    const emails = await subscribers(ws, 4, 'parts');
    const id = await campaign(ws, { ...base, variants, ab_test: ab });
    expect((await get(ws, id)).variants).toEqual(variants);
    const [ann] = emails.keys();

    // The preview of a variant is that variant's message; an index the campaign lacks is a 400 naming variant.
    const preview = async (variant?: number | string) => api(ws, 'POST', `/campaigns/${id}/preview`, { contact_id: ann, ...(variant === undefined ? {} : { variant }) });
    expect((await preview()).json()).toMatchObject({ subject: 'Base', text: expect.stringContaining('Base text for P0') });
    expect((await preview(0)).json()).toMatchObject({ subject: 'Subject only', text: expect.stringContaining('Base text for P0') });
    const second = (await preview(1)).json();
    expect(second.html).toContain('Second words');
    expect(second.text).toContain('Second words');
    expect(second.text).not.toContain('Base');
    expect((await preview(3)).json()).toMatchObject({ html: expect.stringContaining('Base words'), text: expect.stringContaining('Fourth text') });
    for (const [variant, error] of [[4, /^invalid request: variant must be less than 4$/], [-1, /variant/], ['x', /variant/]] as const) {
      const reply = await preview(variant);
      expect(reply.statusCode, String(variant)).toBe(400);
      expect(reply.json().error).toMatch(error);
    }
    const page = await api(ws, 'GET', `/campaigns/${id}/preview.html?contact_id=${ann}&variant=2`);
    expect(page.statusCode).toBe(200);
    expect(page.body).toContain('Third words');
    const plain = await campaign(ws, { name: 'Plain' });
    expect((await api(ws, 'POST', `/campaigns/${plain}/preview`, { contact_id: ann, variant: 0 })).json().error).toBe('invalid request: variant is only for an A/B campaign');

    // Sent: every variant's html compiled from MJML; each text part as the rule says.
    await api(ws, 'POST', `/campaigns/${id}/send`);
    await work();
    const messages = await messagesOf(ws, `campaign_id=${id}`);
    expect(byVariant(messages)).toEqual({ 0: 1, 1: 1, 2: 1, 3: 1 });
    const sent = (variant: number) => messages.find((m) => m.variant === variant)!;
    const first = (m: Record<string, any>) => `P${[...emails.keys()].indexOf(m.contact_id)}`;
    for (const m of messages) expect(m.html).not.toContain('<mj-');
    expect(sent(0)).toMatchObject({ subject: 'Subject only', html: expect.stringContaining('Base words'), text: expect.stringContaining(`Base text for ${first(sent(0))}`) });
    expect(sent(1).html).toContain('Second words');
    expect(sent(1).text).toContain('Second words');
    expect(sent(1).text).not.toContain('Base');
    expect(sent(2)).toMatchObject({ html: expect.stringContaining('Third words'), text: expect.stringContaining('Third text') });
    expect(sent(3)).toMatchObject({ subject: 'Base', html: expect.stringContaining('Base words'), text: expect.stringContaining('Fourth text') });
  });

  it('the database orders the test group, the audience read a page at a time: equal keys go by contact id byte by byte, batches in order, nothing stays staged', async () => {
    const ws = await h().workspace();
    const ids = [...(await subscribers(ws, 11, 'pages')).keys()];
    const other = await h().workspace();
    await subscribers(other, 3, 'elsewhere');
    const id = await campaign(ws, { name: 'Staged' });
    // Two keys only, so most places are decided by the contact id.
    const keyOf = (contactId: string) => contactId.charCodeAt(contactId.length - 1) % 2;
    const queued = await h().services.db.writeTransaction((trx) =>
      h().services.messages.queueCampaignTestGroup(trx, {
        campaignId: id,
        audience: campaignAudience(trx, ws.id, null),
        splitKey: keyOf,
        testShare: 0.7,
        variants: 3,
        batchSize: 3,
        now: Date.now(),
        pageRows: 4,
      }),
    );
    const ranked = [...ids].sort((a, b) => keyOf(a) - keyOf(b) || (a < b ? -1 : 1)).slice(0, 8);
    expect(queued).toEqual({ recipients: 8, batches: 3 });
    const rows = await knex()('messages').where({ campaign_id: id }).select('contact_id', 'variant', 'batch');
    const placed = new Map(rows.map((r) => [r.contact_id, [Number(r.variant), Number(r.batch)]]));
    expect(placed).toEqual(new Map(ranked.map((contactId, place) => [contactId, [place % 3, Math.floor(place / 3)]])));
    const [staged] = await knex()('campaign_split_keys').count({ n: '*' });
    expect(Number(staged!.n)).toBe(0);
  });

  /**
   * 10 subscribers, 3 variants, 60 % in the test (2 each). Variant 0: both opened; variant 1: one clicked;
   * variant 2: one opened who then orders 50. The metric decides: opens → 0, clicks → 1, revenue → 2.
   */
  async function testByMetric(metric: 'unique_opens' | 'unique_clicks' | 'revenue', winner: number) {
    const ws = await h().workspace();
    const emails = await subscribers(ws, 10, `m-${metric}-`);
    const id = await abCampaign(ws, { test_share: 0.6, metric });
    expect((await api(ws, 'POST', `/campaigns/${id}/send`)).json().recipients).toBe(6);
    await work();
    const test = await messagesOf(ws, `campaign_id=${id}`);
    const of = (variant: number) => test.filter((m) => m.variant === variant);
    expect([of(0).length, of(1).length, of(2).length]).toEqual([2, 2, 2]);
    for (const m of of(0)) await h().request({ method: 'GET', url: pixelOf(m.html) });
    expect((await h().request({ method: 'GET', url: linkOf(of(1)[0]!.html) })).statusCode).toBe(302);
    const buyer = of(2)[0]!;
    await h().request({ method: 'GET', url: pixelOf(buyer.html) });
    const placed = await hook(ws, { event_type: 'order_placed', email: emails.get(buyer.contact_id), order: { external_id: `o-${metric}`, total_amount: 50, currency: 'USD' } });
    expect(placed.statusCode).toBe(200);

    // Before the wait ends nothing more goes.
    await work();
    expect(await messagesOf(ws, `campaign_id=${id}`)).toHaveLength(6);
    expect((await report(ws, id)).variants.map((v: { winner: boolean }) => v.winner)).toEqual([false, false, false]);

    await endWait(id);
    await work();
    const all = await messagesOf(ws, `campaign_id=${id}`);
    expect(all).toHaveLength(10);
    expect(new Set(all.map((m) => m.contact_id)).size).toBe(10);
    const rest = all.filter((m) => !test.some((t) => t.id === m.id));
    expect(rest.every((m) => m.variant === winner && m.status === 'captured')).toBe(true);
    expect(await get(ws, id)).toMatchObject({ status: 'sent', recipients: 10, ab_test: { winner } });

    // A winner-phase recipient's order counts under the winner; the campaign counts each order once.
    const late = rest[0]!;
    await h().request({ method: 'GET', url: linkOf(late.html) });
    await hook(ws, { event_type: 'order_placed', email: emails.get(late.contact_id), order: { external_id: `o2-${metric}`, total_amount: 20, currency: 'USD' } });
    const r = await report(ws, id);
    const expected = [
      { index: 0, sent: 2, unique_opens: 2, unique_clicks: 0, revenue: 0, winner: false },
      { index: 1, sent: 2, unique_opens: 0, unique_clicks: 1, revenue: 0, winner: false },
      { index: 2, sent: 2, unique_opens: 1, unique_clicks: 0, revenue: 50, winner: false },
    ];
    expected[winner] = { ...expected[winner]!, sent: 6, unique_clicks: expected[winner]!.unique_clicks + 1, revenue: expected[winner]!.revenue + 20, winner: true };
    expect(r.variants).toEqual(expected);
    expect(r).toMatchObject({ sent: 10, orders: 2, revenue: 70, unique_opens: 3, unique_clicks: 2 });
    expect(r.revenue).toBe(r.variants.reduce((sum: number, v: { revenue: number }) => sum + v.revenue, 0));
    const revenueReport = (await api(ws, 'GET', '/reports/revenue')).json().data;
    expect(revenueReport).toEqual([expect.objectContaining({ campaign_id: id, orders: 2, revenue: 70 })]);

    // Erasing the buyer removes their message; the order keeps its credit, and its variant with it.
    expect((await api(ws, 'DELETE', `/contacts/${buyer.contact_id}`)).statusCode).toBe(204);
    const erased = await report(ws, id);
    expect(erased).toMatchObject({ sent: 9, orders: 2, revenue: 70 });
    expect(erased.variants.map((v: { revenue: number }) => v.revenue)).toEqual(expected.map((v) => v.revenue));
  }

  it('the winner by unique opens', () => testByMetric('unique_opens', 0));
  it('the winner by unique clicks', () => testByMetric('unique_clicks', 1));
  it('the winner by attributed revenue', () => testByMetric('revenue', 2));

  it('a restart between the phases neither loses nor repeats the winner send; exactly one message per recipient', async () => {
    const ws = await h().workspace();
    await subscribers(ws, 12, 'restart');
    const id = await abCampaign(ws, { test_share: 0.5, metric: 'unique_clicks' }, VARIANTS.slice(0, 2));
    await api(ws, 'POST', `/campaigns/${id}/send`);
    const options = { onFailure: () => {}, pollMs: 20 };
    const open = () => createServices(openDatabase(h().database.url), { email: emailOptionsOf(h().config) });

    // The first process sends the test group and stops.
    const first = open();
    try {
      await runDueJobs(workerOptionsFor(first, options));
    } finally {
      await first.close();
    }
    expect(byVariant(await messagesOf(ws, `campaign_id=${id}`))).toEqual({ 0: 3, 1: 3 });
    expect((await get(ws, id)).status).toBe('testing');
    // Someone subscribes during the wait: the winner goes to the audience as it stands then.
    const newcomer = await contact(ws, 'subscribed', {}, 'newcomer@example.com');

    // A new process on the same database runs the due job: no engagement, so the tie goes to variant 0.
    await endWait(id);
    const second = open();
    try {
      // One process claims the winner job and dies holding it; the next one takes it over once the lease is out
      // (a lease of 0 ms: out at once, so no wait).
      const claimed = (await second.jobs.claim('dead-process', 10, 0)).filter((j) => j.kind === 'campaign.ab_winner');
      expect(claimed).toHaveLength(1);
      await runDueJobs(workerOptionsFor(second, options));
    } finally {
      await second.close();
    }
    const after = await messagesOf(ws, `campaign_id=${id}`);
    expect(after).toHaveLength(13);
    expect(new Set(after.map((m) => m.contact_id)).size).toBe(13);
    expect(byVariant(after)).toEqual({ 0: 10, 1: 3 });
    expect(after.find((m) => m.contact_id === newcomer)).toMatchObject({ variant: 0, status: 'captured' });
    expect(await get(ws, id)).toMatchObject({ status: 'sent', recipients: 13, ab_test: { winner: 0 } });

    // The winner job again (a repeat, another process): nothing more is sent.
    await knex().transaction((trx) => h().services.jobs.enqueue(trx, [{ kind: 'campaign.ab_winner', payload: { campaignId: id } }]));
    await work();
    expect(await messagesOf(ws, `campaign_id=${id}`)).toHaveLength(13);
    expect(await knex()('messages').where({ campaign_id: id })).toHaveLength(13);
  });

  it('test_share 1: everyone is in the test, no winner send; the winner is still named when the wait ends', async () => {
    const ws = await h().workspace();
    await subscribers(ws, 4, 'all');
    const id = await abCampaign(ws, { test_share: 1, metric: 'revenue' }, VARIANTS.slice(1));
    expect((await api(ws, 'POST', `/campaigns/${id}/send`)).json()).toEqual({ id, status: 'testing', recipients: 4 });
    await work();
    expect(byVariant(await messagesOf(ws, `campaign_id=${id}`))).toEqual({ 0: 2, 1: 2 });
    expect((await get(ws, id)).status).toBe('testing');
    await contact(ws, 'subscribed', {}, 'toolate@example.com');
    await endWait(id);
    await work();
    expect(await messagesOf(ws, `campaign_id=${id}`)).toHaveLength(4);
    const record = await get(ws, id);
    expect(record).toMatchObject({ status: 'sent', recipients: 4, ab_test: { winner: 0 } });
    expect(record.sent_at).not.toBeNull();
    expect((await report(ws, id)).variants).toEqual([
      { index: 0, sent: 2, unique_opens: 0, unique_clicks: 0, revenue: 0, winner: true },
      { index: 1, sent: 2, unique_opens: 0, unique_clicks: 0, revenue: 0, winner: false },
    ]);
  });

  it('a scheduled A/B campaign starts its test when send_at comes; a test recipient who unsubscribes meanwhile is skipped and gets no winner', async () => {
    const ws = await h().workspace();
    await subscribers(ws, 6, 'sched');
    const id = await abCampaign(ws, { test_share: 0.5, metric: 'unique_opens' }, VARIANTS.slice(0, 2));
    const at = new Date(Date.now() + 3_600_000).toISOString();
    expect((await api(ws, 'POST', `/campaigns/${id}/send`, { send_at: at })).json()).toEqual({ id, status: 'scheduled', recipients: null });
    await knex()('jobs').where({ kind: 'campaign.start' }).update({ run_at: Date.now() - 1 });
    // The start job alone (its batches are due too, but the unsubscribe below comes first).
    const [start] = (await h().services.jobs.claim('test', 10, 60_000)).filter((j) => j.kind === 'campaign.start');
    await h().services.campaigns.handlers['campaign.start']!(start!);
    expect(await get(ws, id)).toMatchObject({ status: 'testing', recipients: 3 });
    const [leaving] = await knex()('messages').where({ campaign_id: id }).select('contact_id');
    await api(ws, 'PATCH', `/contacts/${leaving.contact_id}`, { subscription_status: 'unsubscribed' });
    await knex()('jobs').where({ locked_by: 'test' }).update({ locked_by: null, locked_until: null });
    await work();
    expect(await messagesOf(ws, `campaign_id=${id}`)).toHaveLength(2);
    expect((await report(ws, id)).skipped).toBe(1);
    await endWait(id);
    await work();
    const all = await messagesOf(ws, `campaign_id=${id}`);
    expect(all).toHaveLength(5);
    expect(all.some((m) => m.contact_id === leaving.contact_id)).toBe(false);
    expect(new Set(all.map((m) => m.contact_id)).size).toBe(5);
    expect(await get(ws, id)).toMatchObject({ status: 'sent', recipients: 5, ab_test: { winner: 0 } });
  });

  it('an A/B campaign to nobody still ends its test: the winner is named and nobody gets mail', async () => {
    const ws = await h().workspace();
    const id = await abCampaign(ws, { test_share: 0.3, metric: 'unique_opens' });
    expect((await api(ws, 'POST', `/campaigns/${id}/send`)).json()).toEqual({ id, status: 'testing', recipients: 0 });
    await endWait(id);
    await work();
    expect(await get(ws, id)).toMatchObject({ status: 'sent', recipients: 0, ab_test: { winner: 0 } });
  });

  it('emk campaigns send works an A/B test group through and returns testing; the winner is left to the workers', async () => {
    const ws = await h().workspace();
    await subscribers(ws, 4, 'cli');
    const id = await abCampaign(ws, { test_share: 0.5, metric: 'unique_clicks' }, VARIANTS.slice(0, 2));
    const result = await runEmk(['campaigns', 'send', id, '--json', '--workspace', ws.id, '--db', h().database.url]);
    expect(result.code, result.stderr).toBe(0);
    const out = JSON.parse(result.stdout);
    expect(out).toMatchObject({ id, status: 'testing', recipients: 2, ab_test: { winner: null }, report: { sent: 2 } });
    expect(out.report.variants.map((v: { sent: number }) => v.sent)).toEqual([1, 1]);
    expect(await winnerJobs(id)).toHaveLength(1);
  });
});
