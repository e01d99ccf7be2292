import { Command } from 'commander';
import type { Campaign } from '../../../domain/campaigns/campaign.schema.js';
import { listCommand, showCommand } from '../../listing.js';
import { campaignsSendCommand } from './send.js';

/** `emk campaigns <verb>`. */
export function campaignsCommand(): Command {
  return new Command('campaigns')
    .description('email campaigns')
    .addCommand(
      listCommand<Campaign>({
        plural: 'campaigns',
        columns: [
          { heading: 'id', cell: (c) => c.id },
          { heading: 'name', cell: (c) => c.name },
          { heading: 'status', cell: (c) => c.status },
          { heading: 'recipients', cell: (c) => c.recipients, numeric: true },
          { heading: 'sent at', cell: (c) => c.sent_at },
        ],
        list: (services, workspaceId, _options, paging) => services.campaigns.list(workspaceId, paging),
      }).exitOverride(),
    )
    .addCommand(showCommand({ singular: 'campaign', get: (services, workspaceId, id) => services.campaigns.get(workspaceId, id) }).exitOverride())
    .addCommand(campaignsSendCommand().exitOverride());
}
