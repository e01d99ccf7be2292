import { Command } from 'commander';
import { runCommand, withGlobalOptions, type GlobalOptions } from '../../run-command.js';

/** `emk workspaces list`: every workspace with its id and site id, to pick one for `--workspace`. */
function workspacesListCommand(): Command {
  return withGlobalOptions(new Command('list').description('list the workspaces (id, name, site id)')).action((options: GlobalOptions) =>
    runCommand(
      options,
      async (context) => ({ data: await (await context.services()).workspaces.list() }),
      ({ data }) =>
        data.length === 0
          ? 'no workspace yet: run `npx emk init`'
          : data.map((w) => `${w.id}  ${w.site_id}  ${w.name}  (created ${w.created_at})`).join('\n'),
    ),
  );
}

/** `emk workspaces <verb>`. */
export function workspacesCommand(): Command {
  return new Command('workspaces').description('workspaces').addCommand(workspacesListCommand().exitOverride());
}
