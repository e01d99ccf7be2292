import { createHash } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createServices } from '../src/domain/create-services.js';
import { openDatabase } from '../src/domain/db/database.js';
import { PASSWORD_TOKEN_TTL_MS } from '../src/domain/users/user-service.js';
import { runEmk } from './helpers/cli.js';
import { describeEachDatabase, OPEN_REGISTRATION, type Harness, type TestWorkspace } from './helpers/harness.js';
import { createTestDatabase, DIALECTS, type TestDatabase } from './helpers/test-databases.js';

let counter = 0;
/** An address no other test uses (emails are unique across workspaces). */
const nextEmail = (who = 'user') => `${who}${++counter}-${Date.now()}@shop.test`;
const PASSWORD = 'correct horse battery';
const bearer = (token: string) => ({ authorization: `Bearer ${token}` });
const count = async (h: Harness, table: string) => Number((await h.services.db.knex(table).count({ n: '*' }))[0]!.n);

const register = (h: Harness, email = nextEmail('owner')) =>
  h.request({ method: 'POST', url: '/api/v1/auth/register', json: { email, password: PASSWORD, workspace_name: 'My shop' } });

/** `POST /api/v1/users` with the workspace's API key (it acts as an owner). */
async function addUser(h: Harness, ws: TestWorkspace, role: 'owner' | 'member', email = nextEmail(role)) {
  const res = await h.request({ method: 'POST', url: '/api/v1/users', key: ws.apiKey, json: { email, role } });
  expect(res.statusCode, res.body).toBe(201);
  return res.json() as { user: { id: string; email: string; role: string }; set_password_token: string };
}

const setPassword = (h: Harness, token: string, password = PASSWORD) =>
  h.request({ method: 'POST', url: '/api/v1/auth/set-password', json: { token, password } });

/** A user of the workspace with its password set: its session. */
async function signedIn(h: Harness, ws: TestWorkspace, role: 'owner' | 'member') {
  const added = await addUser(h, ws, role);
  const res = await setPassword(h, added.set_password_token);
  expect(res.statusCode, res.body).toBe(200);
  return { ...added, ...(res.json() as { access_token: string; refresh_token: string }) };
}

describeEachDatabase('registration closed (the default)', (h) => {
  it('POST /auth/register answers 403 registration is closed, whatever the body, and creates nothing', async () => {
    const users = await count(h(), 'users');
    const workspaces = await count(h(), 'workspaces');
    for (const json of [{ email: nextEmail(), password: PASSWORD, workspace_name: 'Mine' }, { email: 'not-an-email' }, {}]) {
      const res = await h().request({ method: 'POST', url: '/api/v1/auth/register', json });
      expect(res.statusCode, res.body).toBe(403);
      expect(Object.keys(res.json()).sort()).toEqual(['error', 'request_id']);
      expect(res.json().error).toBe('registration is closed');
    }
    expect(h().config.registration).toBe('closed');
    expect(await count(h(), 'users')).toBe(users);
    expect(await count(h(), 'workspaces')).toBe(workspaces);
  });

  it('login and refresh still answer: closing registration closes only registration', async () => {
    const ws = await h().workspace();
    const { user } = await signedIn(h(), ws, 'member');
    const login = await h().request({ method: 'POST', url: '/api/v1/auth/login', json: { email: user.email, password: PASSWORD } });
    expect(login.statusCode, login.body).toBe(200);
    const refresh = await h().request({ method: 'POST', url: '/api/v1/auth/refresh', json: { refresh_token: login.json().refresh_token } });
    expect(refresh.statusCode, refresh.body).toBe(200);
  });
});

describeEachDatabase(
  'registration open (EMK_REGISTRATION=open)',
  (h) => {
    it('register answers 201 and the registering user is an owner of its workspace', async () => {
      const email = nextEmail('owner');
      const res = await register(h(), email);
      expect(res.statusCode, res.body).toBe(201);
      const list = await h().request({ method: 'GET', url: '/api/v1/users', headers: bearer(res.json().access_token) });
      expect(list.statusCode, list.body).toBe(200);
      expect(list.json().data).toEqual([{ id: res.json().user.id, email, role: 'owner', created_at: expect.any(String) }]);
    });
  },
  OPEN_REGISTRATION,
);

