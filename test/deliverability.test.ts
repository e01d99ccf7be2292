import { randomUUID } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { expect, it } from 'vitest';
import { deliverabilityFlags } from '../src/domain/shared/send-report.js';
import { signTrackingToken } from '../src/domain/tracking/tracking-token.js';
import { runEmk } from './helpers/cli.js';
import { describeEachDatabase, type TestWorkspace } from './helpers/harness.js';
import { sendingHelpers } from './helpers/sending.js';

const POSTMARK_SECRET = 'pm-reports-password';
type Kind = 'delivery' | 'hard_bounce' | 'complaint';
const FIXTURE: Record<Kind, string> = { delivery: 'postmark-delivery', hard_bounce: 'postmark-bounce-hard', complaint: 'postmark-spam-complaint' };

/** Postmark's documented payload for one event about one message, as the relay posts it (Basic auth). */
function postmarkCall(kind: Kind, message: { id: string; to: string }) {
  const text = readFileSync(new URL(`../fixtures/relays/${FIXTURE[kind]}.json`, import.meta.url), 'utf8');
  const values: Record<string, string> = { EMAIL: message.to, MESSAGE_ID: message.id, MESSAGE_ID_HEADER: `<${message.id}@localhost>`, EVENT_ID: randomUUID() };
  return {
    payload: text.replace(/__([A-Z_]+)__/g, (whole, key: string) => values[key] ?? whole),
    headers: { 'content-type': 'application/json', authorization: `Basic ${Buffer.from(`emk:${POSTMARK_SECRET}`).toString('base64')}` },
  };
}

/** The unsubscribe link rendered into a message (consent links are not rewritten for tracking). */
const unsubscribeUrlOf = (html: string) => new URL(/href="([^"]*\/cp\/unsubscribe\/[^"]+)"/.exec(html)![1]!);

it('flags compare the exact counts with the thresholds: above is flagged, at or below is not', () => {
  const at = (sent: number, bounced: number, complained: number) => deliverabilityFlags({ sent, delivered: 0, bounced, complained, unsubscribed: 0 });
  expect(at(0, 0, 0)).toEqual([]);
  expect(at(50, 1, 0)).toEqual([]); // 2 % exactly
  expect(at(49, 1, 0)).toEqual(['bounce_rate']);
  expect(at(1000, 0, 3)).toEqual([]); // 0.3 % exactly
  expect(at(1000, 0, 4)).toEqual(['complaint_rate']);
  expect(at(10, 1, 1)).toEqual(['bounce_rate', 'complaint_rate']);
});

