import type { AddressInfo } from 'node:net';
import { SMTPServer } from 'smtp-server';
import { afterAll, expect, it } from 'vitest';
import { emailFlag } from '../src/cli/options.js';
import { describeEachDatabase, type Harness, type TestWorkspace } from './helpers/harness.js';
import { sendingHelpers } from './helpers/sending.js';

/**
 * One address rule (docs/api/README.md#email-addresses): every entry takes only a bare mailbox, and a stored row
 * from before the rule is never handed to a relay.
 */

/** Forms a relay (nodemailer's address parser) reads as another address, or that are no mailbox at all. */
const HOSTILE = [
  'x<victim@example.org>',
  'a,victim@example.org',
  'victim@example.org;x',
  'Victim <victim@example.org>',
  '"victim"@example.org',
  'vic tim@example.org',
  'victim@exa\tmple.org',
  'victim@example',
  'victim@[127.0.0.1]',
  'victim@127.0.0.1',
  'vic..tim@example.org',
  '.victim@example.org',
  `${'v'.repeat(65)}@example.org`,
  `victim@${`${'d'.repeat(60)}.`.repeat(5)}org`,
  `vvictim@${`${'d'.repeat(60)}.`.repeat(4)}org`,
  'victim@exa_mple.org',
  'victim@-example.org',
];

/** Addresses that must pass, and the form they are stored in. */
const LEGITIMATE: Array<[string, string]> = [
  ['Jane.Doe+news@example.org', 'Jane.Doe+news@example.org'],
  ['jane@mail.sub.example.co.uk', 'jane@mail.sub.example.co.uk'],
  ['UPPER@EXAMPLE.ORG', 'UPPER@EXAMPLE.ORG'],
  ["o'brien_1-x@ex-ample.io", "o'brien_1-x@ex-ample.io"],
  ['info@bücher.example', 'info@xn--bcher-kva.example'],
  ['kontakt@例え.テスト', 'kontakt@xn--r8jz45g.xn--zckzah'],
  [`${'l'.repeat(64)}@example.org`, `${'l'.repeat(64)}@example.org`],
  [`victim@${`${'d'.repeat(60)}.`.repeat(4)}org`, `victim@${`${'d'.repeat(60)}.`.repeat(4)}org`],
];

type Outcome = { status: number; error: string };

/** Every way an address enters, each answering what it did with it: the status and the error naming the field. */
function entries(h: () => Harness) {
  const api = (ws: TestWorkspace, method: 'POST' | 'PATCH' | 'DELETE', url: string, json?: unknown) =>
    h().request({ method, url: `/api/v1${url}`, key: ws.apiKey, ...(json === undefined ? {} : { json }) });
  const answer = async (reply: Promise<{ statusCode: number; body: string }>): Promise<Outcome> => {
    const r = await reply;
    let error = '';
    try {
      error = String(JSON.parse(r.body).error ?? '');
    } catch {
      error = r.body;
    }
    return { status: r.statusCode, error };
  };
  /** A batch's first row error as the outcome (the batch itself answers 200). */
  const rowError = async (reply: Promise<{ statusCode: number; body: string }>): Promise<Outcome> => {
    const r = await reply;
    const errors = (JSON.parse(r.body).errors ?? []) as Array<{ error: string }>;
    return { status: r.statusCode === 200 && errors.length > 0 ? 400 : r.statusCode, error: errors[0]?.error ?? '' };
  };
  const table: Array<[string, RegExp, (ws: TestWorkspace, email: string) => Promise<Outcome>]> = [
    ['collect identify', /\bemail /, (ws, email) => answer(h().request({ method: 'POST', url: '/collect/identify', json: { site_id: ws.siteId, email } }))],
    ['collect event', /\bemail /, (ws, email) => answer(h().request({ method: 'POST', url: '/collect/event', json: { site_id: ws.siteId, event_name: 'joined', email } }))],
    ['contacts create', /\bemail /, (ws, email) => answer(api(ws, 'POST', '/contacts', { email, subscription_status: 'subscribed' }))],
    [
      'contacts import',
      /\bemail /,
      async (ws, email) => {
        const result = await h().services.contacts.importContacts(ws.id, [{ email, subscription_status: 'subscribed' }]);
        return { status: result.errors.length > 0 ? 400 : 200, error: result.errors[0]?.error ?? '' };
      },
    ],
    ['events batch', /\bemail /, (ws, email) => rowError(api(ws, 'POST', '/events/batch', { events: [{ email, event_name: 'joined' }] }))],
    ['segment identify', /traits\.email /, (ws, email) => answer(h().request({ method: 'POST', url: '/v1/identify', json: { writeKey: ws.siteId, userId: 'u-1', traits: { email } } }))],
    [
      'order sync',
      /\bemail /,
      (ws, email) =>
        rowError(
          api(ws, 'POST', '/ecommerce/sync-historical-orders', {
            orders: [{ email, external_id: 'o-1', order_number: '1', total_amount: 10, currency: 'USD', status: 'paid', ordered_at: '2026-05-01T10:00:00Z' }],
          }),
        ),
    ],
    [
      'shipment',
      /customer\.email /,
      (ws, email) =>
        answer(api(ws, 'POST', '/events/shipment', { tracking_number: '1Z', shipment_status: { slug: 'delivered' }, order: { origin_order_id: 'none' }, customer: { email } })),
    ],
    ['suppressions add', /emails\[0\] /, (ws, email) => answer(api(ws, 'POST', '/suppressions', { emails: [email] }))],
    ['suppressions lift', /\bemail /, (ws, email) => answer(api(ws, 'DELETE', `/suppressions/${encodeURIComponent(email)}`))],
    ['auth register', /\bemail /, (_ws, email) => answer(h().request({ method: 'POST', url: '/api/v1/auth/register', json: { email, password: 'correct horse battery', workspace_name: 'S' } }))],
    ['auth login', /\bemail /, (_ws, email) => answer(h().request({ method: 'POST', url: '/api/v1/auth/login', json: { email, password: 'correct horse battery' } }))],
    ['settings sender', /sender\.from_email /, (ws, email) => answer(api(ws, 'PATCH', '/settings', { sender: { from_email: email } }))],
    ['campaign sender', /from_email /, (ws, email) => answer(api(ws, 'POST', '/campaigns', { name: 'N', subject: 'S', html: '<p>x</p>', from_email: email }))],
    [
      'flow step sender',
      /from_email /,
      (ws, email) =>
        answer(api(ws, 'POST', '/flows', { name: 'F', status: 'draft', trigger: { type: 'event', event_name: 'joined' }, steps: [{ type: 'email', subject: 'S', html: 'x', from_email: email }] })),
    ],
    [
      'command line --email',
      /^--email /,
      async (_ws, email) => {
        try {
          emailFlag(email);
          return { status: 200, error: '' };
        } catch (error) {
          return { status: 400, error: (error as Error).message };
        }
      },
    ],
  ];
  return table;
}