describeEachDatabase('users: owners add members, who set their password', (h) => {
  it('POST /users answers the user with its role and a one-time set-password token, stored only as its hash', async () => {
    const ws = await h().workspace();
    const email = nextEmail('member');
    const res = await h().request({ method: 'POST', url: '/api/v1/users', key: ws.apiKey, json: { email, role: 'member' } });
    expect(res.statusCode, res.body).toBe(201);
    const body = res.json();
    expect(Object.keys(body).sort()).toEqual(['set_password_token', 'user']);
    expect(body.user).toEqual({ id: expect.any(String), email, role: 'member' });
    expect(body.set_password_token).toMatch(/^emkp_[0-9A-Za-z]{43}$/);
    const row = await h().services.db.knex('password_tokens').where({ user_id: body.user.id }).first();
    expect(row.token_hash).toBe(createHash('sha256').update(body.set_password_token).digest('hex'));
    const stored = await h().services.db.knex('users').where({ id: body.user.id }).first();
    expect(stored).toMatchObject({ workspace_id: ws.id, role: 'member', password_hash: '' });
    // The role defaults to member.
    const plain = await h().request({ method: 'POST', url: '/api/v1/users', key: ws.apiKey, json: { email: nextEmail() } });
    expect(plain.json().user.role).toBe('member');
  });

  it('set-password answers the login shape; the password then logs in; the token works once', async () => {
    const ws = await h().workspace();
    const added = await addUser(h(), ws, 'member');
    // No password yet: no password logs in.
    for (const password of [PASSWORD, '']) {
      const before = await h().request({ method: 'POST', url: '/api/v1/auth/login', json: { email: added.user.email, password: password || 'x' } });
      expect(before.statusCode).toBe(401);
      expect(before.json().error).toBe('invalid credentials');
    }
    const res = await setPassword(h(), added.set_password_token);
    expect(res.statusCode, res.body).toBe(200);
    const session = res.json();
    expect(Object.keys(session).sort()).toEqual(['access_token', 'expires_in', 'refresh_token', 'user']);
    expect(session.user).toEqual({ id: added.user.id, email: added.user.email });
    expect(await h().services.users.authenticate(session.access_token)).toBe(ws.id);
    const contacts = await h().request({ method: 'GET', url: '/api/v1/contacts', headers: bearer(session.access_token) });
    expect(contacts.statusCode, contacts.body).toBe(200);

    const login = await h().request({ method: 'POST', url: '/api/v1/auth/login', json: { email: added.user.email, password: PASSWORD } });
    expect(login.statusCode, login.body).toBe(200);
    expect(login.json().user).toEqual(session.user);

    const again = await setPassword(h(), added.set_password_token, 'another password');
    expect(again.statusCode).toBe(401);
    expect(again.json().error).toBe('invalid set-password token');
    // The password the second try sent was not set.
    const other = await h().request({ method: 'POST', url: '/api/v1/auth/login', json: { email: added.user.email, password: 'another password' } });
    expect(other.statusCode).toBe(401);
  });

  it('a set-password token expires after 72 hours; an unknown one is refused alike', async () => {
    const ws = await h().workspace();
    const late = await addUser(h(), ws, 'member');
    const inTime = await addUser(h(), ws, 'member');
    h().clock.advance(PASSWORD_TOKEN_TTL_MS - 1000);
    expect((await setPassword(h(), inTime.set_password_token)).statusCode).toBe(200);
    h().clock.advance(1000);
    for (const token of [late.set_password_token, 'emkp_unknown']) {
      const res = await setPassword(h(), token);
      expect(res.statusCode).toBe(401);
      expect(res.json().error).toBe('invalid set-password token');
    }
  });

  it('an owner signed in with its password adds a member too', async () => {
    const ws = await h().workspace();
    const owner = await signedIn(h(), ws, 'owner');
    const email = nextEmail('member');
    const res = await h().request({ method: 'POST', url: '/api/v1/users', headers: bearer(owner.access_token), json: { email, role: 'member' } });
    expect(res.statusCode, res.body).toBe(201);
    const row = await h().services.db.knex('users').where({ id: res.json().user.id }).first();
    expect(row.workspace_id).toBe(ws.id);
  });

  it('bad input is a 400 naming the field; a taken email is a 409; nothing is written', async () => {
    const ws = await h().workspace();
    const taken = (await addUser(h(), ws, 'member')).user.email;
    const users = await count(h(), 'users');
    const cases: Array<[string, unknown, number, string]> = [
      ['/api/v1/users', { role: 'member' }, 400, 'invalid request: email is required'],
      ['/api/v1/users', { email: 'nobody', role: 'member' }, 400, 'invalid request: email must be an email address'],
      ['/api/v1/users', { email: nextEmail(), role: 'admin' }, 400, 'invalid request: role must be one of owner, member'],
      ['/api/v1/users', { email: taken.toUpperCase(), role: 'owner' }, 409, 'email already registered'],
      ['/api/v1/auth/set-password', { token: 'emkp_x' }, 400, 'invalid request: password is required'],
      ['/api/v1/auth/set-password', { token: 'emkp_x', password: 'short' }, 400, 'invalid request: password must be at least 8 characters'],
      ['/api/v1/auth/set-password', { password: PASSWORD }, 400, 'invalid request: token is required'],
    ];
    for (const [url, json, status, error] of cases) {
      const res = await h().request({ method: 'POST', url, key: ws.apiKey, json });
      expect(res.statusCode, `${url} ${JSON.stringify(json)}`).toBe(status);
      expect(res.json().error).toBe(error);
    }
    expect(await count(h(), 'users')).toBe(users);
  });
});

