import { z } from 'zod';
import { emailSchema, text } from '../shared/validate.js';

/** Passwords are hashed, never stored: any text of 8 to 1,024 characters (the bound keeps scrypt's input small). */
const newPassword = z.string().min(8).max(1024);

/** POST /api/v1/auth/register. */
export const registerSchema = z.object({
  email: emailSchema,
  password: newPassword,
  workspace_name: text(200),
});

/** POST /api/v1/auth/login: any password is checked (a rule changed later must not lock old accounts out). */
export const loginSchema = z.object({
  email: emailSchema,
  password: z.string().min(1).max(1024),
});

/** POST /api/v1/auth/refresh. */
export const refreshSchema = z.object({ refresh_token: z.string().min(1).max(200) });

/** What a user may do in its workspace: an owner everything; a member all but keys, users, settings, senders and integrations. */
export const USER_ROLES = ['owner', 'member'] as const;
export type UserRole = (typeof USER_ROLES)[number];

/** POST /api/v1/users: an owner adds a user to its workspace (a member unless told). */
export const addUserSchema = z.object({
  email: emailSchema,
  role: z.enum(USER_ROLES).default('member'),
});

/** POST /api/v1/auth/set-password: the one-time token `POST /api/v1/users` answered, and the new password. */
export const setPasswordSchema = z.object({
  token: z.string().min(1).max(200),
  password: newPassword,
});

/** `emk users set-password`: the operator sets a user's password from the shell (the password read from stdin or a prompt). */
export const setPasswordByEmailSchema = z.object({
  email: emailSchema,
  password: newPassword,
});

export interface UserRecord {
  id: string;
  email: string;
}

/** A signed-in user's credentials: a short-lived access token and a single-use refresh token. */
export interface Session {
  user: UserRecord;
  access_token: string;
  refresh_token: string;
  /** Seconds until the access token expires. */
  expires_in: number;
}

export interface Registration extends Session {
  workspace: { id: string; site_id: string };
}

export const userRecordSchema = z.object({ id: z.string(), email: z.string() }) satisfies z.ZodType<UserRecord>;

export const sessionSchema = z.object({
  user: userRecordSchema,
  access_token: z.string().describe('JWT (HS256), sent as `Authorization: Bearer …` to the management API'),
  refresh_token: z.string().describe('Single use: POST /api/v1/auth/refresh answers a new pair'),
  expires_in: z.number().int().describe('Seconds the access token stays valid'),
}) satisfies z.ZodType<Session>;

/** A user of the workspace, as `GET /api/v1/users` lists it. */
export interface WorkspaceUser extends UserRecord {
  role: UserRole;
  created_at: string;
}

export const workspaceUserSchema = userRecordSchema.extend({
  role: z.enum(USER_ROLES),
  created_at: z.string(),
}) satisfies z.ZodType<WorkspaceUser>;

/** The reply to `POST /api/v1/users`: the user, and the token it sets its password with (shown once). */
export interface AddedUser {
  user: { id: string; email: string; role: UserRole };
  set_password_token: string;
}

export const addedUserSchema = z.object({
  user: userRecordSchema.extend({ role: z.enum(USER_ROLES) }),
  set_password_token: z.string().describe('Single use, valid 72 hours: POST /api/v1/auth/set-password'),
}) satisfies z.ZodType<AddedUser>;

export const registrationSchema = sessionSchema.extend({
  workspace: z.object({ id: z.string(), site_id: z.string() }),
}) satisfies z.ZodType<Registration>;
