import type { Knex } from 'knex';
import { emailKey } from '../shared/keys.js';
import type { Database } from '../db/database.js';
import { ConflictError, UnauthorizedError } from '../errors.js';
import { hashSecret, randomToken, uuidv7 } from '../shared/ids.js';
import { systemClock, type Clock } from '../shared/time.js';
import { parseInput } from '../shared/validate.js';
import type { WorkspaceService } from '../workspaces/workspace-service.js';
import { createAccessTokens } from './access-tokens.js';
import { hashPassword, verifyPassword } from './passwords.js';
import { loginSchema, refreshSchema, registerSchema, type Registration, type Session } from './user.schema.js';
import { createUserStore, type UserRow } from './user-store.js';

const REFRESH_TOKEN_PREFIX = 'emkr_';
const REFRESH_TOKEN_TTL_MS = 30 * 24 * 60 * 60 * 1000;
/** Access tokens live 15 minutes (docs/api/auth.md). */
const ACCESS_TOKEN_TTL_SECONDS = 15 * 60;

/**
 * Accounts (docs/api/auth.md): register (a user and the workspace it owns), login, refresh. Refresh tokens are
 * single use: each refresh answers the next token of the same family; a used token presented again revokes
 * the whole family (OAuth 2.0 Security BCP), so a stolen token dies with the legitimate one.
 */
export function createUserService(deps: {
  knex: Knex;
  writeTransaction: Database['writeTransaction'];
  workspaces: WorkspaceService;
  clock?: Clock;
}) {
  const { knex, writeTransaction, workspaces } = deps;
  const accessTokens = createAccessTokens({ knex, writeTransaction, ttlSeconds: ACCESS_TOKEN_TTL_SECONDS, clock: deps.clock });
  const store = createUserStore();
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
          created_at: now(),
        };
        await store.insertUser(trx, user);
        return { user, workspace, refreshToken: await issueRefreshToken(trx, user.id, uuidv7()) };
      });
      return { ...(await session(user, refreshToken)), workspace: { id: workspace.id, site_id: workspace.site_id } };
    },

    /** 401 `invalid credentials` alike for an unknown email and a wrong password, after the same hashing work. */
    async login(input: unknown): Promise<Session> {
      const { email, password } = parseInput(loginSchema, input);
      const user = await store.findUserByEmailKey(knex, emailKey(email));
      const hash = user?.password_hash ?? (await (dummyHash ??= hashPassword(randomToken(16))));
      const matches = await verifyPassword(password, hash);
      if (!user || !matches) throw new UnauthorizedError('invalid credentials');
      const refreshToken = await writeTransaction((trx) => issueRefreshToken(trx, user.id, uuidv7()));
      return session(user, refreshToken);
    },

    /** A new pair for a refresh token used once; 401 `invalid refresh token` otherwise (a reuse revokes its family). */
    async refresh(input: unknown): Promise<Session> {
      const { refresh_token } = parseInput(refreshSchema, input);
      // The revocation must commit, so the transaction answers null instead of throwing.
      const rotated = await writeTransaction((trx) => rotate(trx, refresh_token));
      if (!rotated) throw new UnauthorizedError('invalid refresh token');
      return session(rotated.user, rotated.next);
    },

    /** The management API's bearer credential: the workspace the access token's user owns. */
    authenticate: (accessToken: string): Promise<string> => accessTokens.verify(accessToken),
  };
}

export type UserService = ReturnType<typeof createUserService>;
