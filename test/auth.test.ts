import { createHash } from 'node:crypto';
import { expect, it } from 'vitest';
import { createServices } from '../src/domain/create-services.js';
import { openDatabase } from '../src/domain/db/database.js';
import { hashingSlots, hashPassword, verifyPassword } from '../src/domain/users/passwords.js';
import { describeEachDatabase, OPEN_REGISTRATION, type Harness } from './helpers/harness.js';

let userCounter = 0;
/** An address no other test uses. */
const nextEmail = () => `owner${++userCounter}-${Date.now()}@shop.test`;
const PASSWORD = 'correct horse battery';

const post = (h: Harness, path: string, json: unknown, remoteAddress = '127.0.0.1') =>
  h.request({ method: 'POST', url: `/api/v1/auth/${path}`, json, remoteAddress });

const bearer = (token: string) => ({ authorization: `Bearer ${token}` });

async function register(h: Harness, email = nextEmail()) {
  const res = await post(h, 'register', { email, password: PASSWORD, workspace_name: 'My shop' });
  expect(res.statusCode, res.body).toBe(201);
  return res.json() as {
    user: { id: string; email: string };
    workspace: { id: string; site_id: string };
    access_token: string;
    refresh_token: string;
    expires_in: number;
  };
}

const count = async (h: Harness, table: string) => Number((await h.services.db.knex(table).count({ n: '*' }))[0]!.n);

