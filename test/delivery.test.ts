import type { AddressInfo } from 'node:net';
import { simpleParser, type ParsedMail } from 'mailparser';
import { SMTPServer } from 'smtp-server';
import { afterAll, expect, it } from 'vitest';
import { loadConfig } from '../src/domain/config.js';
import { createSmtpTransport } from '../src/domain/delivery/smtp-transport.js';
import { TemporaryDeliveryError, type OutgoingMail } from '../src/domain/delivery/mail.js';
import { describeEachDatabase, type TestWorkspace } from './helpers/harness.js';
import { sendingHelpers } from './helpers/sending.js';

/** A header as it arrived (mailparser folds the List-* headers into one object). */
const rawHeader = (mail: ParsedMail, name: string) =>
  mail.headerLines.find((h) => h.key === name)?.line.slice(name.length + 1).trim();

/** A real SMTP server on a loopback port: what arrived, and per-address answers to RCPT TO. */
async function startSmtpServer(options: { auth?: { user: string; pass: string } } = {}) {
  const arrived: Array<{ mail: ParsedMail; at: number }> = [];
  const answers = new Map<string, number>();
  const server = new SMTPServer({
    authOptional: !options.auth,
    disabledCommands: ['STARTTLS'],
    logger: false,
    onAuth(auth, _session, callback) {
      if (options.auth && auth.username === options.auth.user && auth.password === options.auth.pass) return callback(null, { user: auth.username });
      return callback(new Error('Invalid username or password'));
    },
    onMailFrom(address, _session, callback) {
      if (address.address === 'refused-sender@shop.test') {
        const error = new Error('sender not allowed') as Error & { responseCode: number };
        error.responseCode = 550;
        return callback(error);
      }
      return callback();
    },
    onRcptTo(address, _session, callback) {
      const code = answers.get(address.address.toLowerCase());
      if (code === undefined) return callback();
      const error = new Error(code >= 500 ? 'mailbox unavailable' : 'try again later') as Error & { responseCode: number };
      error.responseCode = code;
      return callback(error);
    },
    onData(stream, _session, callback) {
      simpleParser(stream).then((mail) => {
        arrived.push({ mail, at: Date.now() });
        callback();
      }, callback);
    },
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const port = (server.server.address() as AddressInfo).port;
  const credentials = options.auth ? `${options.auth.user}:${options.auth.pass}@` : '';
  return { url: `smtp://${credentials}127.0.0.1:${port}`, arrived, answers, close: () => new Promise<void>((resolve) => server.close(() => resolve())) };
}

const smtp = await startSmtpServer();
afterAll(() => smtp.close());

const mail = (overrides: Partial<OutgoingMail> = {}): OutgoingMail => ({
  messageId: '0190aaaa-bbbb-7ccc-8ddd-eeeeeeeeeeee',
  from: { email: 'shop@shop.test', name: 'The Shop' },
  to: 'reader@example.com',
  subject: 'Hello',
  html: '<p>Hello <a href="https://shop.test/x">the sale</a></p>',
  text: null,
  listUnsubscribeUrl: 'https://emk.test/cp/unsubscribe/abc',
  messageIdDomain: 'emk.test',
  ...overrides,
});

it('the SMTP transport: headers, text part, same Message-ID on a second hand-over, RFC 8058 only for marketing', async () => {
  const transport = createSmtpTransport({ url: smtp.url, ratePerSecond: 0, maxConnections: 2 });
  try {
    const before = smtp.arrived.length;
    expect(await transport.deliver(mail())).toEqual({ status: 'sent' });
    expect(await transport.deliver(mail())).toEqual({ status: 'sent' });
    expect(await transport.deliver(mail({ messageId: '0190aaaa-bbbb-7ccc-8ddd-ffffffffffff', listUnsubscribeUrl: null, text: 'Plain' }))).toEqual({ status: 'sent' });
    const [first, again, transactional] = smtp.arrived.slice(before).map((a) => a.mail);
    expect(first!.messageId).toBe('<0190aaaa-bbbb-7ccc-8ddd-eeeeeeeeeeee@emk.test>');
    expect(again!.messageId).toBe(first!.messageId);
    expect(first!.from?.value[0]).toEqual({ address: 'shop@shop.test', name: 'The Shop' });
    expect(first!.subject).toBe('Hello');
    expect(first!.html).toContain('<a href="https://shop.test/x">the sale</a>');
    expect(first!.text).toContain('the sale [https://shop.test/x]');
    expect(rawHeader(first!, 'list-unsubscribe')).toBe('<https://emk.test/cp/unsubscribe/abc>');
    expect(rawHeader(first!, 'list-unsubscribe-post')).toBe('List-Unsubscribe=One-Click');
    // Postmark's metadata and SendGrid's unique argument: where those relays echo the id in their webhooks.
    expect(rawHeader(first!, 'x-pm-metadata-emk_message_id')).toBe('0190aaaa-bbbb-7ccc-8ddd-eeeeeeeeeeee');
    expect(JSON.parse(rawHeader(first!, 'x-smtpapi')!)).toEqual({ unique_args: { emk_message_id: '0190aaaa-bbbb-7ccc-8ddd-eeeeeeeeeeee' } });
    expect(rawHeader(transactional!, 'list-unsubscribe')).toBeUndefined();
    expect(rawHeader(transactional!, 'list-unsubscribe-post')).toBeUndefined();
    expect(transactional!.text?.trim()).toBe('Plain');
  } finally {
    await transport.close();
  }
});

it('a 5xx to RCPT TO is a permanent failure; a 4xx, a 5xx to MAIL FROM and a refused connection are temporary', async () => {
  const transport = createSmtpTransport({ url: smtp.url, ratePerSecond: 0, maxConnections: 1 });
  smtp.answers.set('gone@example.com', 550);
  smtp.answers.set('busy@example.com', 451);
  try {
    const gone = await transport.deliver(mail({ to: 'gone@example.com' }));
    expect(gone).toMatchObject({ status: 'failed', permanent: true });
    expect((gone as { error: string }).error).toMatch(/^550 /);
    await expect(transport.deliver(mail({ to: 'busy@example.com' }))).rejects.toBeInstanceOf(TemporaryDeliveryError);
    // A 5xx about our sender (or our login) is not the recipient's fault: retried, never a hard bounce.
    await expect(transport.deliver(mail({ from: { email: 'refused-sender@shop.test', name: null } }))).rejects.toBeInstanceOf(TemporaryDeliveryError);
  } finally {
    await transport.close();
  }
  const closed = createSmtpTransport({ url: 'smtp://127.0.0.1:1', ratePerSecond: 0, maxConnections: 1 });
  try {
    await expect(closed.deliver(mail())).rejects.toBeInstanceOf(TemporaryDeliveryError);
  } finally {
    await closed.close();
  }
});

it('the send rate caps messages per second; credentials in the URL authenticate', async () => {
  const guarded = await startSmtpServer({ auth: { user: 'emk', pass: 's3cret' } });
  const transport = createSmtpTransport({ url: guarded.url, ratePerSecond: 5, maxConnections: 1 });
  try {
    const started = Date.now();
    await Promise.all(Array.from({ length: 10 }, (_, i) => transport.deliver(mail({ messageId: `0190aaaa-bbbb-7ccc-8ddd-${String(i).padStart(12, '0')}` }))));
    expect(guarded.arrived).toHaveLength(10);
    const times = guarded.arrived.map((a) => a.at).sort((a, b) => a - b);
    // Five a second: the sixth leaves a second after the first did, which was no earlier than the start (measured
    // from the start, not from the first arrival, which a slow connection setup delays; a timer may fire a few ms
    // before the wall clock says the second is over).
    expect(times[5]! - started).toBeGreaterThanOrEqual(990);
  } finally {
    await transport.close();
  }
  const guardedUrlWithWrongPassword = guarded.url.replace('emk:s3cret@', 'emk:wrong@');
  const wrong = createSmtpTransport({ url: guardedUrlWithWrongPassword, ratePerSecond: 0, maxConnections: 1 });
  try {
    // A wrong password (535 to AUTH) is our configuration's fault: temporary, and nothing arrives.
    await expect(wrong.deliver(mail())).rejects.toBeInstanceOf(TemporaryDeliveryError);
    expect(guarded.arrived).toHaveLength(10);
  } finally {
    await wrong.close();
    await guarded.close();
  }
});

it('configuration: EMK_SMTP_URL scheme, rate and pool bounds', () => {
  expect(loadConfig({})).toMatchObject({ smtpUrl: undefined, smtpRatePerSecond: 10, smtpMaxConnections: 5 });
  expect(loadConfig({ EMK_SMTP_URL: 'smtps://u:p@relay.test:465', EMK_SMTP_RATE: '0', EMK_SMTP_POOL: '2' })).toMatchObject({ smtpRatePerSecond: 0, smtpMaxConnections: 2 });
  expect(() => loadConfig({ EMK_SMTP_URL: 'http://relay.test' })).toThrow(/EMK_SMTP_URL must be smtp:\/\//);
  expect(() => loadConfig({ EMK_SMTP_POOL: '0' })).toThrow(/EMK_SMTP_POOL/);
  expect(() => loadConfig({ EMK_SMTP_RATE: '-1' })).toThrow(/EMK_SMTP_RATE/);
});

describeEachDatabase(
  'campaign delivery over SMTP',
  (h) => {
    const { api, contact, campaign, work, messagesOf } = sendingHelpers(h);
    const arrivedFor = (to: string) => smtp.arrived.filter((a) => a.mail.to && 'value' in a.mail.to && a.mail.to.value[0]?.address === to);

    it('messages go out with the sender from settings; a 5xx fails the message and suppresses the address; a 4xx is retried', async () => {
      const ws: TestWorkspace = await h().workspace();
      await api(ws, 'PATCH', '/settings', { sender: { from_email: 'news@shop.test', from_name: 'Shop News' } });
      const tag = Math.random().toString(36).slice(2);
      const ok = `ok-${tag}@example.com`;
      const gone = `gone-${tag}@example.com`;
      const busy = `busy-${tag}@example.com`;
      for (const email of [ok, gone, busy]) await contact(ws, 'subscribed', { first_name: 'Reader' }, email);
      smtp.answers.set(gone, 550);
      smtp.answers.set(busy, 451);
      const id = await campaign(ws, { subject: 'Hi {{ contact.first_name }}', html: '<p>Hi</p><a href="https://shop.test/">Shop</a>' });
      await api(ws, 'POST', `/campaigns/${id}/send`);
      await work();

      const [arrived] = arrivedFor(ok);
      expect(arrived!.mail.subject).toBe('Hi Reader');
      expect(arrived!.mail.from?.value[0]).toEqual({ address: 'news@shop.test', name: 'Shop News' });
      expect(rawHeader(arrived!.mail, 'list-unsubscribe-post')).toBe('List-Unsubscribe=One-Click');
      expect(rawHeader(arrived!.mail, 'list-unsubscribe')).toMatch(/^<http:\/\/localhost:\d+\/cp\/unsubscribe\/[A-Za-z0-9_-]+>$/);
      const byTo = Object.fromEntries((await messagesOf(ws, `campaign_id=${id}`)).map((m) => [m.to, m]));
      expect(arrived!.mail.messageId).toBe(`<${byTo[ok]!.id}@localhost>`);
      expect(arrived!.mail.html).toContain('/t/c/');
      expect(byTo[ok]).toMatchObject({ status: 'sent' });
      expect(byTo[gone]).toMatchObject({ status: 'failed' });
      expect(byTo[gone]!.error).toMatch(/^550 /);
      expect((await api(ws, 'GET', '/suppressions')).json().data).toEqual([expect.objectContaining({ email: gone, reason: 'hard_bounce' })]);
      expect(byTo[busy]).toMatchObject({ status: 'sending' });
      expect((await api(ws, 'GET', `/campaigns/${id}`)).json().status).toBe('sending');
      const job = await h().services.db.knex('jobs').where({ kind: 'campaign.batch' }).whereNull('failed_at').first();
      expect(job.last_error).toMatch(/temporary delivery failure/);

      // The relay takes it now: the retry sends only that message, the same mail (same Message-ID).
      smtp.answers.delete(busy);
      await h().services.db.knex('jobs').where({ id: job.id }).update({ run_at: Date.now() - 1 });
      await work();
      expect(arrivedFor(ok)).toHaveLength(1);
      expect(arrivedFor(busy)).toHaveLength(1);
      expect(arrivedFor(busy)[0]!.mail.messageId).toBe(`<${byTo[busy]!.id}@localhost>`);
      expect((await api(ws, 'GET', `/messages/${byTo[busy]!.id}`)).json().status).toBe('sent');
      expect((await api(ws, 'GET', `/campaigns/${id}`)).json().status).toBe('sent');
      expect((await api(ws, 'GET', `/campaigns/${id}/report`)).json()).toMatchObject({ sent: 2, failed: 1 });
    });
  },
  { EMK_SMTP_URL: smtp.url, EMK_SMTP_RATE: '0' },
);
