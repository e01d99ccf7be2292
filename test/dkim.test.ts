import type { AddressInfo } from 'node:net';
import { dkimVerify } from 'mailauth/lib/dkim/verify.js';
import { SMTPServer } from 'smtp-server';
import { afterAll, expect, it } from 'vitest';
import { loadConfig } from '../src/domain/config.js';
import { createSmtpTransport } from '../src/domain/delivery/smtp-transport.js';
import { describeEachDatabase, type TestWorkspace } from './helpers/harness.js';
import { sendingHelpers } from './helpers/sending.js';

/** A real SMTP server on a loopback port that keeps each message as it arrived (raw) with its MAIL FROM. */
async function startRawSmtpServer() {
  const arrived: Array<{ mailFrom: string; to: string[]; raw: Buffer }> = [];
  const server = new SMTPServer({
    authOptional: true,
    disabledCommands: ['STARTTLS'],
    logger: false,
    onData(stream, session, callback) {
      const chunks: Buffer[] = [];
      stream.on('data', (chunk: Buffer) => chunks.push(chunk));
      stream.on('end', () => {
        const { mailFrom, rcptTo } = session.envelope;
        arrived.push({ mailFrom: mailFrom ? mailFrom.address : '', to: rcptTo.map((r) => r.address), raw: Buffer.concat(chunks) });
        callback();
      });
    },
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const port = (server.server.address() as AddressInfo).port;
  return { url: `smtp://127.0.0.1:${port}`, arrived, close: () => new Promise<void>((resolve) => server.close(() => resolve())) };
}

/** What DNS would answer once the sender's records are published: TXT lookups of those names, nothing else. */
function resolverOf(records: Array<{ type: string; name: string; value: string }>) {
  return async (name: string, rrtype: string): Promise<string[][]> => {
    const found = records.filter((r) => rrtype === 'TXT' && r.type === 'TXT' && r.name === name.toLowerCase().replace(/\.$/, ''));
    if (found.length === 0) throw Object.assign(new Error(`${name} ${rrtype}: not found`), { code: 'ENOTFOUND' });
    // A DKIM key (~400 characters) is published as several strings of at most 255; the verifier joins them.
    return found.map((r) => r.value.match(/.{1,255}/g)!);
  };
}

interface DkimResult {
  signingDomain?: string;
  selector?: string;
  status: { result: string; comment?: string };
}
const verify = async (raw: Buffer, records: Array<{ type: string; name: string; value: string }>): Promise<DkimResult[]> =>
  ((await dkimVerify(raw, { resolver: resolverOf(records) })) as { results: DkimResult[] }).results;

const smtp = await startRawSmtpServer();
afterAll(() => smtp.close());
const RETURN_PATH = 'bounces@bounce.shop.test';

describeEachDatabase(
  'DKIM-signed mail and the envelope sender',
  (h) => {
    const { api, contact, campaign, work } = sendingHelpers(h);
    const arrivedFor = (to: string) => smtp.arrived.filter((a) => a.to.includes(to));

    /** One campaign from `from` to one new subscriber, sent over SMTP: the raw mail as the relay got it. */
    async function sendFrom(ws: TestWorkspace, from: string, html = '<p>Hello {{ contact.first_name }}</p><a href="https://brand.example/sale">Sale</a>') {
      const to = `reader-${Math.random().toString(36).slice(2)}@example.com`;
      await contact(ws, 'subscribed', { first_name: 'Reader' }, to);
      const id = await campaign(ws, { name: `From ${from} to ${to}`, from_email: from, html });
      expect((await api(ws, 'POST', `/campaigns/${id}/send`)).statusCode).toBeLessThan(300);
      await work();
      const [arrived] = arrivedFor(to);
      expect(arrived, `nothing arrived for ${to}`).toBeDefined();
      return arrived!;
    }

    it('mail from a sender domain with a key is signed (d= the sender domain) and verifies against the published record; a tampered body fails', async () => {
      const ws = await h().workspace();
      const added = await api(ws, 'POST', '/senders', { domain: 'brand.example' });
      expect(added.statusCode, added.body).toBe(201);
      const sender = added.json() as { dkim: { selector: string }; dns: Array<{ type: string; name: string; value: string }> };

      const exact = await sendFrom(ws, 'news@brand.example');
      const [signature] = await verify(exact.raw, sender.dns);
      expect(signature).toMatchObject({ signingDomain: 'brand.example', selector: sender.dkim.selector, status: { result: 'pass' } });
      // RFC 8058: one-click unsubscribe counts only when the signature covers both List-Unsubscribe headers.
      const signed = /^DKIM-Signature:[^]*?\bh=([^;]+);/im.exec(exact.raw.toString('utf8'))![1]!.replace(/\s+/g, '').toLowerCase().split(':');
      expect(signed).toEqual(expect.arrayContaining(['from', 'to', 'subject', 'date', 'message-id', 'list-unsubscribe', 'list-unsubscribe-post']));
      // Bounces go to the configured envelope sender, not to the From address.
      expect(exact.mailFrom).toBe(RETURN_PATH);

      // The body is covered: a changed word is a body hash mismatch (mailauth says `neutral`, as RFC 6376 § 6.1.3
      // leaves it), never `pass`. A changed header it signs fails the signature itself.
      const raw = exact.raw.toString('utf8');
      expect(raw).toContain('Hello Reader');
      const [tampered] = await verify(Buffer.from(raw.replace('Hello Reader', 'Hello Victim')), sender.dns);
      expect(tampered!.status).toMatchObject({ result: 'neutral', comment: 'body hash did not verify' });
      const [reSubjected] = await verify(Buffer.from(raw.replace(/^Subject: .*$/m, 'Subject: Your invoice')), sender.dns);
      expect(reSubjected!.status.result).toBe('fail');
      // Against another key (a record that is not the sender's), the signature does not verify either.
      const other = (await api(ws, 'POST', '/senders', { domain: 'other.example' })).json() as typeof sender;
      const wrongKey = sender.dns.map((r) => (r.name.includes('._domainkey.') ? { ...r, value: other.dns[0]!.value } : r));
      expect((await verify(exact.raw, wrongKey))[0]!.status.result).toBe('fail');

      // A From below the sender domain is signed by it (d=brand.example: DMARC's relaxed alignment).
      const below = await sendFrom(ws, 'offers@mail.brand.example');
      expect((await verify(below.raw, sender.dns))[0]).toMatchObject({ signingDomain: 'brand.example', status: { result: 'pass' } });
    });

    it('the nearest sender domain signs; mail from a domain without a key is unsigned; a removed sender stops signing', async () => {
      const ws = await h().workspace();
      const parent = (await api(ws, 'POST', '/senders', { domain: 'brand.example' })).json() as { id: string; dns: Array<{ type: string; name: string; value: string }> };
      const child = (await api(ws, 'POST', '/senders', { domain: 'mail.brand.example' })).json() as typeof parent & { dkim: { selector: string } };
      const nearest = await sendFrom(ws, 'news@mail.brand.example');
      expect((await verify(nearest.raw, child.dns))[0]).toMatchObject({ signingDomain: 'mail.brand.example', selector: child.dkim.selector, status: { result: 'pass' } });

      // shop.test is the workspace's own domain (its integration): a sender domain without a key.
      const unsigned = await sendFrom(ws, 'news@shop.test');
      expect(unsigned.raw.toString('utf8')).not.toMatch(/^DKIM-Signature:/im);
      expect((await verify(unsigned.raw, parent.dns))[0]!.status.result).toBe('none');
      expect(unsigned.mailFrom).toBe(RETURN_PATH);

      // Another workspace's key never signs this workspace's mail.
      const other = await h().workspace('Other shop');
      const theirs = await api(other, 'POST', '/senders', { domain: 'theirs.example' });
      expect(theirs.statusCode).toBe(201);
      expect(await h().services.senders.signingKeyFor(ws.id, 'news@theirs.example')).toBeNull();

      // A removed sender's key is forgotten at once in this process.
      expect((await api(ws, 'DELETE', `/senders/${parent.id}`)).statusCode).toBe(204);
      expect(await h().services.senders.signingKeyFor(ws.id, 'news@brand.example')).toBeNull();
      expect((await h().services.senders.signingKeyFor(ws.id, 'news@mail.brand.example'))?.domainName).toBe('mail.brand.example');
    });
  },
  { EMK_SMTP_URL: smtp.url, EMK_SMTP_RATE: '0', EMK_SMTP_RETURN_PATH: RETURN_PATH },
);

it('without EMK_SMTP_RETURN_PATH the envelope sender is the From address; a bad value names the variable', async () => {
  const transport = createSmtpTransport({ url: smtp.url, ratePerSecond: 0, maxConnections: 1 });
  try {
    const to = 'plain-envelope@example.com';
    const result = await transport.deliver({
      messageId: '0190aaaa-bbbb-7ccc-8ddd-eeeeeeeeeeee',
      from: { email: 'news@shop.test', name: null },
      to,
      subject: 'Hello',
      html: '<p>Hello</p>',
      text: null,
      listUnsubscribeUrl: null,
      messageIdDomain: 'emk.test',
    });
    expect(result).toEqual({ status: 'sent' });
    const arrived = smtp.arrived.find((a) => a.to.includes(to))!;
    expect(arrived.mailFrom).toBe('news@shop.test');
    expect(arrived.raw.toString('utf8')).not.toMatch(/^DKIM-Signature:/im);
  } finally {
    await transport.close();
  }
  expect(loadConfig({}).smtpReturnPath).toBeUndefined();
  expect(loadConfig({ EMK_SMTP_RETURN_PATH: 'bounces@mail.shop.example' }).smtpReturnPath).toBe('bounces@mail.shop.example');
  for (const value of ['', 'not an address', 'Bounces <b@shop.example>']) {
    expect(() => loadConfig({ EMK_SMTP_RETURN_PATH: value }), value).toThrow(/invalid configuration: EMK_SMTP_RETURN_PATH /);
  }
});
