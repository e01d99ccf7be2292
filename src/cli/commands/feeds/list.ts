import { Command } from 'commander';
import type { FeedReply } from '../../../domain/feeds/feed-service.js';
import { MAX_PER_PAGE } from '../../../domain/shared/paging.js';
import type { Page } from '../../../domain/shared/paging.js';
import { runCommand, withGlobalOptions, type GlobalOptions } from '../../run-command.js';
import { describeFeed } from './format.js';

/** `--json` prints the API's list body: `{"data":[{"feed","product_count"}],"meta"}` (all feeds, in pages of 500). */
export function feedsListCommand(): Command {
  return withGlobalOptions(new Command('list').description('list saved product feeds with their product counts')).action(
    (options: GlobalOptions) =>
      runCommand(
        options,
        async (context): Promise<Page<FeedReply>> => {
          const services = await context.services();
          const workspace = await context.workspace();
          const data: FeedReply[] = [];
          let total = 0;
          for (let page = 1; ; page++) {
            const result = await services.feeds.list(workspace.id, { page, perPage: MAX_PER_PAGE });
            data.push(...result.data);
            total = result.meta.total;
            if (result.data.length < MAX_PER_PAGE) break;
          }
          return { data, meta: { page: 1, perPage: data.length, total } };
        },
        (result) => (result.data.length === 0 ? 'no feeds' : result.data.map(describeFeed).join('\n')),
      ),
  );
}
