import { Command } from 'commander';
import { runCommand, withGlobalOptions, type GlobalOptions } from '../../run-command.js';

/**
 * `emk feeds reindex-filters`: rebuilds what feed filters and the title sort read (categories, metadata,
 * variant options, title keys) from the stored products — for products stored before those tables existed,
 * or loaded with SQL past emk's write path.
 */
export function feedsReindexFiltersCommand(): Command {
  return withGlobalOptions(
    new Command('reindex-filters').description('rebuild the category, metadata, variant and title indexes that feed filters read'),
  ).action((options: GlobalOptions) =>
    runCommand(
      options,
      async (context) => {
        const workspace = await context.workspace();
        context.log(`reindexing the products of ${workspace.name}…`);
        return (await context.services()).products.reindexFilters(workspace.id);
      },
      ({ products }) => `${products} ${products === 1 ? 'product' : 'products'} reindexed`,
    ),
  );
}
