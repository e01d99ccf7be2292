import { randomBytes } from 'node:crypto';
import type { Knex } from 'knex';
import type { Database } from '../db/database.js';
import type { Dialect } from '../db/dialect/dialect.js';
import { UnauthorizedError } from '../errors.js';
import { uuidv7 } from '../shared/ids.js';
import { systemClock, type Clock } from '../shared/time.js';
import { createUserStore } from './user-store.js';

const ISSUER = 'emk';
const AUDIENCE = 'emk:management';
const SECRET_NAME = 'access_tokens';

/** jose, loaded by the first token issued or checked: commands that never touch a token never load it. */
const loadJose = () => import('jose');

/**
 * Access tokens: JWTs (HS256) naming the user (`sub`) and the workspace it owns (`wid`), valid `ttlSeconds`.
 * The signing key is the deployment's, kept in the database (`server_secrets`, created on first use), so every
 * process on one database accepts the tokens of the others. Nothing per token is stored.
 */
export function createAccessTokens(deps: {
  knex: Knex;
  writeTransaction: Database['writeTransaction'];
  dialect: Dialect;
  ttlSeconds: number;
  clock?: Clock;
}) {
  const { knex, writeTransaction, ttlSeconds } = deps;
  const store = createUserStore(deps.dialect);
  const now = deps.clock ?? systemClock;
  let signingKey: Promise<Uint8Array> | null = null;

  async function loadKey(): Promise<Uint8Array> {
    let secret = await store.findSecret(knex, SECRET_NAME);
    if (!secret) {
      await writeTransaction((trx) => store.insertSecretIfAbsent(trx, SECRET_NAME, randomBytes(32).toString('hex'), now()));
      secret = (await store.findSecret(knex, SECRET_NAME))!;
    }
    return Buffer.from(secret, 'hex');
  }

  // Read once per process; a failed read (database away) is tried again by the next caller.
  const key = () =>
    (signingKey ??= loadKey().catch((error: unknown) => {
      signingKey = null;
      throw error;
    }));

  return {
    ttlSeconds,

    async issue(userId: string, workspaceId: string): Promise<string> {
      const { SignJWT } = await loadJose();
      const issuedAt = Math.floor(now() / 1000);
      return new SignJWT({ wid: workspaceId })
        .setProtectedHeader({ alg: 'HS256', typ: 'JWT' })
        .setIssuer(ISSUER)
        .setAudience(AUDIENCE)
        .setSubject(userId)
        // Every token its own, even two issued in one second.
        .setJti(uuidv7())
        .setIssuedAt(issuedAt)
        .setExpirationTime(issuedAt + ttlSeconds)
        .sign(await key());
    },

    /** The user and workspace the token names; 401 `invalid access token` when it is expired, tampered or no token of ours. */
    async verify(token: string): Promise<{ userId: string; workspaceId: string }> {
      const [{ errors, jwtVerify }, secret] = await Promise.all([loadJose(), key()]);
      try {
        const { payload } = await jwtVerify(token, secret, {
          algorithms: ['HS256'],
          issuer: ISSUER,
          audience: AUDIENCE,
          requiredClaims: ['sub', 'exp'],
          currentDate: new Date(now()),
        });
        if (typeof payload.wid === 'string' && typeof payload.sub === 'string') return { userId: payload.sub, workspaceId: payload.wid };
      } catch (error) {
        if (!(error instanceof errors.JOSEError)) throw error;
      }
      throw new UnauthorizedError('invalid access token');
    },
  };
}

export type AccessTokens = ReturnType<typeof createAccessTokens>;