describeEachDatabase(
  'one address rule at every entry',
  (h) => {
    const knex = () => h().services.db.knex;

    it.each(entries(() => h()).map(([name, field, call]) => ({ name, field, call })))(
      'refuses every hostile form at $name, naming the field, storing nothing',
      async ({ field, call }) => {
        const ws = await h().workspace();
        for (const email of HOSTILE) {
          const { status, error } = await call(ws, email);
          expect([email, status], error).toEqual([email, 400]);
          expect(error, email).toMatch(field);
        }
        // Nothing holds any of them: no contact, suppression, user, order owner, setting or template sender.
        for (const [table, column] of [
          ['contacts', 'email'],
          ['suppressions', 'email'],
          ['users', 'email'],
        ] as const) {
          const rows = await knex()(table).where(column, 'like', '%victim%').orWhere(column, 'like', '%vvvvvvvv%').select(column);
          expect(rows, table).toEqual([]);
        }
      },
    );

    it('the website webhook never refuses a body: a hostile address is no address (no contact, the order is not stored)', async () => {
      const ws = await h().workspace();
      for (const [i, email] of HOSTILE.entries()) {
        for (const event_type of ['customer_created', 'order_placed']) {
          const reply = await h().request({
            method: 'POST',
            url: `/ecom/website/${ws.integrationId}`,
            headers: { authorization: `Bearer ${ws.integrationKey}` },
            json: { event_type, external_id: `${event_type}-${i}`, email, order: { external_id: `o-${i}`, total_amount: 10, currency: 'USD' } },
          });
          expect(reply.statusCode, reply.body).toBe(200);
        }
      }
      expect(Number((await knex()('contacts').where({ workspace_id: ws.id }).count({ n: '*' }))[0]!.n)).toBe(0);
      expect(Number((await knex()('orders').where({ workspace_id: ws.id }).count({ n: '*' }))[0]!.n)).toBe(0);
    });

    it('takes the legitimate variety (plus-addressing, subdomains, case, IDN, 64-character local part) and stores its comparable form', async () => {
      const ws = await h().workspace();
      const api = sendingHelpers(h).api;
      for (const [given, stored] of LEGITIMATE) {
        const created = await api(ws, 'POST', '/contacts', { email: given });
        expect(created.statusCode, `${given}: ${created.body}`).toBe(201);
        expect(created.json().email).toBe(stored);
        const identified = await h().request({ method: 'POST', url: '/collect/identify', json: { site_id: ws.siteId, email: given.toLowerCase() } });
        expect(identified.statusCode, identified.body).toBe(200);
        expect(identified.json().contact_id).toBe(created.json().id);
        // Found by either spelling of its domain, in any case.
        const found = await api(ws, 'GET', `/contacts?email=${encodeURIComponent(given.toUpperCase())}`);
        expect(found.json().data.map((c: { id: string }) => c.id), given).toEqual([created.json().id]);
      }
      const sync = await api(ws, 'POST', '/ecommerce/sync-historical-orders', {
        orders: LEGITIMATE.map(([given], i) => ({ email: given, external_id: `o-${i}`, order_number: String(i), total_amount: 10, currency: 'USD', status: 'paid', ordered_at: '2026-05-01T10:00:00Z' })),
      });
      expect(sync.json()).toMatchObject({ inserted: LEGITIMATE.length, errors: [] });
      expect(Number((await knex()('contacts').where({ workspace_id: ws.id }).count({ n: '*' }))[0]!.n)).toBe(LEGITIMATE.length);
      // A sender at a Unicode domain, once the domain is one of the workspace's senders.
      expect((await api(ws, 'POST', '/senders', { domain: 'bücher.example' })).statusCode).toBe(201);
      const sender = await api(ws, 'PATCH', '/settings', { sender: { from_email: 'news@bücher.example' } });
      expect(sender.statusCode, sender.body).toBe(200);
      expect(sender.json().sender.from_email).toBe('news@xn--bcher-kva.example');
      const suppressed = await api(ws, 'POST', '/suppressions', { emails: LEGITIMATE.map(([given]) => given) });
      expect(suppressed.json()).toEqual({ suppressed: LEGITIMATE.length });
      // The Unicode spelling of a suppressed IDN address is the same suppression.
      expect((await api(ws, 'POST', '/suppressions', { emails: ['INFO@BÜCHER.example'] })).json()).toEqual({ suppressed: 0 });
    });
  },
  { EMK_REGISTRATION: 'open' },
);