describeEachDatabase('accounts: register, login, refresh', (h) => {
  it('register creates the user and the workspace it owns, and answers a working pair of tokens', async () => {
    const email = nextEmail();
    const body = await register(h(), email);
    expect(Object.keys(body).sort()).toEqual(['access_token', 'expires_in', 'refresh_token', 'user', 'workspace']);
    expect(body.user).toEqual({ id: expect.any(String), email });
    expect(body.workspace.site_id).toMatch(/^site_/);
    expect(body.expires_in).toBe(900);
    const workspace = await h().services.workspaces.get(body.workspace.id);
    expect(workspace).toMatchObject({ name: 'My shop', site_id: body.workspace.site_id });
    const settings = await h().request({ method: 'GET', url: '/api/v1/settings', headers: bearer(body.access_token) });
    expect(settings.statusCode, settings.body).toBe(200);
    // The token is as good as a key: it can make one for the workspace.
    const key = await h().request({ method: 'POST', url: '/api/v1/api-keys', headers: bearer(body.access_token), json: { name: 'ci' } });
    expect(key.statusCode, key.body).toBe(201);
    const viaKey = await h().request({ method: 'GET', url: '/api/v1/api-keys', key: key.json().key });
    expect(viaKey.json().data.map((k: { name: string }) => k.name)).toEqual(['ci']);
  });

  it('login answers the user and a new pair; the email matches whatever its case', async () => {
    const email = nextEmail();
    const { user, workspace } = await register(h(), email);
    const res = await post(h(), 'login', { email: email.toUpperCase(), password: PASSWORD });
    expect(res.statusCode, res.body).toBe(200);
    const body = res.json();
    expect(Object.keys(body).sort()).toEqual(['access_token', 'expires_in', 'refresh_token', 'user']);
    expect(body.user).toEqual(user);
    expect(body.expires_in).toBe(900);
    expect(await h().services.users.authenticate(body.access_token)).toBe(workspace.id);
  });

  it('refresh answers a new pair, and the new access token works', async () => {
    const { user, workspace, refresh_token, access_token } = await register(h());
    const res = await post(h(), 'refresh', { refresh_token });
    expect(res.statusCode, res.body).toBe(200);
    const body = res.json();
    expect(body.user).toEqual(user);
    expect(body.refresh_token).not.toBe(refresh_token);
    expect(body.access_token).not.toBe(access_token);
    expect(await h().services.users.authenticate(body.access_token)).toBe(workspace.id);
  });

  it('bad input is a 400 naming the field, and writes nothing', async () => {
    const users = await count(h(), 'users');
    const workspaces = await count(h(), 'workspaces');
    const email = nextEmail();
    const cases: Array<[string, unknown, string]> = [
      ['register', { password: PASSWORD, workspace_name: 'S' }, 'invalid request: email is required'],
      ['register', { email: 'not-an-email', password: PASSWORD, workspace_name: 'S' }, 'invalid request: email must be an email address'],
      ['register', { email, password: 'short', workspace_name: 'S' }, 'invalid request: password must be at least 8 characters'],
      ['register', { email, workspace_name: 'S' }, 'invalid request: password is required'],
      ['register', { email, password: 12345678, workspace_name: 'S' }, 'invalid request: password must be a string (got number)'],
      ['register', { email, password: PASSWORD }, 'invalid request: workspace_name is required'],
      ['register', { email, password: PASSWORD, workspace_name: '  ' }, 'invalid request: workspace_name must not be empty'],
      ['login', { email: 'nobody', password: PASSWORD }, 'invalid request: email must be an email address'],
      ['login', { email }, 'invalid request: password is required'],
      ['refresh', {}, 'invalid request: refresh_token is required'],
    ];
    for (const [path, json, error] of cases) {
      const res = await post(h(), path, json);
      expect(res.statusCode, `${path} ${JSON.stringify(json)}`).toBe(400);
      expect(res.json().error).toBe(error);
    }
    expect(await count(h(), 'users')).toBe(users);
    expect(await count(h(), 'workspaces')).toBe(workspaces);
  });

  it('an email registered twice (in any case) is a 409, and the second workspace is not created', async () => {
    const email = nextEmail();
    await register(h(), email);
    const workspaces = await count(h(), 'workspaces');
    const res = await post(h(), 'register', { email: email.toUpperCase(), password: 'another password', workspace_name: 'Twin' });
    expect(res.statusCode).toBe(409);
    expect(res.json().error).toBe('email already registered');
    expect(await count(h(), 'workspaces')).toBe(workspaces);
  });

  it('an unknown email and a wrong password get the same 401', async () => {
    const email = nextEmail();
    await register(h(), email);
    const wrong = await post(h(), 'login', { email, password: 'not the password' });
    const unknown = await post(h(), 'login', { email: nextEmail(), password: PASSWORD });
    for (const res of [wrong, unknown]) {
      expect(res.statusCode).toBe(401);
      expect(Object.keys(res.json()).sort()).toEqual(['error', 'request_id']);
      expect(res.json().error).toBe('invalid credentials');
    }
  });

  it('logins from many addresses hash one at a time (the thread pool the database shares stays free)', async () => {
    const email = nextEmail();
    await register(h(), email);
    let most = 0;
    let sampling = true;
    const sample = () => {
      most = Math.max(most, hashingSlots.running());
      if (sampling) setImmediate(sample);
    };
    sample();
    const logins = await Promise.all(
      Array.from({ length: 6 }, (_, i) => post(h(), 'login', { email, password: i % 2 === 0 ? PASSWORD : 'wrong password' }, `198.51.100.${i + 1}`)),
    );
    sampling = false;
    // Barrier: every login ran its hash (the right password logs in, a wrong one is refused).
    expect(logins.map((r) => r.statusCode)).toEqual([200, 401, 200, 401, 200, 401]);
    expect(most).toBe(1);
  });

  it('an unknown email costs a password check too (checked against a dummy hash)', async () => {
    const elapsed = async (work: () => Promise<unknown>) => {
      const start = performance.now();
      await work();
      return performance.now() - start;
    };
    const hash = await hashPassword(PASSWORD);
    // The fastest of a few: one scrypt check on this machine as it is loaded now.
    const check = Math.min(...[await elapsed(() => verifyPassword('wrong password', hash)), await elapsed(() => verifyPassword('wrong', hash))]);
    await post(h(), 'login', { email: nextEmail(), password: PASSWORD }); // the dummy hash is made once
    const unknown = await elapsed(() => post(h(), 'login', { email: nextEmail(), password: PASSWORD }));
    expect(unknown).toBeGreaterThan(check / 2);
  });

  it('a refresh token works once; a reused one is refused and revokes its family, the newest token included', async () => {
    const email = nextEmail();
    const first = await register(h(), email);
    const second = (await post(h(), 'refresh', { refresh_token: first.refresh_token })).json();
    const third = (await post(h(), 'refresh', { refresh_token: second.refresh_token })).json();
    expect(third.refresh_token).toMatch(/^emkr_/);
    // Another login is another family: the replay below leaves it alone.
    const other = (await post(h(), 'login', { email, password: PASSWORD })).json();

    const replay = await post(h(), 'refresh', { refresh_token: first.refresh_token });
    expect(replay.statusCode).toBe(401);
    expect(replay.json().error).toBe('invalid refresh token');
    const newest = await post(h(), 'refresh', { refresh_token: third.refresh_token });
    expect(newest.statusCode).toBe(401);
    expect(newest.json().error).toBe('invalid refresh token');
    expect((await post(h(), 'refresh', { refresh_token: other.refresh_token })).statusCode).toBe(200);
    expect((await post(h(), 'refresh', { refresh_token: 'emkr_unknown' })).statusCode).toBe(401);
  });

  it("an access token works on its own workspace's management API and on no other", async () => {
    const mine = await register(h());
    const theirs = await h().workspace('Their shop');
    const created = await h().request({ method: 'POST', url: '/api/v1/contacts', key: theirs.apiKey, json: { email: 'theirs@example.com' } });
    expect(created.statusCode).toBe(201);
    const theirContact = created.json().id as string;

    const auth = bearer(mine.access_token);
    expect((await h().request({ method: 'GET', url: `/api/v1/contacts/${theirContact}`, headers: auth })).statusCode).toBe(404);
    const own = await h().request({ method: 'POST', url: '/api/v1/contacts', headers: auth, json: { email: 'mine@example.com' } });
    expect(own.statusCode).toBe(201);
    const list = await h().request({ method: 'GET', url: '/api/v1/contacts', headers: auth });
    expect(list.json().data.map((c: { email: string }) => c.email)).toEqual(['mine@example.com']);
    const ours = await h().services.db.knex('contacts').where({ id: own.json().id }).first();
    expect(ours.workspace_id).toBe(mine.workspace.id);
    // Their key still sees only theirs.
    expect((await h().request({ method: 'GET', url: `/api/v1/contacts/${own.json().id}`, key: theirs.apiKey })).statusCode).toBe(404);
  });

  it('expired, tampered and foreign tokens are refused with 401 invalid access token', async () => {
    const mine = await register(h());
    const theirs = await h().workspace('Other shop');
    const [header, payload, signature] = mine.access_token.split('.') as [string, string, string];
    const claims = JSON.parse(Buffer.from(payload, 'base64url').toString());
    const forged = Buffer.from(JSON.stringify({ ...claims, wid: theirs.id })).toString('base64url');
    const unsigned = `${Buffer.from(JSON.stringify({ alg: 'none', typ: 'JWT' })).toString('base64url')}.${payload}.`;
    const flipped = `${signature.slice(0, -2)}${signature.endsWith('AA') ? 'BB' : 'AA'}`;
    const refused = [`${header}.${forged}.${signature}`, `${header}.${payload}.${flipped}`, unsigned, mine.refresh_token, 'garbage'];
    for (const token of refused) {
      const res = await h().request({ method: 'GET', url: '/api/v1/settings', headers: bearer(token) });
      expect(res.statusCode, token).toBe(401);
      expect(res.json().error).toBe('invalid access token');
    }

    const fresh = await h().request({ method: 'GET', url: '/api/v1/settings', headers: bearer(mine.access_token) });
    expect(fresh.statusCode).toBe(200);
    h().clock.advance(mine.expires_in * 1000 - 1000);
    expect((await h().request({ method: 'GET', url: '/api/v1/settings', headers: bearer(mine.access_token) })).statusCode).toBe(200);
    h().clock.advance(1000);
    const expired = await h().request({ method: 'GET', url: '/api/v1/settings', headers: bearer(mine.access_token) });
    expect(expired.statusCode).toBe(401);
    expect(expired.json().error).toBe('invalid access token');
    // The refresh token outlives it.
    const renewed = (await post(h(), 'refresh', { refresh_token: mine.refresh_token })).json();
    expect((await h().request({ method: 'GET', url: '/api/v1/settings', headers: bearer(renewed.access_token) })).statusCode).toBe(200);
  });

  it('X-API-Key behaves as before: it wins over a bearer token, and without either the key is missing', async () => {
    const ws = await h().workspace();
    const none = await h().request({ method: 'GET', url: '/api/v1/settings' });
    expect(none.statusCode).toBe(401);
    expect(none.json().error).toBe('missing api key');
    const basic = await h().request({ method: 'GET', url: '/api/v1/settings', headers: { authorization: 'Basic dXNlcjpwYXNz' } });
    expect(basic.json().error).toBe('missing api key');
    const wrong = await h().request({ method: 'GET', url: '/api/v1/settings', key: 'emk_wrong' });
    expect(wrong.json().error).toBe('invalid api key');
    const both = await h().request({ method: 'GET', url: '/api/v1/settings', key: ws.apiKey, headers: bearer('garbage') });
    expect(both.statusCode).toBe(200);
  });

  it('passwords are stored as salted scrypt hashes and refresh tokens as SHA-256 hashes', async () => {
    const a = await register(h());
    const b = await register(h());
    const rows = await h().services.db.knex('users').whereIn('id', [a.user.id, b.user.id]);
    expect(rows).toHaveLength(2);
    for (const row of rows) {
      expect(row.password_hash).toMatch(/^scrypt\$ln=15,r=8,p=1\$[A-Za-z0-9+/=]{24}\$[A-Za-z0-9+/=]{44}$/);
      expect(row.password_hash).not.toContain(PASSWORD);
    }
    expect(rows[0].password_hash).not.toBe(rows[1].password_hash);
    const token = await h().services.db.knex('refresh_tokens').where({ user_id: a.user.id }).first();
    expect(token.token_hash).toBe(createHash('sha256').update(a.refresh_token).digest('hex'));
  });

  it('another process on the same database accepts the tokens (the signing key lives in the database)', async () => {
    const mine = await register(h());
    const other = createServices(openDatabase(h().database.url), { clock: h().clock });
    try {
      expect(await other.users.authenticate(mine.access_token)).toBe(mine.workspace.id);
    } finally {
      await other.close();
    }
  });
}, OPEN_REGISTRATION);

