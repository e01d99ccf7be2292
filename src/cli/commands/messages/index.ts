import { Command } from 'commander';
import type { MessageRecord } from '../../../domain/messages/message.schema.js';
import { listCommand } from '../../listing.js';

/** The filters given, as the API's query holds them: absent ones are not keys at all (the store filters by every key). */
const onlyGiven = (filters: Record<string, string | undefined>) => Object.fromEntries(Object.entries(filters).filter(([, value]) => value !== undefined));

interface MessageFilters {
  campaign?: string;
  flow?: string;
  contact?: string;
}

/** `emk messages list [--campaign ID] [--flow ID] [--contact ID]`: the messages GET /messages lists. */
export function messagesCommand(): Command {
  return new Command('messages').description('messages sent or on their way').addCommand(
    listCommand<MessageRecord, MessageFilters>({
      plural: 'messages',
      columns: [
        { heading: 'id', cell: (m) => m.id },
        { heading: 'to', cell: (m) => m.to },
        { heading: 'subject', cell: (m) => m.subject },
        { heading: 'status', cell: (m) => m.status },
        { heading: 'sent at', cell: (m) => m.sent_at },
      ],
      filters: (command) =>
        command.option('--campaign <id>', 'only this campaign’s messages').option('--flow <id>', 'only this flow’s messages').option('--contact <id>', 'only this contact’s messages'),
      list: (services, workspaceId, options, paging) =>
        services.messages.list(workspaceId, onlyGiven({ campaign_id: options.campaign, flow_id: options.flow, contact_id: options.contact }), paging),
    }).exitOverride(),
  );
}