describeEachDatabase('deliverability in the reports', (h) => {
  const s = sendingHelpers(h);

  async function relay(ws: TestWorkspace) {
    const res = await s.api(ws, 'POST', '/relay-webhooks', { provider: 'postmark', secret: POSTMARK_SECRET });
    expect(res.statusCode, res.body).toBe(201);
    const path = new URL(res.json().url).pathname;
    return async (kind: Kind, message: Record<string, any>) => {
      const reply = await h().app.inject({ method: 'POST', url: path, ...postmarkCall(kind, { id: message.id, to: message.to }) });
      expect(reply.json(), `${kind}: ${reply.body}`).toEqual({ processed: 1 });
    };
  }

  async function contacts(ws: TestWorkspace, n: number): Promise<void> {
    for (let i = 0; i < n; i += 50) {
      await Promise.all(Array.from({ length: Math.min(50, n - i) }, () => s.contact(ws, 'subscribed', { first_name: 'Reader' })));
    }
  }

  async function sendCampaign(ws: TestWorkspace, name: string, html = '<p>Hello</p>') {
    const id = await s.campaign(ws, { name, html });
    expect((await s.api(ws, 'POST', `/campaigns/${id}/send`)).statusCode).toBeLessThan(300);
    await s.work();
    return { id, messages: await s.messagesOf(ws, `campaign_id=${id}`) };
  }

  it('a campaign report counts delivered, bounced, complained and unsubscribed (through its own links and by complaint) over sent', async () => {
    const ws = await h().workspace();
    const post = await relay(ws);
    await contacts(ws, 10);
    const { id, messages } = await sendCampaign(ws, 'Winter sale', '<p>Hello</p><p><a href="{{ unsubscribe_url }}">Unsubscribe</a></p>');
    expect(messages).toHaveLength(10);
    const before = (await s.api(ws, 'GET', `/campaigns/${id}/report`)).json();
    expect(before).toMatchObject({ sent: 10, failed: 0, delivered: 0, bounced: 0, complained: 0, unsubscribed: 0, delivery_rate: 0, bounce_rate: 0, complaint_rate: 0, unsubscribe_rate: 0 });

    // 0-5 delivered, 5 of them then complained about; 6 and 7 bounced; 8 unsubscribes through its link (twice:
    // counted once), 9 through the API (not through this campaign: not counted).
    for (const m of messages.slice(0, 6)) await post('delivery', m);
    await post('complaint', messages[5]!);
    await post('hard_bounce', messages[6]!);
    await post('hard_bounce', messages[7]!);
    const link = unsubscribeUrlOf(messages[8]!.html);
    for (let i = 0; i < 2; i++) expect((await h().app.inject({ method: 'POST', url: link.pathname })).statusCode).toBe(200);
    expect((await s.api(ws, 'PATCH', `/contacts/${messages[9]!.contact_id}`, { subscription_status: 'unsubscribed' })).statusCode).toBe(200);
    const history = (await s.api(ws, 'GET', `/contacts/${messages[8]!.contact_id}/consent`)).json().data;
    expect(history.map((c: { origin: string }) => c.origin)).toEqual(['create:api', 'unsubscribe_page']);

    const report = (await s.api(ws, 'GET', `/campaigns/${id}/report`)).json();
    expect(report).toEqual({
      ...before,
      delivered: 6,
      bounced: 2,
      complained: 1,
      unsubscribed: 2,
      delivery_rate: 0.6,
      bounce_rate: 0.2,
      complaint_rate: 0.1,
      unsubscribe_rate: 0.2,
    });
    // The existing fields keep their meaning: a message reported bounced or complained about was sent all the same.
    expect(report.sent).toBe(10);
  });

  it('a consent link made before links named their message still unsubscribes, and counts for no campaign', async () => {
    const ws = await h().workspace();
    await contacts(ws, 2);
    const { id, messages } = await sendCampaign(ws, 'Old links', '<a href="{{ unsubscribe_url }}">Unsubscribe</a>');
    const secret = (await h().services.identityTokens.secretOf(ws.id))!;
    const old = signTrackingToken(secret, { kind: 'consent', workspaceId: ws.id, subjectId: messages[0]!.contact_id, url: null });
    expect(unsubscribeUrlOf(messages[0]!.html).pathname).not.toBe(`/cp/unsubscribe/${old}`);
    expect((await h().app.inject({ method: 'POST', url: `/cp/unsubscribe/${old}` })).statusCode).toBe(200);
    expect((await s.api(ws, 'GET', `/contacts/${messages[0]!.contact_id}`)).json().subscription_status).toBe('unsubscribed');
    // A link whose message was changed is not ours: a 404 page that changes nothing.
    const current = unsubscribeUrlOf(messages[1]!.html).pathname.split('/').pop()!;
    const bytes = Buffer.from(current, 'base64url');
    bytes[bytes.length - 17] = bytes[bytes.length - 17]! ^ 1;
    expect((await h().app.inject({ method: 'POST', url: `/cp/unsubscribe/${bytes.toString('base64url')}` })).statusCode).toBe(404);
    expect((await s.api(ws, 'GET', `/contacts/${messages[1]!.contact_id}`)).json().subscription_status).toBe('subscribed');
    expect((await s.api(ws, 'GET', `/campaigns/${id}/report`)).json()).toMatchObject({ sent: 2, unsubscribed: 0, unsubscribe_rate: 0 });
  });

  it('a flow report counts its messages the same way', async () => {
    const ws = await h().workspace();
    const post = await relay(ws);
    const flow = await s.api(ws, 'POST', '/flows', {
      name: 'Welcome',
      status: 'live',
      trigger: { type: 'event', event_name: 'signed_up' },
      steps: [{ type: 'email', subject: 'Welcome', html: '<p>Hi</p><a href="{{ unsubscribe_url }}">Leave</a>' }],
    });
    expect(flow.statusCode, flow.body).toBe(201);
    const flowId = flow.json().id;
    for (let i = 0; i < 4; i++) {
      const contactId = await s.contact(ws, 'subscribed');
      const res = await s.api(ws, 'POST', '/events', { contact_id: contactId, event_name: 'signed_up' });
      expect(res.statusCode, res.body).toBeLessThan(300);
    }
    await s.work();
    const messages = await s.messagesOf(ws, `flow_id=${flowId}`);
    expect(messages).toHaveLength(4);
    await post('delivery', messages[0]!);
    await post('hard_bounce', messages[1]!);
    await post('complaint', messages[2]!);
    expect((await h().app.inject({ method: 'POST', url: unsubscribeUrlOf(messages[3]!.html).pathname })).statusCode).toBe(200);
    const report = (await s.api(ws, 'GET', `/flows/${flowId}/report`)).json();
    expect(report).toMatchObject({ sent: 4, delivered: 1, bounced: 1, complained: 1, unsubscribed: 2, delivery_rate: 0.25, bounce_rate: 0.25, complaint_rate: 0.25, unsubscribe_rate: 0.5 });
  });

  it('the deliverability report flags rates above the thresholds and not at or below them; the CLI prints the table and the JSON', async () => {
    const ws = await h().workspace();
    const post = await relay(ws);
    await contacts(ws, 400);
    // Both go to all 400 before any event (a complaint suppresses its address for later campaigns).
    const calm = await sendCampaign(ws, 'Calm');
    const loud = await sendCampaign(ws, 'Loud');
    expect([calm.messages.length, loud.messages.length]).toEqual([400, 400]);
    // Calm: 8 bounces (2 % exactly), 1 complaint (0.25 %). Loud: 9 bounces (2.25 %), 2 complaints (0.5 %).
    // A contact unsubscribes once: the complaints about Loud are from other contacts than Calm's complainer.
    for (const m of calm.messages.slice(0, 8)) await post('hard_bounce', m);
    await post('complaint', calm.messages[8]!);
    const others = loud.messages.filter((m) => m.contact_id !== calm.messages[8]!.contact_id);
    for (const m of others.slice(0, 9)) await post('hard_bounce', m);
    for (const m of others.slice(9, 11)) await post('complaint', m);

    const res = await s.api(ws, 'GET', '/reports/deliverability?days=7');
    expect(res.statusCode, res.body).toBe(200);
    const body = res.json();
    expect(body).toMatchObject({ days: 7, thresholds: { complaint_rate: 0.003, bounce_rate: 0.02 } });
    const row = (id: string) => body.data.find((r: { campaign_id?: string }) => r.campaign_id === id);
    expect(row(calm.id)).toEqual({
      campaign_id: calm.id,
      name: 'Calm',
      sent: 400,
      delivered: 0,
      bounced: 8,
      complained: 1,
      unsubscribed: 1,
      delivery_rate: 0,
      bounce_rate: 0.02,
      complaint_rate: 0.0025,
      unsubscribe_rate: 0.0025,
      flags: [],
    });
    expect(row(loud.id)).toMatchObject({ bounced: 9, complained: 2, unsubscribed: 2, bounce_rate: 0.0225, complaint_rate: 0.005, flags: ['bounce_rate', 'complaint_rate'] });
    expect(body.data).toHaveLength(2);

    // Bad input is a 400 naming the field; the default window is 30 days.
    for (const days of ['0', 'x', '2.5', '4000']) {
      const bad = await s.api(ws, 'GET', `/reports/deliverability?days=${days}`);
      expect(bad.statusCode, days).toBe(400);
      expect(bad.json().error, days).toMatch(/days/);
    }
    expect((await s.api(ws, 'GET', '/reports/deliverability')).json()).toMatchObject({ days: 30, data: body.data });

    const db = ['--workspace', ws.id, '--db', h().database.url];
    const json = await runEmk(['report', 'deliverability', '--days', '7', '--json', ...db]);
    expect(json.code, json.stderr).toBe(0);
    expect({ ...JSON.parse(json.stdout), since: body.since }).toEqual(body);
    const table = await runEmk(['report', 'deliverability', ...db]);
    expect(table.code, table.stderr).toBe(0);
    const lines = table.stdout.trimEnd().split('\n');
    expect(lines[0]).toMatch(/^!\s+source\s+name\s+sent\s+delivered\s+bounced\s+complained\s+unsubscribed\s+flags$/);
    expect(lines.find((l) => l.includes('Loud'))).toMatch(/^!\s+campaign\s+Loud\s+400\s+0 0\.00%\s+9 2\.25%\s+2 0\.50%\s+2 0\.50%\s+bounce_rate,complaint_rate$/);
    expect(lines.find((l) => l.includes('Calm'))).toMatch(/^\s+campaign\s+Calm\s+400\s+0 0\.00%\s+8 2\.00%\s+1 0\.25%\s+1 0\.25%$/);
    const bad = await runEmk(['report', 'deliverability', '--days', '0', ...db]);
    expect(bad.code).toBe(2);
    expect(bad.stderr).toMatch(/--days/);
  });
});
