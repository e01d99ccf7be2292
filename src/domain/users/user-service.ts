import type { Knex } from 'knex';
import { emailKey } from '../shared/keys.js';
import type { Database } from '../db/database.js';
import type { Dialect } from '../db/dialect/dialect.js';
import { ConflictError, NotFoundError, UnauthorizedError } from '../errors.js';
import { hashSecret, randomToken, uuidv7 } from '../shared/ids.js';
import { toPage, type Page, type Paging } from '../shared/paging.js';
import { systemClock, toIso, type Clock } from '../shared/time.js';
import { parseInput } from '../shared/validate.js';
import type { WorkspaceService } from '../workspaces/workspace-service.js';
import { createAccessTokens } from './access-tokens.js';
import { hashPassword, verifyPassword } from './passwords.js';
import {
  addUserSchema,
  loginSchema,
  refreshSchema,
  registerSchema,
  setPasswordByEmailSchema,
  setPasswordSchema,
  type AddedUser,
  type Registration,
  type Session,
  type UserRole,
  type WorkspaceUser,
} from './user.schema.js';
import { createUserStore, type UserRow } from './user-store.js';

const REFRESH_TOKEN_PREFIX = 'emkr_';
const REFRESH_TOKEN_TTL_MS = 30 * 24 * 60 * 60 * 1000;
/** Access tokens live 15 minutes (docs/api/auth.md). */
const ACCESS_TOKEN_TTL_SECONDS = 15 * 60;
const PASSWORD_TOKEN_PREFIX = 'emkp_';
/** A set-password token works once, within 72 hours of the user being added (docs/api/auth.md). */
export const PASSWORD_TOKEN_TTL_MS = 72 * 60 * 60 * 1000;
const CONSOLE_TOKEN_PREFIX = 'emks_';
/** A console session ends after 12 hours without a page, and 7 days after sign-in whatever its use (docs/console.md). */
export const CONSOLE_IDLE_MS = 12 * 60 * 60 * 1000;
export const CONSOLE_ABSOLUTE_MS = 7 * 24 * 60 * 60 * 1000;
/** `last_seen_at` is written at most this often: a page view is a read, not a write. */
const CONSOLE_TOUCH_MS = 5 * 60 * 1000;

/** Who a console session is: the user, its workspace and role. */
export interface ConsoleUser {
  userId: string;
  email: string;
  workspaceId: string;
  role: UserRole;
}

/** Who a management request acts as: an API key acts as an owner of its workspace. */
export interface Principal {
  workspaceId: string;
  role: UserRole;
}

/**
 * Accounts (docs/api/auth.md): register (a user and the workspace it owns), login, refresh; owners add users
 * (owners or members) who set their password with a one-time token. Refresh tokens are
 * single use: each refresh answers the next token of the same family; a used token presented again revokes
 * the whole family (OAuth 2.0 Security BCP), so a stolen token dies with the legitimate one.
 */
