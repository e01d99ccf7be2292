import { createPrivateKey, createPublicKey } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runEmk } from './helpers/cli.js';
import { describeEachDatabase, type Harness, type TestWorkspace } from './helpers/harness.js';
import { createTestDatabase, DIALECTS, type TestDatabase } from './helpers/test-databases.js';

interface SenderBody {
  id: string;
  domain: string;
  dkim: { selector: string; public_key: string };
  dns: Array<{ type: string; name: string; value: string }>;
}

/** The reply's shape and what it says: the DKIM key is RSA 2048, and the records publish it, SPF and DMARC. */
function expectSender(body: SenderBody, domain: string) {
  expect(Object.keys(body).sort()).toEqual(['dkim', 'dns', 'domain', 'id']);
  expect(body.domain).toBe(domain);
  expect(Object.keys(body.dkim).sort()).toEqual(['public_key', 'selector']);
  expect(body.dkim.selector).toMatch(/^[a-z0-9]{1,63}$/);
  const key = createPublicKey({ key: Buffer.from(body.dkim.public_key, 'base64'), format: 'der', type: 'spki' });
  expect(key.asymmetricKeyType).toBe('rsa');
  expect(key.asymmetricKeyDetails?.modulusLength).toBe(2048);
  expect(body.dns).toEqual([
    { type: 'TXT', name: `${body.dkim.selector}._domainkey.${domain}`, value: `v=DKIM1; k=rsa; p=${body.dkim.public_key}` },
    { type: 'TXT', name: domain, value: expect.stringMatching(/^v=spf1 .*~all$/) },
    { type: 'TXT', name: `_dmarc.${domain}`, value: expect.stringMatching(/^v=DMARC1; p=/) },
  ]);
}

const senders = (h: Harness, ws: TestWorkspace, method: string, url = '/api/v1/senders', json?: unknown) =>
  h.request({ method: method as 'GET', url, key: ws.apiKey, ...(json !== undefined ? { json } : {}) });

describeEachDatabase('senders: create, list, delete', (h) => {
  it('POST /senders makes an RSA 2048 DKIM key pair, keeps the private key, and answers the DNS records', async () => {
    const ws = await h().workspace();
    const res = await senders(h(), ws, 'POST', undefined, { domain: 'Mail.Brand.EXAMPLE' });
    expect(res.statusCode, res.body).toBe(201);
    const body = res.json() as SenderBody;
    expectSender(body, 'mail.brand.example');
    expect(res.body).not.toMatch(/PRIVATE/);
    // The private key is stored, and it is the pair of the published key.
    const row = await h().services.db.knex('senders').where({ id: body.id }).first();
    expect(row.workspace_id).toBe(ws.id);
    const derived = createPublicKey(createPrivateKey(row.dkim_private_key)).export({ type: 'spki', format: 'der' }).toString('base64');
    expect(derived).toBe(body.dkim.public_key);
    // An IDN is kept in its DNS form.
    const idn = await senders(h(), ws, 'POST', undefined, { domain: 'bücher.example' });
    expect(idn.statusCode, idn.body).toBe(201);
    expect(idn.json().domain).toBe('xn--bcher-kva.example');
  });

  it('bad domains are a 400 naming domain; the same domain twice is a 409', async () => {
    const ws = await h().workspace();
    const cases: Array<[unknown, string]> = [
      [{}, 'invalid request: domain is required'],
      [{ domain: 42 }, 'invalid request: domain must be a string (got number)'],
      ...['localhost', 'not a domain', 'a@b.example', '-x.example', 'x..example', `${'a'.repeat(64)}.example`].map(
        (domain): [unknown, string] => [{ domain }, 'invalid request: domain must be a domain such as mail.example.com'],
      ),
    ];
    for (const [json, error] of cases) {
      const res = await senders(h(), ws, 'POST', undefined, json);
      expect(res.statusCode, JSON.stringify(json)).toBe(400);
      expect(res.json().error).toBe(error);
    }
    expect((await senders(h(), ws, 'POST', undefined, { domain: 'twice.example' })).statusCode).toBe(201);
    const again = await senders(h(), ws, 'POST', undefined, { domain: 'TWICE.example' });
    expect(again.statusCode).toBe(409);
    expect(again.json().error).toBe('sender domain already added');
    expect(Number((await h().services.db.knex('senders').where({ workspace_id: ws.id }).count({ n: '*' }))[0]!.n)).toBe(1);
  });

  it('GET /senders lists the workspace’s own; DELETE removes one (404 for another workspace’s)', async () => {
    const ws = await h().workspace();
    const other = await h().workspace('Other');
    const a = (await senders(h(), ws, 'POST', undefined, { domain: 'a.example' })).json() as SenderBody;
    const b = (await senders(h(), ws, 'POST', undefined, { domain: 'b.example' })).json() as SenderBody;
    const theirs = (await senders(h(), other, 'POST', undefined, { domain: 'a.example' })).json() as SenderBody;

    const list = await senders(h(), ws, 'GET');
    expect(list.statusCode).toBe(200);
    expect(list.json()).toEqual({ data: [a, b], meta: { page: 1, perPage: 2, total: 2 } });

    const foreign = await senders(h(), ws, 'DELETE', `/api/v1/senders/${theirs.id}`);
    expect(foreign.statusCode).toBe(404);
    expect(foreign.json().error).toBe('not found');
    expect((await senders(h(), ws, 'DELETE', `/api/v1/senders/${a.id}`)).statusCode).toBe(204);
    expect((await senders(h(), ws, 'DELETE', `/api/v1/senders/${a.id}`)).statusCode).toBe(404);
    expect((await senders(h(), ws, 'GET')).json().data).toEqual([b]);
    expect((await senders(h(), other, 'GET')).json().data).toEqual([theirs]);
  });
});

