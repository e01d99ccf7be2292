import type { AddressInfo } from 'node:net';
import { SMTPServer } from 'smtp-server';
import { afterAll, describe, expect, it } from 'vitest';
import { createDomainPacer, createPacedQueue, isTemporaryRefusal } from '../src/domain/delivery/domain-pacing.js';
import { describeEachDatabase, manualClock, type TestWorkspace } from './helpers/harness.js';
import { sendingHelpers } from './helpers/sending.js';

/**
 * The pace mailbox providers expect (issue 33, point 5; docs/email.md, Rates): `domain_rates` caps the mails a
 * minute per recipient domain, and a temporary refusal (421/450) from one domain slows that domain only.
 */

/**
 * A relay on a loopback port that notes the addresses it was offered (RCPT TO) by domain and answers a chosen code
 * to some domains. Addresses, not commands: nodemailer's pool offers a mail refused with a 421 on a reused
 * connection once more over a new one, within the one hand-over.
 */
async function startRelay() {
  const tried = new Map<string, Set<string>>();
  const arrived = new Map<string, number>();
  const refuse = new Map<string, number>();
  const domainOf = (address: string) => address.slice(address.lastIndexOf('@') + 1).toLowerCase();
  const server = new SMTPServer({
    authOptional: true,
    disabledCommands: ['STARTTLS'],
    logger: false,
    onRcptTo(address, _session, callback) {
      const domain = domainOf(address.address);
      tried.set(domain, (tried.get(domain) ?? new Set()).add(address.address));
      const code = refuse.get(domain);
      if (code === undefined) return callback();
      return callback(Object.assign(new Error('too many mails, slow down'), { responseCode: code }));
    },
    onData(stream, session, callback) {
      stream.resume();
      stream.on('end', () => {
        for (const rcpt of session.envelope.rcptTo) arrived.set(domainOf(rcpt.address), (arrived.get(domainOf(rcpt.address)) ?? 0) + 1);
        callback();
      });
    },
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `smtp://127.0.0.1:${(server.server.address() as AddressInfo).port}`,
    tried: (domain: string) => tried.get(domain)?.size ?? 0,
    arrived: (domain: string) => arrived.get(domain) ?? 0,
    refuse,
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}

const relay = await startRelay();
afterAll(() => relay.close());
/** EMK_SMTP_POOL of the suites: at most this many mails are in flight when a refusal comes back. */
const POOL = 2;

describe('the domain pacer (a hand-moved clock)', () => {
  it('allows N a minute per workspace and domain, and says when the next may go', () => {
    const clock = manualClock(1_000_000);
    const pacer = createDomainPacer(clock);
    expect([1, 2, 3].map(() => pacer.take('w1', 'gmail.com', 3))).toEqual([0, 0, 0]);
    expect(pacer.take('w1', 'gmail.com', 3)).toBe(60_000);
    // Another workspace, another domain, a domain without a rate: not held back.
    expect(pacer.take('w2', 'gmail.com', 3)).toBe(0);
    expect(pacer.take('w1', 'yahoo.com', 3)).toBe(0);
    expect(pacer.take('w1', 'other.example', undefined)).toBe(0);
    clock.advance(59_999);
    expect(pacer.take('w1', 'gmail.com', 3)).toBe(1);
    clock.advance(1);
    expect(pacer.take('w1', 'gmail.com', 3)).toBe(0);
  });

  it('a refusal pauses the domain a minute, halves its rate, and each calm minute after doubles it back', () => {
    const clock = manualClock(1_000_000);
    const pacer = createDomainPacer(clock);
    pacer.refused('gmail.com');
    pacer.refused('gmail.com'); // in flight when the first came: the same pause
    expect(pacer.take('w1', 'gmail.com', 8)).toBe(60_000);
    expect(pacer.take('w1', 'other.example', undefined)).toBe(0);
    clock.advance(60_000);
    expect(Array.from({ length: 5 }, () => pacer.take('w1', 'gmail.com', 8))).toEqual([0, 0, 0, 0, 60_000]);
    clock.advance(60_000);
    expect(Array.from({ length: 9 }, () => pacer.take('w1', 'gmail.com', 8)).filter((wait) => wait === 0)).toHaveLength(8);
    // A refusal right after a pause (before a calm minute): two minutes this time, then a quarter of the rate.
    const again = createDomainPacer(clock);
    again.refused('yahoo.com');
    clock.advance(60_000);
    again.refused('yahoo.com');
    expect(again.take('w1', 'yahoo.com', 8)).toBe(120_000);
    clock.advance(120_000);
    expect(Array.from({ length: 3 }, () => again.take('w1', 'yahoo.com', 8))).toEqual([0, 0, 60_000]);
  });

  it('a batch hands out the mails of domains with room first and sets aside those that would wait too long', async () => {
    const clock = manualClock(1_000_000);
    const pacer = createDomainPacer(clock);
    const queue = createPacedQueue(pacer, { workspaceId: 'w1', rates: { 'slow.example': 1 }, domainOf: (to: string) => to.split('@')[1]! });
    for (const to of ['a@slow.example', 'b@slow.example', 'c@fast.example', 'd@fast.example']) queue.add(to);
    const order: string[] = [];
    for (let to = await queue.next(); to; to = await queue.next()) order.push(to);
    expect(order).toEqual(['a@slow.example', 'c@fast.example', 'd@fast.example']);
    expect(queue.setAside).toEqual({ count: 1, afterMs: 60_000 });
  });

  it('421 and 450 slow a domain down; other 4xx replies and connection failures do not', () => {
    const refusal = (text: string) => isTemporaryRefusal(new Error(text));
    expect([refusal('421 4.7.0 [TSS04] try later'), refusal('450 4.2.1 receiving mail too quickly')]).toEqual([true, true]);
    expect([refusal('451 greylisted'), refusal('452 mailbox full'), refusal('ECONNREFUSED connect'), refusal('4210 x')]).toEqual([false, false, false, false]);
  });

  it('a short wait for a domain is waited out in the process', async () => {
    const waits = [20, 0];
    const pacer = { take: () => waits.shift() ?? 0, refused: () => {} };
    const queue = createPacedQueue(pacer, { workspaceId: 'w1', rates: {}, domainOf: () => 'gmail.com' });
    queue.add('a@gmail.com');
    expect(await queue.next()).toBe('a@gmail.com');
    expect(await queue.next()).toBeUndefined();
    expect(queue.setAside).toEqual({ count: 0, afterMs: null });
  });
});

describeEachDatabase(
  'recipient domain rates over SMTP',
  (h) => {
    const { api, contact, campaign, work, messagesOf } = sendingHelpers(h);
    const tag = () => Math.random().toString(36).slice(2, 8);
    /** A campaign to `count` subscribers at each domain, sent and worked until its jobs wait. */
    async function sendTo(ws: TestWorkspace, counts: Record<string, number>) {
      for (const [domain, count] of Object.entries(counts)) {
        for (let i = 0; i < count; i++) await contact(ws, 'subscribed', {}, `reader${i}@${domain}`);
      }
      const id = await campaign(ws);
      await api(ws, 'POST', `/campaigns/${id}/send`);
      await work();
      return id;
    }
    const statusesAt = async (ws: TestWorkspace, id: string, domain: string) =>
      (await messagesOf(ws, `campaign_id=${id}`)).filter((m) => m.to.endsWith(`@${domain}`)).map((m) => m.status);
    /** The batch job the pacing left waiting, run again once the test's clock has moved past its wait. */
    async function retryAfter(ms: number) {
      const job = await h().services.db.knex('jobs').where({ kind: 'campaign.batch' }).whereNull('failed_at').first();
      h().clock.advance(ms);
      await h().services.db.knex('jobs').where({ id: job.id }).update({ run_at: Date.now() - 1 });
      await work();
      return job;
    }

    it('domain_rates: stored per workspace, domains kept lower-case, null or {} clears, bad input is a 400 naming it', async () => {
      const ws = await h().workspace();
      const res = await api(ws, 'PATCH', '/settings', { domain_rates: { 'Gmail.com': 600, 'yahoo.com': 1 } });
      expect(res.statusCode, res.body).toBe(200);
      expect(res.json().domain_rates).toEqual({ 'gmail.com': 600, 'yahoo.com': 1 });
      await api(ws, 'PATCH', '/settings', { click_window_days: 4 });
      expect((await api(ws, 'GET', '/settings')).json().domain_rates).toEqual({ 'gmail.com': 600, 'yahoo.com': 1 });
      const row = await h().services.db.knex('workspaces').where({ id: ws.id }).first();
      expect(h().services.dialect.readJson(row.domain_rates)).toEqual({ 'gmail.com': 600, 'yahoo.com': 1 });
      await api(ws, 'PATCH', '/settings', { domain_rates: null });
      expect((await api(ws, 'GET', '/settings')).json().domain_rates).toEqual({});
      await api(ws, 'PATCH', '/settings', { domain_rates: { 'a.example': 5 } });
      await api(ws, 'PATCH', '/settings', { domain_rates: {} });
      expect((await api(ws, 'GET', '/settings')).json().domain_rates).toEqual({});
      for (const bad of [
        'gmail.com',
        ['gmail.com'],
        { 'gmail.com': 0 },
        { 'gmail.com': 1.5 },
        { 'gmail.com': '60' },
        { 'gmail.com': 1e9 },
        { com: 60 },
        { 'not a domain': 60 },
        { 'https://gmail.com/': 60 },
        { 'gmail.com:25': 60 },
        Object.fromEntries(Array.from({ length: 101 }, (_, i) => [`d${i}.example`, 1])),
      ]) {
        const refused = await api(ws, 'PATCH', '/settings', { domain_rates: bad });
        expect(refused.statusCode, JSON.stringify(bad)).toBe(400);
        expect(refused.json().error, JSON.stringify(bad)).toMatch(/^invalid request: domain_rates/);
      }
      expect((await api(ws, 'GET', '/settings')).json().domain_rates).toEqual({});
    });

    it('a domain with a rate of N a minute gets no more than N in the minute while another domain gets all its mail', async () => {
      const ws = await h().workspace();
      const slow = `slow-${tag()}.example`;
      const fast = `fast-${tag()}.example`;
      await api(ws, 'PATCH', '/settings', { domain_rates: { [slow]: 3 } });
      const id = await sendTo(ws, { [slow]: 7, [fast]: 6 });

      // The barrier: the batch ran to its end (every mail to the other domain is in) before the slow one is counted.
      expect(relay.arrived(fast)).toBe(6);
      expect(relay.tried(slow)).toBe(3);
      expect(relay.arrived(slow)).toBe(3);
      expect((await statusesAt(ws, id, slow)).sort()).toEqual(['sending', 'sending', 'sending', 'sending', 'sent', 'sent', 'sent']);
      const job = await h().services.db.knex('jobs').where({ kind: 'campaign.batch' }).whereNull('failed_at').first();
      expect(job.last_error).toMatch(/4 messages wait for their domain's rate/);
      // Waiting for a domain's rate is no failure: it uses none of the job's attempts, so a batch far above a low
      // rate is never given up.
      expect(Number(job.attempts)).toBe(0);

      // Within the same minute, the retry sends nothing more to that domain.
      await retryAfter(50_000);
      expect(relay.tried(slow)).toBe(3);
      expect(Number((await h().services.db.knex('jobs').where({ id: job.id }).first()).attempts)).toBe(0);
      // The next minute, three more; the one after, the last.
      await retryAfter(10_000);
      expect(relay.arrived(slow)).toBe(6);
      await retryAfter(60_000);
      expect(relay.arrived(slow)).toBe(7);
      expect(relay.arrived(fast)).toBe(6);

      expect((await api(ws, 'GET', `/campaigns/${id}`)).json().status).toBe('sent');
    });

    it('a 421 from one domain delays its remaining mail while the other domain gets all its mail', async () => {
      const ws = await h().workspace();
      const busy = `busy-${tag()}.example`;
      const other = `other-${tag()}.example`;
      relay.refuse.set(busy, 421);
      const id = await sendTo(ws, { [busy]: 10, [other]: 10 });

      expect(relay.arrived(other)).toBe(10);
      // Only the mails already in flight when the first refusal came were tried; the rest waited.
      expect(relay.tried(busy)).toBeGreaterThanOrEqual(1);
      expect(relay.tried(busy)).toBeLessThanOrEqual(POOL);
      expect(relay.arrived(busy)).toBe(0);
      expect(new Set(await statusesAt(ws, id, busy))).toEqual(new Set(['sending']));
      const triedBefore = relay.tried(busy);

      // The domain takes mail again, but its pause (a minute) is not over: nothing is tried.
      relay.refuse.delete(busy);
      const job = await retryAfter(30_000);
      expect(job.last_error).toMatch(/temporary delivery failure: 421/);
      expect(relay.tried(busy)).toBe(triedBefore);
      // After the pause, all of it.
      await retryAfter(30_000);
      expect(relay.arrived(busy)).toBe(10);
      expect(relay.arrived(other)).toBe(10);
      expect((await api(ws, 'GET', `/campaigns/${id}`)).json().status).toBe('sent');
    });
  },
  { EMK_SMTP_URL: relay.url, EMK_SMTP_RATE: '0', EMK_SMTP_POOL: String(POOL) },
);