describeEachDatabase('users: a member is forbidden on owner routes and allowed elsewhere', (h) => {
  it('users, API keys, senders, settings, integrations and relay webhooks answer a member 403 forbidden, and change nothing', async () => {
    const ws = await h().workspace();
    const member = await signedIn(h(), ws, 'member');
    const users = await count(h(), 'users');
    const keys = await count(h(), 'api_keys');
    const routes: Array<[string, string, unknown?]> = [
      ['GET', '/api/v1/users'],
      ['POST', '/api/v1/users', { email: nextEmail(), role: 'owner' }],
      ['DELETE', `/api/v1/users/${member.user.id}`],
      ['GET', '/api/v1/api-keys'],
      ['POST', '/api/v1/api-keys', { name: 'mine' }],
      ['GET', '/api/v1/senders'],
      ['POST', '/api/v1/senders', { domain: 'mine.example' }],
      ['GET', '/api/v1/settings'],
      ['PATCH', '/api/v1/settings', { click_window_days: 9 }],
      ['GET', '/api/v1/integrations'],
      ['POST', '/api/v1/integrations', { platform: 'website', domain: 'mine.example' }],
      ['POST', `/api/v1/integrations/${ws.integrationId}/rotate-key`],
      ['GET', '/api/v1/relay-webhooks'],
      ['POST', '/api/v1/relay-webhooks', { provider: 'postmark', secret: 'a-long-random-password' }],
      // Another spelling of the same route is the same route.
      ['GET', '/api/v1/%75sers'],
    ];
    for (const [method, url, json] of routes) {
      const res = await h().request({ method: method as 'GET', url, headers: bearer(member.access_token), ...(json ? { json } : {}) });
      expect(res.statusCode, `${method} ${url}: ${res.body}`).toBe(403);
      expect(res.json().error).toBe('forbidden');
    }
    expect(await count(h(), 'users')).toBe(users);
    expect(await count(h(), 'api_keys')).toBe(keys);
    expect(await count(h(), 'senders')).toBe(0);
    expect(await count(h(), 'relay_webhooks')).toBe(0);
    expect((await h().services.settings.get(ws.id)).click_window_days).toBe(5);
  });

  it('everything else works for a member: contacts, events, campaigns, flows, segments, reports', async () => {
    const ws = await h().workspace();
    const member = await signedIn(h(), ws, 'member');
    const as = (method: string, url: string, json?: unknown) =>
      h().request({ method: method as 'GET', url, headers: bearer(member.access_token), ...(json ? { json } : {}) });
    expect((await as('POST', '/api/v1/contacts', { email: 'c@example.com' })).statusCode).toBe(201);
    expect((await as('GET', '/api/v1/contacts')).statusCode).toBe(200);
    expect((await as('GET', '/api/v1/events')).statusCode).toBe(200);
    const campaign = await as('POST', '/api/v1/campaigns', { name: 'N', subject: 'S', html: '<p>x</p>', from_email: 'news@shop.test' });
    expect(campaign.statusCode, campaign.body).toBe(201);
    const flow = await as('POST', '/api/v1/flows', { name: 'F', trigger: { type: 'event', event_name: 'x' }, steps: [] });
    expect(flow.statusCode, flow.body).toBe(201);
    expect((await as('POST', '/api/v1/segments', { name: 'S', conditions: { all: [{ subscription_status: 'subscribed' }] } })).statusCode).toBe(201);
    expect((await as('GET', '/api/v1/reports/revenue')).statusCode).toBe(200);
    // The same routes an API key or an owner may use answer them as before.
    expect((await h().request({ method: 'GET', url: '/api/v1/settings', key: ws.apiKey })).statusCode).toBe(200);
  });
});

