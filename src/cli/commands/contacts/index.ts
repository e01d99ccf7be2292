import { Command } from 'commander';
import type { Contact } from '../../../domain/contacts/contact.schema.js';
import { listCommand, showCommand } from '../../listing.js';
import { emailFlag } from '../../options.js';
import { contactsEraseCommand } from './erase.js';
import { contactsExportCommand } from './export.js';
import { contactsImportCommand } from './import.js';

/** `emk contacts <verb>`: contact lists and the people in them; one line per verb. */
export function contactsCommand(): Command {
  return new Command('contacts')
    .description('contacts: list and show them, import a list, erase or export a person')
    .addCommand(
      listCommand<Contact, { email?: string }>({
        plural: 'contacts',
        columns: [
          { heading: 'id', cell: (c) => c.id },
          { heading: 'email', cell: (c) => c.email },
          { heading: 'subscription', cell: (c) => c.subscription_status },
          { heading: 'orders', cell: (c) => c.orders_count, numeric: true },
          { heading: 'revenue', cell: (c) => c.lifetime_revenue, numeric: true },
        ],
        filters: (command) => command.option('--email <email>', 'only the contact with this email (case-insensitive)'),
        list: (services, workspaceId, options, paging) =>
          services.contacts.list(workspaceId, options.email === undefined ? {} : { email: emailFlag(options.email) }, paging),
      }).exitOverride(),
    )
    .addCommand(showCommand({ singular: 'contact', get: (services, workspaceId, id) => services.contacts.get(workspaceId, id) }).exitOverride())
    .addCommand(contactsImportCommand().exitOverride())
    .addCommand(contactsEraseCommand().exitOverride())
    .addCommand(contactsExportCommand().exitOverride());
}
