import { Command } from 'commander';
import { starterList } from '../../../domain/starters/starter-catalog.js';
import { runCommand, withGlobalOptions, type GlobalOptions } from '../../run-command.js';
import { table } from '../../table.js';

type Starters = { data: ReturnType<typeof starterList> };

const render = ({ data }: Starters): string => table(['id', 'kind', 'name', 'description'], data.map((s) => [s.id, s.kind, s.name, s.description]), []);

/** `emk starters list [--json]`: the starters, as GET /api/v1/starters lists them (no database needed). */
export function startersCommand(): Command {
  return new Command('starters')
    .description('ready flows and campaign templates (POST /flows or /campaigns {"starter": id})')
    .addCommand(
      withGlobalOptions(new Command('list').description('the starters: id, kind (flow or campaign), name, description'))
        .action((options: GlobalOptions) => runCommand(options, async () => ({ data: starterList() }), render))
        .exitOverride(),
    );
}