describeEachDatabase('senders: from_email must be at a sender domain', (h) => {
  const campaign = (from_email: string) => ({ name: 'N', subject: 'S', html: '<p>x</p>', from_email });
  const flow = (from_email: string) => ({
    name: 'F',
    trigger: { type: 'event', event_name: 'x' },
    steps: [{ type: 'delay', minutes: 1 }, { type: 'email', subject: 'S', html: '<p>x</p>', from_email }],
  });
  const refused = (field: string) => new RegExp(`^invalid request: ${field.replace(/[.[\]]/g, '\\$&')} must be at one of the workspace's sender domains`);

  it('outside every sender domain: 400 naming from_email for campaigns (create and update), flow steps and settings', async () => {
    const ws = await h().workspace();
    const api = (method: string, url: string, json: unknown) => h().request({ method: method as 'POST', url: `/api/v1${url}`, key: ws.apiKey, json });
    for (const outside of ['victim@bank.example', 'x@evilshop.test', 'x@shop.test.evil.example']) {
      const created = await api('POST', '/campaigns', campaign(outside));
      expect(created.statusCode, created.body).toBe(400);
      expect(created.json().error).toMatch(refused('from_email'));
      expect(created.json().error).toContain('(shop.test)');

      const flowed = await api('POST', '/flows', flow(outside));
      expect(flowed.statusCode, flowed.body).toBe(400);
      expect(flowed.json().error).toMatch(refused('steps[1].from_email'));

      const settings = await api('PATCH', '/settings', { sender: { from_email: outside } });
      expect(settings.statusCode, settings.body).toBe(400);
      expect(settings.json().error).toMatch(refused('sender.from_email'));
    }
    const draft = await api('POST', '/campaigns', campaign('news@shop.test'));
    expect(draft.statusCode, draft.body).toBe(201);
    const patched = await api('PATCH', `/campaigns/${draft.json().id}`, { from_email: 'victim@bank.example' });
    expect(patched.statusCode).toBe(400);
    expect(patched.json().error).toMatch(refused('from_email'));
    const live = await api('POST', '/flows', flow('news@shop.test'));
    const flowPatched = await api('PATCH', `/flows/${live.json().id}`, flow('victim@bank.example'));
    expect(flowPatched.statusCode).toBe(400);
    expect(flowPatched.json().error).toMatch(refused('steps[1].from_email'));
    // Nothing refused was stored.
    expect((await api('GET', `/campaigns/${draft.json().id}`, undefined)).json().from_email).toBe('news@shop.test');
    expect((await h().services.settings.get(ws.id)).sender.from_email).toBeNull();
  });

  it("the workspace's own domain (emk init --domain) and its subdomains count from the start", async () => {
    const ws = await h().workspace();
    const api = (method: string, url: string, json: unknown) => h().request({ method: method as 'POST', url: `/api/v1${url}`, key: ws.apiKey, json });
    for (const inside of ['news@shop.test', 'News@SHOP.TEST', 'x@mail.shop.test']) {
      expect((await api('POST', '/campaigns', campaign(inside))).statusCode).toBe(201);
      expect((await api('POST', '/flows', flow(inside))).statusCode).toBe(201);
      expect((await api('PATCH', '/settings', { sender: { from_email: inside } })).statusCode).toBe(200);
    }
    // null clears the sender, as before.
    expect((await api('PATCH', '/settings', { sender: { from_email: null } })).statusCode).toBe(200);
  });

  it('a domain an owner adds is accepted while it is a sender, and refused again once removed', async () => {
    const ws = await h().workspace();
    const api = (method: string, url: string, json?: unknown) => h().request({ method: method as 'POST', url: `/api/v1${url}`, key: ws.apiKey, ...(json ? { json } : {}) });
    expect((await api('POST', '/campaigns', campaign('hi@brand.example'))).statusCode).toBe(400);
    const sender = await api('POST', '/senders', { domain: 'brand.example' });
    expect(sender.statusCode).toBe(201);
    expect((await api('POST', '/campaigns', campaign('hi@brand.example'))).statusCode).toBe(201);
    expect((await api('POST', '/flows', flow('hi@brand.example'))).statusCode).toBe(201);
    expect((await api('PATCH', '/settings', { sender: { from_email: 'hi@brand.example' } })).statusCode).toBe(200);
    // Another workspace's sender is not this one's.
    const other = await h().workspace('Other');
    const theirs = await h().request({ method: 'POST', url: '/api/v1/campaigns', key: other.apiKey, json: campaign('hi@brand.example') });
    expect(theirs.statusCode).toBe(400);

    expect((await api('DELETE', `/senders/${sender.json().id}`)).statusCode).toBe(204);
    const after = await api('POST', '/campaigns', campaign('hi@brand.example'));
    expect(after.statusCode).toBe(400);
    expect(after.json().error).toMatch(refused('from_email'));
  });

  it('a workspace with no active integration (as a registered one) refuses every from_email until an owner adds a sender', async () => {
    const ws = await h().workspace();
    await h().request({ method: 'PATCH', url: `/api/v1/integrations/${ws.integrationId}`, key: ws.apiKey, json: { active: false } });
    const res = await h().request({ method: 'POST', url: '/api/v1/campaigns', key: ws.apiKey, json: campaign('news@shop.test') });
    expect(res.statusCode).toBe(400);
    expect(res.json().error).toMatch(/sender domains \(it has none yet\)/);
    // Without a from_email the message goes from the operator's default sender, as before.
    const plain = await h().request({ method: 'POST', url: '/api/v1/campaigns', key: ws.apiKey, json: { name: 'N', subject: 'S', html: 'x' } });
    expect(plain.statusCode).toBe(201);
  });
});

