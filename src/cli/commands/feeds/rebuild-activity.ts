import { Command } from 'commander';
import { runCommand, withGlobalOptions, type GlobalOptions } from '../../run-command.js';

/**
 * `emk feeds rebuild-activity`: recomputes the behaviour aggregates behind the ranked feed types from stored
 * orders and product-view events (after restoring a backup, or loading data with SQL past emk's write path).
 */
export function feedsRebuildActivityCommand(): Command {
  return withGlobalOptions(
    new Command('rebuild-activity').description('recompute the sales, views and bought-together aggregates that rank feeds'),
  ).action((options: GlobalOptions) =>
    runCommand(
      options,
      async (context) => {
        const workspace = await context.workspace();
        context.log(`rebuilding the product activity of ${workspace.name}…`);
        return (await context.services()).productActivity.rebuild(workspace.id);
      },
      ({ products, since }) => `${products} ${products === 1 ? 'product' : 'products'} with sales or views since ${since}`,
    ),
  );
}
