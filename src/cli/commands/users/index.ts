import * as prompts from '@clack/prompts';
import { Command } from 'commander';
import { UsageError } from '../../../domain/errors.js';
import { USER_ROLES } from '../../../domain/users/user.schema.js';
import { emailFlag, roleFlag } from '../../options.js';
import { CancelledError, runCommand, withGlobalOptions, type CommandContext, type GlobalOptions } from '../../run-command.js';

/** The most of stdin `--password-stdin` reads: a password is at most 1,024 characters. */
const PASSWORD_STDIN_LIMIT = 4_096;

/** The first line of stdin (its line break dropped), refused past PASSWORD_STDIN_LIMIT bytes. */
async function passwordFromStdin(): Promise<string> {
  let text = '';
  for await (const chunk of process.stdin) {
    text += String(chunk);
    if (text.length > PASSWORD_STDIN_LIMIT) throw new UsageError('--password-stdin: the password is longer than 1024 characters');
  }
  return text.split(/\r?\n/, 1)[0] ?? '';
}

/** The password: from stdin with --password-stdin, else a hidden prompt at a terminal, else a usage error naming the flag. */
async function newPassword(options: { passwordStdin?: boolean }, context: CommandContext): Promise<string> {
  if (options.passwordStdin) return passwordFromStdin();
  if (!context.interactive) throw new UsageError('missing --password-stdin (e.g. printf %s "$PASSWORD" | emk users set-password --email E --password-stdin)');
  const answer = await prompts.password({ message: 'New password (at least 8 characters)', validate: (value) => ((value ?? '').length >= 8 ? undefined : 'at least 8 characters') });
  if (prompts.isCancel(answer)) throw new CancelledError();
  return answer;
}

/** `emk users set-password --email E [--password-stdin]`: the operator sets a user's password (its console sessions end). */
function usersSetPasswordCommand(): Command {
  return withGlobalOptions(
    new Command('set-password')
      .description("set a user's password (for the console and /api/v1/auth/login); read from stdin or a hidden prompt")
      .requiredOption('--email <email>', "the user's email address")
      .option('--password-stdin', 'read the password from the first line of stdin (no prompt)'),
  ).action((options: GlobalOptions & { email: string; passwordStdin?: boolean }) =>
    runCommand(
      options,
      async (context) => {
        const email = emailFlag(options.email);
        const password = await newPassword(options, context);
        const workspace = await context.workspace();
        return { user: await (await context.services()).users.setPasswordOf(workspace.id, { email, password }) };
      },
      ({ user }) => `password set for ${user.email} (${user.role}): sign in at /console`,
    ),
  );
}

/** `emk users add --email E [--role R]`: a user of the workspace and its one-time set-password token (as `POST /api/v1/users`). */
function usersAddCommand(): Command {
  return withGlobalOptions(
    new Command('add')
      .description('add a user to the workspace; prints its one-time set-password token')
      .requiredOption('--email <email>', "the user's email address")
      .option('--role <role>', `${USER_ROLES.join(' or ')}`, 'member'),
  ).action((options: GlobalOptions & { email: string; role: string }) =>
    runCommand(
      options,
      async (context) => {
        const input = { email: emailFlag(options.email), role: roleFlag(options.role) };
        const workspace = await context.workspace();
        return (await context.services()).users.add(workspace.id, input);
      },
      ({ user, set_password_token }) =>
        `${user.id}  ${user.email}  ${user.role}\nset-password token  ${set_password_token}   (once, within 72 hours: POST /api/v1/auth/set-password)`,
    ),
  );
}

/** `emk users list`: the workspace's users and their roles. */
function usersListCommand(): Command {
  return withGlobalOptions(new Command('list').description("list the workspace's users")).action((options: GlobalOptions) =>
    runCommand(
      options,
      async (context) => {
        const workspace = await context.workspace();
        return (await context.services()).users.list(workspace.id, { page: 1, perPage: 500 });
      },
      ({ data }) => (data.length === 0 ? 'no users' : data.map((u) => `${u.id}  ${u.email}  ${u.role}  (added ${u.created_at})`).join('\n')),
    ),
  );
}

/** `emk users <verb>`. */
export function usersCommand(): Command {
  return new Command('users').description('users of a workspace').addCommand(usersAddCommand().exitOverride()).addCommand(usersListCommand().exitOverride())
    .addCommand(usersSetPasswordCommand().exitOverride());
}
