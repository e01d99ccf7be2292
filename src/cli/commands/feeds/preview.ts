import { Command } from 'commander';
import { UsageError, ValidationError } from '../../../domain/errors.js';
import type { FeedReply } from '../../../domain/feeds/feed-service.js';
import { namingNotFound } from '../../not-found.js';
import { runCommand, withGlobalOptions, type GlobalOptions } from '../../run-command.js';
import { describeFeed, describeProduct } from './format.js';

interface PreviewOptions extends GlobalOptions {
  n: string;
}

/** `--json` prints the body of `GET /api/v1/product-feeds/{id}?preview=N`: `{"feed","product_count","products"}`. */
export function feedsPreviewCommand(): Command {
  return withGlobalOptions(
    new Command('preview')
      .description('show a feed and its first products in plain order')
      .argument('<id>', 'feed id')
      .option('--n <count>', 'how many products (1 to 100)', '5'),
  ).action((id: string, options: PreviewOptions) =>
    runCommand(
      options,
      async (context): Promise<FeedReply> => {
        if (!/^\d+$/.test(options.n.trim())) throw new UsageError(`--n must be a whole number (got ${options.n})`);
        const services = await context.services();
        const workspace = await context.workspace();
        try {
          return await namingNotFound('feed', id, () => services.feeds.get(workspace.id, id, { preview: options.n }));
        } catch (error) {
          if (error instanceof ValidationError) throw new UsageError(error.message.replace('preview', '--n'));
          throw error;
        }
      },
      (result) => [describeFeed(result), ...(result.products ?? []).map(describeProduct)].join('\n'),
    ),
  );
}