/** A real SMTP server on a loopback port: the envelope recipients of what arrived. */
async function startSmtpServer() {
  const recipients: string[] = [];
  const server = new SMTPServer({
    authOptional: true,
    disabledCommands: ['STARTTLS'],
    logger: false,
    onData(stream, session, callback) {
      stream.resume();
      stream.on('end', () => {
        recipients.push(...session.envelope.rcptTo.map((r) => r.address));
        callback();
      });
    },
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const port = (server.server.address() as AddressInfo).port;
  return { url: `smtp://127.0.0.1:${port}`, recipients, close: () => new Promise<void>((resolve) => server.close(() => resolve())) };
}

const smtp = await startSmtpServer();
afterAll(() => smtp.close());

/** Stored rows that fail the rule (written before it): their message fails with `invalid address`, nothing leaves. */
function sendsNothingToBadRows(transport: 'capture' | 'smtp') {
  return (h: () => Harness) => {
    const { api, contact, campaign, work, messagesOf } = sendingHelpers(h);
    it(`a pre-existing bad row is failed at send with "invalid address", handed to nobody (${transport})`, async () => {
      const ws = await h().workspace();
      const tag = Math.random().toString(36).slice(2);
      const good = `good-${tag}@example.com`;
      const victim = `victim-${tag}@example.org`;
      await contact(ws, 'subscribed', {}, good);
      await api(ws, 'POST', '/suppressions', { emails: [victim] });
      const hostile = [`x<${victim}>`, `a,${victim}`, `${victim};x`, `Victim <${victim}>`];
      for (const [i, email] of hostile.entries()) {
        // As a row written before the rule holds it: inserted with SQL, past every entry.
        const id = await contact(ws, 'subscribed', {}, `placeholder${i}-${tag}@example.com`);
        await h().services.db.knex('contacts').where({ id }).update({ email, email_key: email.toLowerCase() });
      }
      const id = await campaign(ws);
      expect((await api(ws, 'POST', `/campaigns/${id}/send`)).statusCode).toBe(202);
      await work();

      const messages = await messagesOf(ws, `campaign_id=${id}`);
      const byTo = Object.fromEntries(messages.map((m) => [m.to, m]));
      // The barrier: the good address got its message.
      expect(byTo[good]).toMatchObject({ status: transport === 'smtp' ? 'sent' : 'captured' });
      for (const email of hostile) {
        expect(byTo[email], email).toMatchObject({ status: 'failed', error: 'invalid address', html: null, sent_at: null });
      }
      if (transport === 'smtp') {
        expect(smtp.recipients.filter((r) => r.includes(tag))).toEqual([good]);
      }
      expect((await api(ws, 'GET', `/campaigns/${id}/report`)).json()).toMatchObject({ failed: hostile.length });
    });
  };
}

describeEachDatabase('bad stored addresses at send time (capture)', sendsNothingToBadRows('capture'));
describeEachDatabase('bad stored addresses at send time (SMTP)', sendsNothingToBadRows('smtp'), { EMK_SMTP_URL: smtp.url, EMK_SMTP_RATE: '0' });
