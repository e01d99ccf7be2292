import { Command } from 'commander';
import type { ApiKey } from '../../../domain/api-keys/api-key-service.js';
import { namingNotFound } from '../../not-found.js';
import { runCommand, withGlobalOptions, type GlobalOptions } from '../../run-command.js';

const describeKey = (key: ApiKey) =>
  `${key.id}  ${key.prefix}…  ${key.name}  created ${key.created_at}${key.revoked_at ? `  revoked ${key.revoked_at}` : ''}`;

/** `emk api-keys create [--name N]`: a new workspace key, printed once in full (as `POST /api/v1/api-keys`). */
function apiKeysCreateCommand(): Command {
  return withGlobalOptions(
    new Command('create').description('create a workspace API key (shown once)').option('--name <name>', 'a label for the key', 'cli'),
  ).action((options: GlobalOptions & { name: string }) =>
    runCommand(
      options,
      async (context) => {
        const workspace = await context.workspace();
        return (await context.services()).apiKeys.issue(workspace.id, options.name);
      },
      (key) => `${describeKey(key)}\napi key  ${key.key}   (shown once: keep it)`,
    ),
  );
}

/** `emk api-keys list`: the workspace's keys, prefixes only. */
function apiKeysListCommand(): Command {
  return withGlobalOptions(new Command('list').description("list the workspace's API keys (prefixes only)")).action((options: GlobalOptions) =>
    runCommand(
      options,
      async (context) => {
        const workspace = await context.workspace();
        return { data: await (await context.services()).apiKeys.list(workspace.id) };
      },
      ({ data }) => (data.length === 0 ? 'no API keys' : data.map(describeKey).join('\n')),
    ),
  );
}

/** `emk api-keys revoke ID`: the key stops working at once here, within 5 s in other processes. */
function apiKeysRevokeCommand(): Command {
  return withGlobalOptions(new Command('revoke').description('revoke a workspace API key').argument('<id>', 'key id (from `emk api-keys list`)')).action(
    (id: string, options: GlobalOptions) =>
      runCommand(
        options,
        async (context) => {
          const workspace = await context.workspace();
          const services = await context.services();
          await namingNotFound('API key', id, () => services.apiKeys.revoke(workspace.id, id));
          return { id, revoked: true };
        },
        () => `revoked ${id}`,
      ),
  );
}

/** `emk api-keys <verb>`: so a lost key never locks the operator out. */
export function apiKeysCommand(): Command {
  return new Command('api-keys')
    .description('workspace API keys')
    .addCommand(apiKeysCreateCommand().exitOverride())
    .addCommand(apiKeysListCommand().exitOverride())
    .addCommand(apiKeysRevokeCommand().exitOverride());
}