for (const dialect of DIALECTS) {
  describe(`emk senders add [${dialect}]`, () => {
    let database: TestDatabase;
    beforeAll(async () => {
      database = await createTestDatabase(dialect);
      const init = await runEmk(['init', '--db', database.url, '--json', '--name', 'Cli shop', '--domain', 'cli-shop.test']);
      expect(init.code, init.stderr).toBe(0);
    });
    afterAll(() => database.drop());
    const emk = (args: string[]) => runEmk([...args, '--db', database.url]);

    it('--json prints the 201 body of POST /senders; the human form lists the DNS records; a bad domain exits 1 naming it', async () => {
      const result = await emk(['senders', 'add', '--domain', 'news.cli-brand.example', '--json']);
      expect(result.code, result.stderr).toBe(0);
      expectSender(JSON.parse(result.stdout), 'news.cli-brand.example');
      const human = await emk(['senders', 'add', '--domain', 'other.example']);
      expect(human.code, human.stderr).toBe(0);
      expect(human.stdout).toMatch(/^ {2}TXT {2}emk[a-z0-9]+\._domainkey\.other\.example {2}"v=DKIM1; k=rsa; p=/m);
      const list = JSON.parse((await emk(['senders', 'list', '--json'])).stdout);
      expect(list.data.map((s: SenderBody) => s.domain)).toEqual(['news.cli-brand.example', 'other.example']);
      const bad = await emk(['senders', 'add', '--domain', 'nope', '--json']);
      expect(bad.code).not.toBe(0);
      expect(bad.stdout).toBe('');
      expect(bad.stderr.trim()).toBe('emk: invalid request: domain must be a domain such as mail.example.com');
    });
  });
}
