import { Command } from 'commander';
import { contactsEraseCommand } from './erase.js';
import { contactsExportCommand } from './export.js';

/** `emk contacts <verb>`: one line per verb. */
export function contactsCommand(): Command {
  return new Command('contacts')
    .description('contacts: erase or export a person')
    .addCommand(contactsEraseCommand().exitOverride())
    .addCommand(contactsExportCommand().exitOverride());
}
