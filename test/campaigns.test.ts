import { expect, it } from 'vitest';
import { createServices, emailOptionsOf } from '../src/domain/create-services.js';
import { openDatabase } from '../src/domain/db/database.js';
import { runDueJobs, workerOptionsFor } from '../src/worker/worker.js';
import { describeEachDatabase, type TestWorkspace } from './helpers/harness.js';
import { sendingHelpers } from './helpers/sending.js';

describeEachDatabase('campaigns', (h) => {
  const { api, contact, campaign, work, messagesOf } = sendingHelpers(h);
  const knex = () => h().services.db.knex;

  it('create checks every field and every template, naming the field; nothing is stored on a 400', async () => {
    const ws = await h().workspace();
    const bad: Array<[Record<string, unknown>, RegExp]> = [
      [{ subject: 'S', html: '<p>x</p>' }, /name/],
      [{ name: 'N', subject: 'S', html: '{% if %}' }, /^html: /],
      [{ name: 'N', subject: '{{ contact.first_name', html: 'x' }, /^subject: /],
      [{ name: 'N', subject: 'S', html: 'x', text: '{% endfor %}' }, /^text: /],
      [{ name: 'N', subject: 'S', html: '{% products limit: 3 %}{% endproducts %}' }, /^html: .*feed is required/],
      [{ name: 'N', subject: 'S', html: '{% products feed: "f", fallback: "cheapest" %}{% endproducts %}' }, /^html: .*fallback must be one of/],
      [{ name: 'N', subject: 'S', html: '{{ x | no_such_filter }}' }, /^html: /],
      [{ name: 'N', subject: 'S', html: 'x', segment_id: 'seg-1' }, /segment_id/],
      [{ name: 'N', subject: 'S', html: 'x', from_email: 'not-an-email' }, /from_email/],
    ];
    for (const [body, message] of bad) {
      const reply = await api(ws, 'POST', '/campaigns', body);
      expect(reply.statusCode, JSON.stringify(body)).toBe(400);
      expect(reply.json().error).toMatch(message);
    }
    expect((await api(ws, 'GET', '/campaigns')).json().meta.total).toBe(0);
  });

  it('drafts can be read, listed, changed and deleted', async () => {
    const ws = await h().workspace();
    const id = await campaign(ws, { name: 'Draft' });
    const record = (await api(ws, 'GET', `/campaigns/${id}`)).json();
    expect(record).toMatchObject({ id, name: 'Draft', status: 'draft', recipients: null, send_at: null, sent_at: null, segment_id: null });
    const patched = await api(ws, 'PATCH', `/campaigns/${id}`, { subject: 'New subject', from_name: 'Shop' });
    expect(patched.json()).toMatchObject({ subject: 'New subject', from_name: 'Shop', name: 'Draft' });
    expect((await api(ws, 'PATCH', `/campaigns/${id}`, { html: '{% for %}' })).statusCode).toBe(400);
    expect((await api(ws, 'GET', '/campaigns')).json().data.map((c: { id: string }) => c.id)).toEqual([id]);
    expect((await api(ws, 'DELETE', `/campaigns/${id}`)).statusCode).toBe(204);
    expect((await api(ws, 'GET', `/campaigns/${id}`)).statusCode).toBe(404);
    const other = await h().workspace();
    const theirs = await campaign(other);
    expect((await api(ws, 'GET', `/campaigns/${theirs}`)).statusCode).toBe(404);
  });

  it('a send fixes the recipients (subscribed, not suppressed), the worker captures each message once, personalised and tracked', async () => {
    const ws = await h().workspace();
    const ann = await contact(ws, 'subscribed', { first_name: 'Ann <b>' });
    const bob = await contact(ws, 'subscribed', { first_name: 'Bob' }, 'bob@example.com');
    await contact(ws, 'unsubscribed');
    await contact(ws, 'non_subscribed');
    await api(ws, 'POST', '/suppressions', { emails: ['BOB@example.com'] });
    const id = await campaign(ws, { html: '<p>Hi {{ contact.first_name }}</p><a href="https://shop.test/sale?x=1#top">Sale</a> <a href="mailto:help@shop.test">Help</a> <a href="{{ unsubscribe_url }}">Unsubscribe</a>' });

    const sent = await api(ws, 'POST', `/campaigns/${id}/send`, {});
    expect(sent.statusCode).toBe(202);
    expect(sent.json()).toEqual({ id, status: 'sending', recipients: 1 });
    expect((await api(ws, 'POST', `/campaigns/${id}/send`, {})).statusCode).toBe(409);
    expect((await api(ws, 'PATCH', `/campaigns/${id}`, { name: 'x' })).statusCode).toBe(409);
    expect((await api(ws, 'DELETE', `/campaigns/${id}`)).statusCode).toBe(409);

    await work();
    const messages = await messagesOf(ws, `campaign_id=${id}`);
    expect(messages).toHaveLength(1);
    const [message] = messages;
    expect(message).toMatchObject({ contact_id: ann, campaign_id: id, flow_id: null, status: 'captured', subject: 'Hi Ann <b>' });
    expect(message!.html).toContain('Hi Ann &lt;b&gt;');
    expect(message!.html).toMatch(/href="http:\/\/localhost:\d+\/t\/c\/[A-Za-z0-9_-]+"/);
    expect(message!.html).not.toContain('https://shop.test/sale');
    expect(message!.html).toContain('href="mailto:help@shop.test"');
    expect(message!.html).toMatch(/href="http:\/\/localhost:\d+\/cp\/unsubscribe\/[A-Za-z0-9_-]+"/);
    expect(message!.html).toMatch(/<img src="http:\/\/localhost:\d+\/t\/o\/[A-Za-z0-9_-]+"/);
    expect(message!.text).toContain('Hi Ann <b>');
    expect(message!.sent_at).not.toBeNull();
    expect((await api(ws, 'GET', `/messages/${message!.id}`)).json()).toMatchObject({ id: message!.id, enrollment_id: null, error: null });
    expect(await messagesOf(ws, `contact_id=${bob}`)).toHaveLength(0);

    const record = (await api(ws, 'GET', `/campaigns/${id}`)).json();
    expect(record).toMatchObject({ status: 'sent', recipients: 1 });
    expect(record.sent_at).not.toBeNull();
    expect((await api(ws, 'GET', `/campaigns/${id}/report`)).json()).toEqual({
      sent: 1, failed: 0, skipped: 0, opens: 0, unique_opens: 0, clicks: 0, unique_clicks: 0, orders: 0, revenue: 0, currency: 'USD',
      delivered: 0, bounced: 0, complained: 0, unsubscribed: 0, delivery_rate: 0, bounce_rate: 0, complaint_rate: 0, unsubscribe_rate: 0,
    });
    // Running the worker again sends nothing more.
    await work();
    expect(await messagesOf(ws, `campaign_id=${id}`)).toHaveLength(1);
  });

  it('a campaign to nobody is sent at once', async () => {
    const ws = await h().workspace();
    const id = await campaign(ws);
    expect((await api(ws, 'POST', `/campaigns/${id}/send`)).json()).toEqual({ id, status: 'sent', recipients: 0 });
  });

  it('a recipient suppressed or unsubscribed after the send started is skipped: no message row, counted in the report', async () => {
    const ws = await h().workspace();
    await contact(ws, 'subscribed', {}, 'stays@example.com');
    await contact(ws, 'subscribed', {}, 'suppressed-later@example.com');
    const leaving = await contact(ws, 'subscribed', {}, 'leaves@example.com');
    const id = await campaign(ws);
    expect((await api(ws, 'POST', `/campaigns/${id}/send`)).json().recipients).toBe(3);
    await api(ws, 'POST', '/suppressions', { emails: ['suppressed-later@example.com'] });
    await api(ws, 'PATCH', `/contacts/${leaving}`, { subscription_status: 'unsubscribed' });
    await work();
    expect((await messagesOf(ws, `campaign_id=${id}`)).map((m) => m.to)).toEqual(['stays@example.com']);
    expect((await api(ws, 'GET', `/campaigns/${id}/report`)).json()).toMatchObject({ sent: 1, skipped: 2 });
    expect((await api(ws, 'GET', `/campaigns/${id}`)).json().status).toBe('sent');
  });

  it('a message that fails to render is failed with its error; the others go', async () => {
    const ws = await h().workspace();
    await contact(ws, 'subscribed', { first_name: 'Ok' }, 'ok@example.com');
    await contact(ws, 'subscribed', { first_name: 'Bad' }, 'bad@example.com');
    // Parses, but for one recipient loops past the templates' memory limit.
    const id = await campaign(ws, { html: '{% if contact.first_name == "Bad" %}{% for i in (1..100000000) %}{{ i }}{% endfor %}{% endif %}<p>{{ contact.first_name }}</p>' });
    await api(ws, 'POST', `/campaigns/${id}/send`);
    await work();
    const byTo = Object.fromEntries((await messagesOf(ws, `campaign_id=${id}`)).map((m) => [m.to, m]));
    expect(byTo['ok@example.com']).toMatchObject({ status: 'captured' });
    expect(byTo['bad@example.com']).toMatchObject({ status: 'failed', html: null });
    expect(byTo['bad@example.com']!.error).toMatch(/^render failed: /);
    expect((await api(ws, 'GET', `/campaigns/${id}/report`)).json()).toMatchObject({ sent: 1, failed: 1 });
    expect((await api(ws, 'GET', `/campaigns/${id}`)).json().status).toBe('sent');
  });

  it('a scheduled send waits for send_at, then fixes its recipients', async () => {
    const ws = await h().workspace();
    await contact(ws, 'subscribed');
    const id = await campaign(ws);
    expect((await api(ws, 'POST', `/campaigns/${id}/send`, { send_at: 'tomorrow' })).statusCode).toBe(400);
    const at = new Date(Date.now() + 3_600_000).toISOString();
    const reply = await api(ws, 'POST', `/campaigns/${id}/send`, { send_at: at });
    expect(reply.statusCode).toBe(202);
    expect(reply.json()).toEqual({ id, status: 'scheduled', recipients: null });
    expect((await api(ws, 'GET', `/campaigns/${id}`)).json()).toMatchObject({ status: 'scheduled', send_at: at });
    await work();
    expect(await messagesOf(ws, `campaign_id=${id}`)).toHaveLength(0);
    // Someone subscribing before the time is a recipient: recipients are fixed when the send starts.
    await contact(ws, 'subscribed');
    await knex()('jobs').where({ kind: 'campaign.start' }).whereRaw(`payload ${h().dialect === 'postgres' ? "->> 'campaignId'" : "->> '$.campaignId'"} = ?`, [id]).update({ run_at: Date.now() - 1 });
    await work();
    expect((await api(ws, 'GET', `/campaigns/${id}`)).json()).toMatchObject({ status: 'sent', recipients: 2 });
    expect(await messagesOf(ws, `campaign_id=${id}`)).toHaveLength(2);
  });

  it('a send killed mid-batch resumes after the lease and sends each remaining message once', async () => {
    const ws = await h().workspace();
    for (let i = 0; i < 5; i++) await contact(ws, 'subscribed', { first_name: `P${i}` });
    const id = await campaign(ws);
    await api(ws, 'POST', `/campaigns/${id}/send`);
    // A process claims the batch and dies after delivering two of its messages.
    const [claimed] = (await h().services.jobs.claim('dead-process', 10, 100)).filter((j) => j.payload.campaignId === id);
    expect(claimed).toBeDefined();
    const pending = await knex()('messages').where({ campaign_id: id }).orderBy('id').limit(2);
    await knex()('messages').whereIn('id', pending.map((m) => m.id)).update({ status: 'captured', html: 'delivered before the crash', sent_at: 1 });
    await new Promise((resolve) => setTimeout(resolve, 150));
    await work();
    const messages = await messagesOf(ws, `campaign_id=${id}`);
    expect(messages).toHaveLength(5);
    expect(new Set(messages.map((m) => m.contact_id)).size).toBe(5);
    expect(messages.every((m) => m.status === 'captured')).toBe(true);
    expect(messages.filter((m) => m.html === 'delivered before the crash')).toHaveLength(2);
    expect((await api(ws, 'GET', `/campaigns/${id}`)).json().status).toBe('sent');
  });

  it('two processes working one send deliver every message exactly once', async () => {
    const ws = await h().workspace();
    const n = 1_100;
    await knex().batchInsert(
      'contacts',
      Array.from({ length: n }, (_, i) => ({
        id: `00000000-0000-4000-8000-${String(i).padStart(12, '0')}`,
        workspace_id: ws.id,
        email: `bulk${i}@example.com`,
        email_key: `bulk${i}@example.com`,
        properties: JSON.stringify({ first_name: `B${i}` }),
        subscription_status: 'subscribed',
        source: 'test',
        created_at: Date.now(),
        updated_at: Date.now(),
      })),
      200,
    );
    const id = await campaign(ws);
    expect((await api(ws, 'POST', `/campaigns/${id}/send`)).json().recipients).toBe(n);
    const second = createServices(openDatabase(h().database.url), { email: emailOptionsOf(h().config) });
    try {
      const options = { onFailure: () => {}, pollMs: 20, concurrency: 2 };
      await Promise.all([runDueJobs(workerOptionsFor(h().services, options)), runDueJobs(workerOptionsFor(second, options))]);
    } finally {
      await second.close();
    }
    const rows = await knex()('messages').where({ campaign_id: id }).select('contact_id', 'status');
    expect(rows).toHaveLength(n);
    expect(new Set(rows.map((r) => r.contact_id)).size).toBe(n);
    expect(rows.every((r) => r.status === 'captured')).toBe(true);
    expect((await api(ws, 'GET', `/campaigns/${id}/report`)).json().sent).toBe(n);
  });

  it('preview renders for one contact without sending or storing anything', async () => {
    const ws = await h().workspace();
    const ann = await contact(ws, 'non_subscribed', { first_name: 'Ann' });
    const id = await campaign(ws, { html: '<p>Hi {{ contact.first_name }} from {{ workspace.name }}</p><a href="https://shop.test/">Shop</a>' });
    const reply = await api(ws, 'POST', `/campaigns/${id}/preview`, { contact_id: ann });
    expect(reply.statusCode).toBe(200);
    const preview = reply.json();
    expect(preview.subject).toBe('Hi Ann');
    expect(preview.html).toContain('Hi Ann from Test shop');
    // Links as written: a preview's message is never stored, so none of its links may redirect.
    expect(preview.html).toContain('<a href="https://shop.test/">Shop</a>');
    expect(preview.html).not.toMatch(/\/t\/[co]\//);
    expect(preview.text).toContain('Hi Ann from Test shop');
    expect(await knex()('messages').where({ workspace_id: ws.id })).toHaveLength(0);
    expect((await api(ws, 'GET', `/campaigns/${id}`)).json().status).toBe('draft');
    expect((await api(ws, 'POST', `/campaigns/${id}/preview`, { contact_id: 'nobody' })).statusCode).toBe(404);
    expect((await api(ws, 'POST', `/campaigns/${id}/preview`, {})).json().error).toMatch(/contact_id/);
  });

  it('GET /messages filters by contact and campaign and pages', async () => {
    const ws: TestWorkspace = await h().workspace();
    const a = await contact(ws, 'subscribed');
    await contact(ws, 'subscribed');
    const first = await campaign(ws);
    const second = await campaign(ws);
    await api(ws, 'POST', `/campaigns/${first}/send`);
    await api(ws, 'POST', `/campaigns/${second}/send`);
    await work();
    expect(await messagesOf(ws, `contact_id=${a}`)).toHaveLength(2);
    expect(await messagesOf(ws, `campaign_id=${first}`)).toHaveLength(2);
    expect(await messagesOf(ws, `contact_id=${a}&campaign_id=${second}`)).toHaveLength(1);
    const page = (await api(ws, 'GET', '/messages?perPage=3&page=2')).json();
    expect(page.meta).toEqual({ page: 2, perPage: 3, total: 4 });
    expect(page.data).toHaveLength(1);
    expect((await api(ws, 'GET', '/messages/unknown')).statusCode).toBe(404);
  });
});