export function createUserService(deps: {
  knex: Knex;
  writeTransaction: Database['writeTransaction'];
  dialect: Dialect;
  workspaces: WorkspaceService;
  clock?: Clock;
}) {
  const { knex, writeTransaction, workspaces, dialect } = deps;
  const accessTokens = createAccessTokens({ knex, writeTransaction, dialect, ttlSeconds: ACCESS_TOKEN_TTL_SECONDS, clock: deps.clock });
  const store = createUserStore(dialect);
  const now = deps.clock ?? systemClock;
  // An unknown email is checked against this hash, so it costs the time a wrong password does.
  let dummyHash: Promise<string> | null = null;

  /** A new refresh token of the family, in the caller's transaction; the token itself is returned, its hash stored. */
  async function issueRefreshToken(trx: Knex.Transaction, userId: string, familyId: string): Promise<string> {
    const token = `${REFRESH_TOKEN_PREFIX}${randomToken(43)}`;
    const at = now();
    await store.insertRefreshToken(trx, {
      id: uuidv7(),
      family_id: familyId,
      user_id: userId,
      token_hash: hashSecret(token),
      created_at: at,
      expires_at: at + REFRESH_TOKEN_TTL_MS,
      used_at: null,
      revoked_at: null,
    });
    return token;
  }

  async function session(user: UserRow, refreshToken: string): Promise<Session> {
    return {
      user: { id: user.id, email: user.email },
      access_token: await accessTokens.issue(user.id, user.workspace_id),
      refresh_token: refreshToken,
      expires_in: accessTokens.ttlSeconds,
    };
  }

  async function principal(accessToken: string): Promise<Principal> {
    const { userId, workspaceId } = await accessTokens.verify(accessToken);
    const user = await store.findUserById(knex, userId);
    if (!user || user.workspace_id !== workspaceId) throw new UnauthorizedError('invalid access token');
    return { workspaceId, role: user.role };
  }

  /** The user of an email and password; 401 `invalid credentials` alike for an unknown email and a wrong password. */
  async function checkCredentials(input: unknown): Promise<UserRow> {
    const { email, password } = parseInput(loginSchema, input);
    const user = await store.findUserByEmailKey(knex, emailKey(email));
    // A user that has not set its password yet costs the same check, and fails it.
    const hash = user?.password_hash || (await (dummyHash ??= hashPassword(randomToken(16))));
    const matches = await verifyPassword(password, hash);
    if (!user || !user.password_hash || !matches) throw new UnauthorizedError('invalid credentials');
    return user;
  }

  const toWorkspaceUser = (row: UserRow): WorkspaceUser => ({ id: row.id, email: row.email, role: row.role, created_at: toIso(row.created_at)! });

  /** Uses the refresh token once: the user and the family's next token, or null when it must be refused. */
  async function rotate(trx: Knex.Transaction, token: string): Promise<{ user: UserRow; next: string } | null> {
    const row = await store.findRefreshToken(trx, hashSecret(token));
    if (!row || row.revoked_at !== null || row.expires_at <= now()) return null;
    if (!(await store.markRefreshTokenUsed(trx, row.id, now()))) {
      // Used before: someone replays it. Revoke the family, so the newest token (maybe the thief's) dies too.
      await store.revokeFamily(trx, row.family_id, now());
      return null;
    }
    const user = (await store.findUserById(trx, row.user_id))!;
    return { user, next: await issueRefreshToken(trx, user.id, row.family_id) };
  }

  return {
    /** A user, the workspace it owns (site id and signing secret) and its first session. 409 for a taken email. */
    async register(input: unknown): Promise<Registration> {
      const { email, password, workspace_name } = parseInput(registerSchema, input);
      // Hashed before the transaction: it is slow, and a transaction may run more than once.
      const passwordHash = await hashPassword(password);
      const { user, workspace, refreshToken } = await writeTransaction(async (trx) => {
        if (await store.findUserByEmailKey(trx, emailKey(email))) throw new ConflictError('email already registered');
        const workspace = await workspaces.create(trx, workspace_name);
        const user: UserRow = {
          id: uuidv7(),
          workspace_id: workspace.id,
          email,
          email_key: emailKey(email),
          password_hash: passwordHash,
          role: 'owner',
          created_at: now(),
        };
        await store.insertUser(trx, user);
        return { user, workspace, refreshToken: await issueRefreshToken(trx, user.id, uuidv7()) };
      });
      return { ...(await session(user, refreshToken)), workspace: { id: workspace.id, site_id: workspace.site_id } };
    },

    /** 401 `invalid credentials` alike for an unknown email and a wrong password, after the same hashing work. */
    async login(input: unknown): Promise<Session> {
      const user = await checkCredentials(input);
      const refreshToken = await writeTransaction((trx) => issueRefreshToken(trx, user.id, uuidv7()));
      return session(user, refreshToken);
    },

    /**
     * The console's sign-in: the credentials are checked as `login` checks them; answers the opaque token of a new
     * console session (its cookie), of which only the hash is stored.
     */
    async openConsoleSession(input: unknown): Promise<{ token: string; user: ConsoleUser }> {
      const user = await checkCredentials(input);
      const token = `${CONSOLE_TOKEN_PREFIX}${randomToken(43)}`;
      const at = now();
      await writeTransaction((trx) =>
        store.insertConsoleSession(trx, {
          id: uuidv7(),
          user_id: user.id,
          token_hash: hashSecret(token),
          created_at: at,
          last_seen_at: at,
          expires_at: at + CONSOLE_ABSOLUTE_MS,
          revoked_at: null,
        }),
      );
      return { token, user: { userId: user.id, email: user.email, workspaceId: user.workspace_id, role: user.role } };
    },

    /** The user of a console session, or null when the token is unknown, signed out, idle too long or expired. */
    async consoleSession(token: string): Promise<ConsoleUser | null> {
      if (!token.startsWith(CONSOLE_TOKEN_PREFIX) || token.length > 64) return null;
      const found = await store.findConsoleSession(knex, hashSecret(token));
      const at = now();
      if (!found) return null;
      const { session: row, user } = found;
      if (row.revoked_at !== null || row.expires_at <= at || row.last_seen_at + CONSOLE_IDLE_MS <= at) return null;
      if (at - row.last_seen_at >= CONSOLE_TOUCH_MS) await writeTransaction((trx) => store.touchConsoleSession(trx, row.id, at));
      return { userId: user.id, email: user.email, workspaceId: user.workspace_id, role: user.role };
    },

    /** Sign-out: the session's token stops working at once, on every process. */
    async closeConsoleSession(token: string): Promise<void> {
      if (!token.startsWith(CONSOLE_TOKEN_PREFIX) || token.length > 64) return;
      await writeTransaction((trx) => store.revokeConsoleSession(trx, hashSecret(token), now()));
    },

    /** A new pair for a refresh token used once; 401 `invalid refresh token` otherwise (a reuse revokes its family). */
    async refresh(input: unknown): Promise<Session> {
      const { refresh_token } = parseInput(refreshSchema, input);
      // The revocation must commit, so the transaction answers null instead of throwing.
      const rotated = await writeTransaction((trx) => rotate(trx, refresh_token));
      if (!rotated) throw new UnauthorizedError('invalid refresh token');
      return session(rotated.user, rotated.next);
    },

    /**
     * POST /api/v1/users (owners and API keys): a user of the workspace with no password yet, and the one-time
     * token it sets one with (72 hours; only its hash is stored). 409 for an email any workspace has.
     */
    async add(workspaceId: string, body: unknown): Promise<AddedUser> {
      const { email, role } = parseInput(addUserSchema, body);
      const token = `${PASSWORD_TOKEN_PREFIX}${randomToken(43)}`;
      const user = await writeTransaction(async (trx) => {
        if (await store.findUserByEmailKey(trx, emailKey(email))) throw new ConflictError('email already registered');
        const at = now();
        const row: UserRow = { id: uuidv7(), workspace_id: workspaceId, email, email_key: emailKey(email), password_hash: '', role, created_at: at };
        await store.insertUser(trx, row);
        await store.insertPasswordToken(trx, {
          id: uuidv7(),
          user_id: row.id,
          token_hash: hashSecret(token),
          created_at: at,
          expires_at: at + PASSWORD_TOKEN_TTL_MS,
          used_at: null,
        });
        return row;
      });
      return { user: { id: user.id, email: user.email, role: user.role }, set_password_token: token };
    },

    /** POST /api/v1/auth/set-password: uses the token once and answers a session; 401 `invalid set-password token` otherwise. */
    async setPassword(body: unknown): Promise<Session> {
      const { token, password } = parseInput(setPasswordSchema, body);
      const passwordHash = await hashPassword(password);
      const done = await writeTransaction(async (trx) => {
        const userId = await store.usePasswordToken(trx, hashSecret(token), now());
        const user = userId ? await store.findUserById(trx, userId) : null;
        if (!user) return null;
        await store.setPasswordHash(trx, user.id, passwordHash);
        return { user, refreshToken: await issueRefreshToken(trx, user.id, uuidv7()) };
      });
      if (!done) throw new UnauthorizedError('invalid set-password token');
      return session(done.user, done.refreshToken);
    },

    /**
     * `emk users set-password`: the operator (who holds the database) sets the password of a user of the workspace;
     * the user's console sessions end. 404 `user not found` for an email the workspace has no user of.
     */
    async setPasswordOf(workspaceId: string, body: unknown): Promise<WorkspaceUser> {
      const { email, password } = parseInput(setPasswordByEmailSchema, body);
      const passwordHash = await hashPassword(password);
      return writeTransaction(async (trx) => {
        const user = await store.findUserByEmailKey(trx, emailKey(email));
        if (!user || user.workspace_id !== workspaceId) throw new NotFoundError('user not found');
        await store.setPasswordHash(trx, user.id, passwordHash);
        await store.revokeConsoleSessionsOf(trx, user.id, now());
        return toWorkspaceUser(user);
      });
    },

    /** GET /api/v1/users: the workspace's users, oldest first. */
    async list(workspaceId: string, paging: Paging): Promise<Page<WorkspaceUser>> {
      const { rows, total } = await store.listUsers(knex, workspaceId, paging);
      return toPage(rows.map(toWorkspaceUser), total, paging);
    },

    /** DELETE /api/v1/users/{id}: its tokens die with it; 409 for the workspace's last owner. */
    async remove(workspaceId: string, id: string): Promise<void> {
      await writeTransaction(async (trx) => {
        const owners = await store.lockOwners(trx, workspaceId);
        const user = id.length <= 36 ? await store.findUserInWorkspace(trx, workspaceId, id) : null;
        if (!user) throw new NotFoundError();
        if (user.role === 'owner' && owners.length <= 1) throw new ConflictError('a workspace keeps at least one owner');
        await store.deleteUser(trx, id);
      });
    },

    /**
     * The management API's bearer credential: the workspace of the access token's user and its role, read from
     * the user's row, so a removed user's token stops working at once. 401 `invalid access token` otherwise.
     */
    principal,

    /** The workspace the access token's user belongs to (see `principal`). */
    async authenticate(accessToken: string): Promise<string> {
      return (await principal(accessToken)).workspaceId;
    },
  };
}

export type UserService = ReturnType<typeof createUserService>;