describeEachDatabase(
  'accounts: 10 requests a minute per address',
  (h) => {
    it('the 11th auth request from one address in a minute is a 429 with Retry-After; other addresses go on', async () => {
      for (let i = 0; i < 10; i++) {
        const res = await post(h(), 'refresh', { refresh_token: `emkr_nothing${i}` }, '10.9.0.1');
        expect(res.statusCode).toBe(401);
        expect(res.headers['ratelimit-limit']).toBe('10');
        expect(res.headers['ratelimit-remaining']).toBe(String(9 - i));
      }
      const limited = await post(h(), 'login', { email: 'a@shop.test', password: PASSWORD }, '10.9.0.1');
      expect(limited.statusCode).toBe(429);
      expect(limited.json().error).toBe('rate limit exceeded');
      expect(Number(limited.headers['retry-after'])).toBeGreaterThanOrEqual(1);
      expect((await post(h(), 'register', { email: nextEmail(), password: PASSWORD, workspace_name: 'S' }, '10.9.0.1')).statusCode).toBe(429);
      expect((await post(h(), 'register', { email: nextEmail(), password: PASSWORD, workspace_name: 'S' }, '10.9.0.2')).statusCode).toBe(201);
      // The management API is not an auth path.
      const ws = await h().workspace();
      const api = await h().request({ method: 'GET', url: '/api/v1/settings', key: ws.apiKey, remoteAddress: '10.9.0.1' });
      expect(api.statusCode).toBe(200);
      // A minute later the window has rolled on.
      h().clock.advance(120_000);
      expect((await post(h(), 'refresh', { refresh_token: 'emkr_later' }, '10.9.0.1')).statusCode).toBe(401);
    });
  },
  { ...OPEN_REGISTRATION, EMK_LIMIT_AUTH_PER_IP: '10' },
);
