import { beforeAll, expect, it } from 'vitest';
import { runEmk } from './helpers/cli.js';
import { describeEachDatabase, type TestWorkspace } from './helpers/harness.js';
import { sendingHelpers } from './helpers/sending.js';

describeEachDatabase('emk campaigns|flows|segments|messages|contacts list and show', (h) => {
  const sending = sendingHelpers(h);
  let shop: TestWorkspace;
  let other: TestWorkspace;
  let sent: Awaited<ReturnType<typeof sending.sentMessage>>;
  let flowId: string;
  let segmentId: string;

  const emk = (args: string[], env: Record<string, string> = {}) => runEmk([...args, '--db', h().database.url], env);
  const json = async (args: string[]) => {
    const result = await emk([...args, '--json']);
    expect(result.code, result.stderr).toBe(0);
    return JSON.parse(result.stdout);
  };
  const apiGet = async (url: string) => {
    const reply = await sending.api(shop, 'GET', url);
    expect(reply.statusCode, reply.body).toBe(200);
    return reply.json();
  };

  beforeAll(async () => {
    shop = await h().workspace('Lists shop');
    // A second workspace, so `--workspace` must be said and the lists must not mix them.
    other = await h().workspace('Other shop');
    await sending.contact(other, 'subscribed');
    sent = await sending.sentMessage(shop, '<p>Hello</p>');
    for (let i = 0; i < 3; i++) await sending.contact(shop, 'subscribed');
    const flow = await sending.api(shop, 'POST', '/flows', { name: 'Welcome', trigger: { type: 'event', event_name: 'signed_up' }, steps: [] });
    expect(flow.statusCode, flow.body).toBe(201);
    flowId = flow.json().id;
    const segment = await sending.api(shop, 'POST', '/segments', { name: 'Subscribers', conditions: { all: [{ subscription_status: 'subscribed' }] } });
    expect(segment.statusCode, segment.body).toBe(201);
    segmentId = segment.json().id;
  });

  it('each list and show in --json is the API answer for the same workspace, pages included', async () => {
    const ws = ['--workspace', shop.id];
    expect(await json(['campaigns', 'list', ...ws])).toEqual(await apiGet('/campaigns'));
    expect(await json(['campaigns', 'show', sent.campaignId, ...ws])).toEqual(await apiGet(`/campaigns/${sent.campaignId}`));
    expect(await json(['flows', 'list', ...ws])).toEqual(await apiGet('/flows'));
    expect(await json(['flows', 'show', flowId, ...ws])).toEqual(await apiGet(`/flows/${flowId}`));
    expect(await json(['segments', 'list', ...ws])).toEqual(await apiGet('/segments'));
    expect(await json(['segments', 'show', segmentId, ...ws])).toEqual(await apiGet(`/segments/${segmentId}`));
    expect(await json(['contacts', 'show', sent.contactId, ...ws])).toEqual(await apiGet(`/contacts/${sent.contactId}`));

    const contacts = await json(['contacts', 'list', '--page', '2', '--per-page', '3', ...ws]);
    expect(contacts).toEqual(await apiGet('/contacts?page=2&perPage=3'));
    expect(contacts.meta).toEqual({ page: 2, perPage: 3, total: 4 });
    expect(contacts.data).toHaveLength(1);
    expect(await json(['contacts', 'list', '--email', sent.email.toUpperCase(), ...ws])).toEqual(await apiGet(`/contacts?email=${encodeURIComponent(sent.email)}`));

    const messages = await json(['messages', 'list', '--campaign', sent.campaignId, '--contact', sent.contactId, ...ws]);
    expect(messages).toEqual(await apiGet(`/messages?campaign_id=${sent.campaignId}&contact_id=${sent.contactId}`));
    expect(messages.data.map((m: { id: string }) => m.id)).toEqual([sent.message.id]);
    expect(await json(['messages', 'list', ...ws])).toEqual(await apiGet('/messages'));
    expect((await json(['messages', 'list', '--flow', flowId, ...ws])).data).toEqual([]);
  });

  it('a person gets a table with the rows and the count', async () => {
    const ws = ['--workspace', shop.id];
    const campaigns = await emk(['campaigns', 'list', ...ws]);
    expect(campaigns.code, campaigns.stderr).toBe(0);
    expect(campaigns.stdout).toMatch(/^id +name +status +recipients +sent at\n/);
    expect(campaigns.stdout).toMatch(new RegExp(`^${sent.campaignId} +Campaign ${sent.email.replace(/\./g, '\\.')} +sent +1 +\\S+$`, 'm'));
    expect(campaigns.stdout).toMatch(/^1–1 of 1$/m);
    const segments = await emk(['segments', 'list', ...ws]);
    expect(segments.stdout).toMatch(new RegExp(`^${segmentId} +Subscribers +4$`, 'm'));
    const flows = await emk(['flows', 'list', ...ws]);
    expect(flows.stdout).toMatch(new RegExp(`^${flowId} +Welcome +\\w+ +event +0$`, 'm'));
    const contacts = await emk(['contacts', 'list', ...ws]);
    expect(contacts.stdout).toContain(sent.email);
    expect(contacts.stdout).toMatch(/^1–4 of 4$/m);
    const messages = await emk(['messages', 'list', '--campaign', sent.campaignId, ...ws]);
    expect(messages.stdout).toMatch(new RegExp(`^${sent.message.id} +${sent.email.replace(/\./g, '\\.')} `, 'm'));
    const show = await emk(['contacts', 'show', sent.contactId, ...ws]);
    expect(show.stdout).toMatch(new RegExp(`^email +${sent.email.replace(/\./g, '\\.')}$`, 'm'));
    expect((await emk(['flows', 'list', '--flow-nope', ...ws])).code).toBe(2);
  });

  it('show of an unknown id exits 1 naming it; a bad page is a usage error naming the flag', async () => {
    for (const noun of ['campaign', 'flow', 'segment', 'contact']) {
      const result = await emk([`${noun}s`, 'show', 'no-such-id', '--workspace', shop.id]);
      expect(result.code, result.stderr).toBe(1);
      expect(result.stdout).toBe('');
      expect(result.stderr).toBe(`emk: ${noun} no-such-id not found\n`);
    }
    // Another workspace's record is not found either.
    expect((await emk(['campaigns', 'show', sent.campaignId, '--workspace', other.id])).stderr).toBe(`emk: campaign ${sent.campaignId} not found\n`);
    const page = await emk(['campaigns', 'list', '--page', '0', '--workspace', shop.id]);
    expect(page.code).toBe(2);
    expect(page.stderr).toBe('emk: --page must be at least 1 (got "0")\n');
    const perPage = await emk(['campaigns', 'list', '--per-page', 'x', '--workspace', shop.id]);
    expect(perPage.code).toBe(2);
    expect(perPage.stderr).toMatch(/^emk: --per-page .*\(got "x"\)\n$/);
  });

  it('--workspace takes an id, a name or a site id; EMK_WORKSPACE sets it; an ambiguous name names the candidates', async () => {
    const segmentsOf = async (args: string[], env: Record<string, string> = {}) => {
      const result = await emk(['segments', 'list', '--json', ...args], env);
      expect(result.code, result.stderr).toBe(0);
      return JSON.parse(result.stdout).data.map((s: { id: string }) => s.id);
    };
    expect(await segmentsOf(['--workspace', 'Lists shop'])).toEqual([segmentId]);
    expect(await segmentsOf(['--workspace', shop.siteId])).toEqual([segmentId]);
    expect(await segmentsOf([], { EMK_WORKSPACE: shop.siteId })).toEqual([segmentId]);
    expect(await segmentsOf([], { EMK_WORKSPACE: 'Lists shop' })).toEqual([segmentId]);
    // The flag wins over the environment.
    expect(await segmentsOf(['--workspace', other.id], { EMK_WORKSPACE: shop.id })).toEqual([]);

    const none = await emk(['segments', 'list'], { EMK_WORKSPACE: '' });
    expect(none.code).toBe(2);
    const unknown = await emk(['segments', 'list', '--workspace', 'Nobody']);
    expect(unknown.code).toBe(2);
    expect(unknown.stderr).toBe('emk: workspace Nobody not found (`npx emk workspaces list` shows them)\n');

    const twin = await h().workspace('Other shop');
    const ambiguous = await emk(['segments', 'list', '--workspace', 'Other shop']);
    expect(ambiguous.code).toBe(2);
    expect(ambiguous.stderr).toContain(other.id);
    expect(ambiguous.stderr).toContain(twin.id);
    expect(ambiguous.stderr).toMatch(/^emk: 2 workspaces are named "Other shop": pass one of their ids/);
  });
});
