import type { Db } from '../db/database.js';

export interface UserRow {
  id: string;
  workspace_id: string;
  email: string;
  email_key: string;
  password_hash: string;
  created_at: number;
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

/** The users, refresh_tokens and server_secrets tables; no rules. */
export function createUserStore() {
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
