import { Command } from 'commander';
import { feedsCreateCommand } from './create.js';
import { feedsListCommand } from './list.js';
import { feedsPreviewCommand } from './preview.js';
import { feedsRebuildActivityCommand } from './rebuild-activity.js';
import { feedsReindexFiltersCommand } from './reindex-filters.js';

/** `emk feeds <verb>`: saved product feeds (the feed API from the shell). */
export function feedsCommand(): Command {
  return new Command('feeds')
    .description('saved product feeds')
    .addCommand(feedsCreateCommand().exitOverride())
    .addCommand(feedsListCommand().exitOverride())
    .addCommand(feedsPreviewCommand().exitOverride())
    .addCommand(feedsRebuildActivityCommand().exitOverride())
    .addCommand(feedsReindexFiltersCommand().exitOverride());
}
