import { Command } from 'commander';
import type { Flow } from '../../../domain/flows/flow.schema.js';
import { listCommand, showCommand } from '../../listing.js';

/** `emk flows list|show`: the automated flows, as GET /flows reads them. */
export function flowsCommand(): Command {
  return new Command('flows')
    .description('automated flows')
    .addCommand(
      listCommand<Flow>({
        plural: 'flows',
        columns: [
          { heading: 'id', cell: (f) => f.id },
          { heading: 'name', cell: (f) => f.name },
          { heading: 'status', cell: (f) => f.status },
          { heading: 'trigger', cell: (f) => f.trigger.type },
          { heading: 'steps', cell: (f) => f.steps.length, numeric: true },
        ],
        list: (services, workspaceId, _options, paging) => services.flows.list(workspaceId, paging),
      }).exitOverride(),
    )
    .addCommand(showCommand({ singular: 'flow', get: (services, workspaceId, id) => services.flows.get(workspaceId, id) }).exitOverride());
}
