import type { Db } from '../db/database.js';
import type { Dialect } from '../db/dialect/dialect.js';
import { offsetOf, type Paging } from '../shared/paging.js';
import type { UserRole } from './user.schema.js';

export interface UserRow {
  id: string;
  workspace_id: string;
  email: string;
  email_key: string;
  /** Empty until a user added by an owner sets its password: no password matches it. */
  password_hash: string;
  role: UserRole;
  created_at: number;
}

export interface PasswordTokenRow {
  id: string;
  user_id: string;
  token_hash: string;
  created_at: number;
  expires_at: number;
  used_at: number | null;
}

export interface RefreshTokenRow {
  id: string;
  family_id: string;
  user_id: string;
  token_hash: string;
  created_at: number;
  expires_at: number;
  used_at: number | null;
  revoked_at: number | null;
}

export interface ConsoleSessionRow {
  id: string;
  user_id: string;
  token_hash: string;
  created_at: number;
  last_seen_at: number;
  expires_at: number;
  revoked_at: number | null;
}

/** The users, refresh_tokens, password_tokens, console_sessions and server_secrets tables; no rules. */
export function createUserStore(dialect: Dialect) {
  return {
    async insertUser(db: Db, row: UserRow): Promise<void> {
      await db('users').insert(row);
    },

    async findUserByEmailKey(db: Db, emailKey: string): Promise<UserRow | null> {
      return (await db<UserRow>('users').where({ email_key: emailKey }).first()) ?? null;
    },

    async findUserById(db: Db, id: string): Promise<UserRow | null> {
      return (await db<UserRow>('users').where({ id }).first()) ?? null;
    },

    /** The workspace's users, oldest first. */
    async listUsers(db: Db, workspaceId: string, paging: Paging): Promise<{ rows: UserRow[]; total: number }> {
      const [rows, [count]] = await Promise.all([
        db<UserRow>('users').where({ workspace_id: workspaceId }).orderBy('created_at').orderBy('id').limit(paging.perPage).offset(offsetOf(paging)),
        db('users').where({ workspace_id: workspaceId }).count({ n: '*' }),
      ]);
      return { rows, total: Number(count?.n ?? 0) };
    },

    async findUserInWorkspace(db: Db, workspaceId: string, id: string): Promise<UserRow | null> {
      return (await db<UserRow>('users').where({ workspace_id: workspaceId, id }).first()) ?? null;
    },

    /** The workspace's owners, locked, so two removals cannot each leave the other as the last. */
    async lockOwners(db: Db, workspaceId: string): Promise<string[]> {
      const rows: Array<{ id: string }> = await dialect.forUpdate(db('users').where({ workspace_id: workspaceId, role: 'owner' }).select('id'));
      return rows.map((r) => r.id);
    },

    async deleteUser(db: Db, id: string): Promise<void> {
      await db('users').where({ id }).delete();
    },

    async setPasswordHash(db: Db, id: string, passwordHash: string): Promise<void> {
      await db('users').where({ id }).update({ password_hash: passwordHash });
    },

    async insertPasswordToken(db: Db, row: PasswordTokenRow): Promise<void> {
      await db('password_tokens').insert(row);
    },

    /** Uses the token unless it was used, has expired or is unknown: its user id, else null. */
    async usePasswordToken(db: Db, tokenHash: string, at: number): Promise<string | null> {
      const row = await db<PasswordTokenRow>('password_tokens').where({ token_hash: tokenHash }).first();
      if (!row || row.used_at !== null || Number(row.expires_at) <= at) return null;
      const used = await db('password_tokens').where({ id: row.id }).whereNull('used_at').update({ used_at: at });
      return used === 1 ? row.user_id : null;
    },

    async insertRefreshToken(db: Db, row: RefreshTokenRow): Promise<void> {
      await db('refresh_tokens').insert(row);
    },

    async findRefreshToken(db: Db, tokenHash: string): Promise<RefreshTokenRow | null> {
      return (await db<RefreshTokenRow>('refresh_tokens').where({ token_hash: tokenHash }).first()) ?? null;
    },

    /** Marks the token used unless it already was: false when another request used it first. */
    async markRefreshTokenUsed(db: Db, id: string, at: number): Promise<boolean> {
      return (await db('refresh_tokens').where({ id }).whereNull('used_at').update({ used_at: at })) === 1;
    },

    /** Revokes every token of the family not revoked yet. */
    async revokeFamily(db: Db, familyId: string, at: number): Promise<void> {
      await db('refresh_tokens').where({ family_id: familyId }).whereNull('revoked_at').update({ revoked_at: at });
    },

    async insertConsoleSession(db: Db, row: ConsoleSessionRow): Promise<void> {
      await db('console_sessions').insert(row);
    },

    /** The session of the token hash with its user, in one read. */
    async findConsoleSession(db: Db, tokenHash: string): Promise<{ session: ConsoleSessionRow; user: UserRow } | null> {
      const row = await db('console_sessions as s')
        .join('users as u', 'u.id', 's.user_id')
        .where('s.token_hash', tokenHash)
        .first(
          's.id',
          's.user_id',
          's.token_hash',
          's.created_at',
          's.last_seen_at',
          's.expires_at',
          's.revoked_at',
          'u.workspace_id',
          'u.email',
          'u.email_key',
          'u.role',
          'u.created_at as user_created_at',
        );
      if (!row) return null;
      const n = (value: unknown) => dialect.readNumber(value);
      return {
        session: {
          id: row.id,
          user_id: row.user_id,
          token_hash: row.token_hash,
          created_at: n(row.created_at),
          last_seen_at: n(row.last_seen_at),
          expires_at: n(row.expires_at),
          revoked_at: row.revoked_at === null ? null : n(row.revoked_at),
        },
        user: { id: row.user_id, workspace_id: row.workspace_id, email: row.email, email_key: row.email_key, password_hash: '', role: row.role, created_at: n(row.user_created_at) },
      };
    },

    async touchConsoleSession(db: Db, id: string, at: number): Promise<void> {
      await db('console_sessions').where({ id }).update({ last_seen_at: at });
    },

    async revokeConsoleSession(db: Db, tokenHash: string, at: number): Promise<void> {
      await db('console_sessions').where({ token_hash: tokenHash }).whereNull('revoked_at').update({ revoked_at: at });
    },

    async revokeConsoleSessionsOf(db: Db, userId: string, at: number): Promise<void> {
      await db('console_sessions').where({ user_id: userId }).whereNull('revoked_at').update({ revoked_at: at });
    },

    async findSecret(db: Db, name: string): Promise<string | null> {
      const row = await db('server_secrets').where('name', name).first<{ secret: string } | undefined>('secret');
      return row?.secret ?? null;
    },

    /** Stores the secret unless the name has one: the first process to arrive wins, the others read it. */
    async insertSecretIfAbsent(db: Db, name: string, secret: string, at: number): Promise<void> {
      await db('server_secrets').insert({ name, secret, created_at: at }).onConflict('name').ignore();
    },
  };
}

export type UserStore = ReturnType<typeof createUserStore>;