describeEachDatabase('users: list and remove', (h) => {
  it('GET /users lists the workspace’s users with their roles; DELETE removes one and its tokens stop working', async () => {
    const ws = await h().workspace();
    const other = await h().workspace('Other shop');
    const owner = await signedIn(h(), ws, 'owner');
    const member = await signedIn(h(), ws, 'member');
    const theirs = await addUser(h(), other, 'member');

    const list = await h().request({ method: 'GET', url: '/api/v1/users', headers: bearer(owner.access_token) });
    expect(list.statusCode, list.body).toBe(200);
    expect(list.json()).toEqual({
      data: [
        { id: owner.user.id, email: owner.user.email, role: 'owner', created_at: expect.any(String) },
        { id: member.user.id, email: member.user.email, role: 'member', created_at: expect.any(String) },
      ],
      meta: { page: 1, perPage: 50, total: 2 },
    });
    const paged = await h().request({ method: 'GET', url: '/api/v1/users?perPage=1&page=2', key: ws.apiKey });
    expect(paged.json().data.map((u: { id: string }) => u.id)).toEqual([member.user.id]);

    // Another workspace's user, or none: 404.
    for (const id of [theirs.user.id, 'nope', 'x'.repeat(100)]) {
      const res = await h().request({ method: 'DELETE', url: `/api/v1/users/${id}`, key: ws.apiKey });
      expect(res.statusCode, id).toBe(404);
      expect(res.json().error).toBe('not found');
    }

    const removed = await h().request({ method: 'DELETE', url: `/api/v1/users/${member.user.id}`, headers: bearer(owner.access_token) });
    expect(removed.statusCode).toBe(204);
    const gone = await h().request({ method: 'GET', url: '/api/v1/contacts', headers: bearer(member.access_token) });
    expect(gone.statusCode).toBe(401);
    expect(gone.json().error).toBe('invalid access token');
    const refresh = await h().request({ method: 'POST', url: '/api/v1/auth/refresh', json: { refresh_token: member.refresh_token } });
    expect(refresh.statusCode).toBe(401);
    const login = await h().request({ method: 'POST', url: '/api/v1/auth/login', json: { email: member.user.email, password: PASSWORD } });
    expect(login.statusCode).toBe(401);
    const after = await h().request({ method: 'GET', url: '/api/v1/users', key: ws.apiKey });
    expect(after.json().data.map((u: { id: string }) => u.id)).toEqual([owner.user.id]);
  });

  it('the last owner of a workspace cannot be removed (409); with a second owner it can', async () => {
    const ws = await h().workspace();
    const first = await signedIn(h(), ws, 'owner');
    const last = await h().request({ method: 'DELETE', url: `/api/v1/users/${first.user.id}`, headers: bearer(first.access_token) });
    expect(last.statusCode).toBe(409);
    expect(last.json().error).toBe('a workspace keeps at least one owner');
    const second = await signedIn(h(), ws, 'owner');
    const res = await h().request({ method: 'DELETE', url: `/api/v1/users/${first.user.id}`, headers: bearer(second.access_token) });
    expect(res.statusCode).toBe(204);
  });
});

for (const dialect of DIALECTS) {
  describe(`emk users add [${dialect}]`, () => {
    let database: TestDatabase;
    let workspaceId: string;
    beforeAll(async () => {
      database = await createTestDatabase(dialect);
      const init = await runEmk(['init', '--db', database.url, '--json', '--name', 'Cli shop', '--domain', 'cli-shop.test']);
      expect(init.code, init.stderr).toBe(0);
      workspaceId = JSON.parse(init.stdout).workspace_id;
    });
    afterAll(() => database.drop());
    const emk = (args: string[]) => runEmk([...args, '--db', database.url]);

    it('--json prints the 201 body of POST /users; its token sets the password; --role owner; a bad role exits 2', async () => {
      const email = nextEmail('cli');
      const result = await emk(['users', 'add', '--email', email, '--workspace', workspaceId, '--json']);
      expect(result.code, result.stderr).toBe(0);
      const body = JSON.parse(result.stdout);
      expect(Object.keys(body).sort()).toEqual(['set_password_token', 'user']);
      expect(body.user).toEqual({ id: expect.any(String), email, role: 'member' });

      const owner = JSON.parse((await emk(['users', 'add', '--email', nextEmail('cli'), '--role', 'owner', '--json'])).stdout);
      expect(owner.user.role).toBe('owner');

      const services = createServices(openDatabase(database.url));
      try {
        const session = await services.users.setPassword({ token: body.set_password_token, password: PASSWORD });
        expect(await services.users.principal(session.access_token)).toEqual({ workspaceId, role: 'member' });
      } finally {
        await services.close();
      }

      const human = await emk(['users', 'add', '--email', nextEmail('cli')]);
      expect(human.code, human.stderr).toBe(0);
      expect(human.stdout).toMatch(/member\nset-password token {2}emkp_/);

      const bad = await emk(['users', 'add', '--email', nextEmail('cli'), '--role', 'admin', '--json']);
      expect(bad.code).toBe(2);
      expect(bad.stdout).toBe('');
      expect(bad.stderr.trim()).toBe('emk: --role must be owner or member (got "admin")');
      const taken = await emk(['users', 'add', '--email', email, '--json']);
      expect(taken.code).toBe(1);
      expect(taken.stderr.trim()).toBe('emk: email already registered');
    });
  });
}
