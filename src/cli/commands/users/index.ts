import { Command } from 'commander';
import { USER_ROLES } from '../../../domain/users/user.schema.js';
import { emailFlag, roleFlag } from '../../options.js';
import { runCommand, withGlobalOptions, type GlobalOptions } from '../../run-command.js';

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
  return new Command('users').description('users of a workspace').addCommand(usersAddCommand().exitOverride()).addCommand(usersListCommand().exitOverride());
}
