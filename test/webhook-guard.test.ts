import { lookup } from 'node:dns/promises';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { callWebhook, signatureOf } from '../src/domain/flows/webhook-client.js';
import { classifyHost, isRefusedAddress, parseAllowHosts, webhookUrlProblem } from '../src/domain/flows/webhook-guard.js';

const none = new Set<string>();

describe('webhook guard (no server-side request forgery)', () => {
  it('refuses loopback, private, link-local, CGNAT, unspecified and reserved addresses in every spelling', () => {
    const refused = [
      '127.0.0.1', '127.1', '0x7f.1', '0x7f000001', '2130706433', '017700000001', '127.255.255.254',
      '0.0.0.0', '0', '10.1.2.3', '172.16.0.1', '172.31.255.255', '192.168.1.1', '169.254.169.254', '100.64.0.1', '100.127.255.255',
      '224.0.0.1', '255.255.255.255', '192.0.2.1',
      '::1', '[::1]', '::', '[::]', '0:0:0:0:0:0:0:1', 'fc00::1', 'fd12:3456::1', 'fe80::1', 'ff02::1',
      '::ffff:127.0.0.1', '[::ffff:127.0.0.1]', '::ffff:7f00:1', '[::ffff:169.254.169.254]', '::ffff:a9fe:a9fe', '::127.0.0.1',
      '64:ff9b::7f00:1', '2002:7f00:1::', '::ffff:0:10.0.0.1',
      'localhost', 'LOCALHOST', 'api.localhost', 'localhost.', 'not a host', '',
    ];
    for (const host of refused) expect(classifyHost(host, none), host).toBe('refused');
  });

  it('lets public addresses through and leaves names to the connect-time check', () => {
    for (const host of ['93.184.216.34', '8.8.8.8', '172.32.0.1', '100.128.0.1', '2606:4700::1111', '[2a00:1450::1]', '::ffff:8.8.8.8', '2002:808:808::']) {
      expect(classifyHost(host, none), host).toBe('allowed');
    }
    expect(classifyHost('hooks.example.com', none)).toBe('resolve');
    expect(isRefusedAddress('8.8.8.8')).toBe(false);
    expect(isRefusedAddress('::ffff:192.168.0.1')).toBe(true);
    expect(isRefusedAddress('garbage')).toBe(true);
  });

  it('EMK_WEBHOOK_ALLOW_HOSTS lists hosts normalised like URLs; a listed host passes, http:// only to one', () => {
    const allowed = parseAllowHosts(' 127.0.0.1, Hooks.Internal ,[::1],');
    expect([...allowed].sort()).toEqual(['127.0.0.1', '::1', 'hooks.internal']);
    expect(classifyHost('127.1', allowed)).toBe('allowed');
    expect(classifyHost('HOOKS.internal', allowed)).toBe('allowed');
    expect(webhookUrlProblem('http://127.0.0.1:9999/x', allowed)).toBeNull();
    expect(webhookUrlProblem('http://hooks.example.com/x', allowed)).toMatch(/https:\/\//);
    expect(webhookUrlProblem('https://hooks.example.com/x', none)).toBeNull();
    expect(webhookUrlProblem('ftp://hooks.example.com/x', none)).toMatch(/https:\/\//);
    expect(webhookUrlProblem('https://user:pw@hooks.example.com/', none)).toMatch(/user name/);
    expect(webhookUrlProblem('not a url', none)).toMatch(/absolute URL/);
    expect(webhookUrlProblem('https://169.254.169.254/latest/meta-data', none)).toMatch(/private/);
    expect(webhookUrlProblem('https://[::ffff:127.0.0.1]/', none)).toMatch(/private/);
    expect(webhookUrlProblem('https://0x7f.1/', none)).toMatch(/private/);
    expect(webhookUrlProblem('https://localhost/', none)).toMatch(/private/);
  });
});

describe('webhook calls', () => {
  const received: Array<{ url: string; body: string; signature: string | undefined; headers: http.IncomingHttpHeaders }> = [];
  let answer: (res: http.ServerResponse) => void = (res) => res.end('ok');
  const server = http.createServer((req, res) => {
    let body = '';
    req.on('data', (c) => (body += c));
    req.on('end', () => {
      received.push({ url: req.url ?? '', body, signature: req.headers['x-emk-signature'] as string | undefined, headers: req.headers });
      answer(res);
    });
  });
  let base = '';
  beforeAll(async () => {
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  });
  afterAll(() => new Promise<void>((resolve) => server.close(() => resolve())));
  const allowed = { allowHosts: new Set(['127.0.0.1']), timeoutMs: 300, retryBaseMs: 10 };
  const SIGNING = { secret: 's', idempotencyKey: 'k' };

  it('posts the body signed with HMAC-SHA256 of the body, with the idempotency key and the step’s headers (emk’s own win)', async () => {
    received.length = 0;
    const headers = { Authorization: 'Bearer partner-key', 'X-Emk-Signature': 'forged', 'X-Emk-Idempotency-Key': 'forged' };
    const result = await callWebhook(`${base}/hook`, '{"a":1}', { secret: 'sixteen-chars-secret', idempotencyKey: 'e-1:2', headers }, allowed);
    expect(result).toMatchObject({ statusCode: 200, error: null });
    expect(received).toEqual([{ url: '/hook', body: '{"a":1}', signature: signatureOf('{"a":1}', 'sixteen-chars-secret'), headers: expect.anything() }]);
    expect(received[0]!.headers).toMatchObject({ authorization: 'Bearer partner-key', 'x-emk-idempotency-key': 'e-1:2', 'content-type': 'application/json' });
    expect(signatureOf('{"a":1}', 'sixteen-chars-secret')).toMatch(/^sha256=[0-9a-f]{64}$/);
  });

  it('refuses a loopback address that is not listed, by literal and by a name that resolves to it, sending nothing', async () => {
    received.length = 0;
    const port = (server.address() as AddressInfo).port;
    const notListed = { ...allowed, allowHosts: new Set<string>() };
    expect((await callWebhook(`https://127.0.0.1:${port}/`, '{}', SIGNING, notListed)).error).toMatch(/private/);
    // `vm` resolves to 127.0.0.1 through /etc/hosts on this machine: the lookup at connect time refuses it.
    const resolved = await lookup('vm').catch(() => null);
    const byName = await callWebhook(`https://vm:${port}/`, '{}', SIGNING, notListed);
    expect(byName.statusCode).toBeNull();
    expect(byName.error).toMatch(resolved ? /^vm resolves to a loopback, private or reserved address \(127\.0\.0\.1\)/ : /ENOTFOUND|EAI_AGAIN/);
    // Listed, the same name is reached (over http://, which only listed hosts may use).
    if (resolved) expect((await callWebhook(`http://vm:${port}/named`, '{}', SIGNING, { ...allowed, allowHosts: new Set(['vm']) })).statusCode).toBe(200);
    // Only the listed call arrived.
    expect(received.every((r) => r.url === '/named')).toBe(true);
  });

  it('refuses redirects, reports errors with their status, and gives up after the timeout', async () => {
    answer = (res) => {
      res.writeHead(302, { location: 'http://169.254.169.254/' });
      res.end();
    };
    expect(await callWebhook(`${base}/r`, '{}', SIGNING, allowed)).toMatchObject({ statusCode: 302, error: 'redirect refused (HTTP 302)' });
    answer = (res) => {
      res.writeHead(503);
      res.end('x'.repeat(200_000));
    };
    expect(await callWebhook(`${base}/e`, '{}', SIGNING, allowed)).toMatchObject({ statusCode: 503, error: 'HTTP 503' });
    answer = () => {}; // never answers
    const slow = await callWebhook(`${base}/slow`, '{}', SIGNING, allowed);
    expect(slow.statusCode).toBeNull();
    expect(slow.error).toBe('timed out after 300 ms');
    expect(slow.durationMs).toBeGreaterThanOrEqual(290);
    answer = (res) => res.end('ok');
  });
});
