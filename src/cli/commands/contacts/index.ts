import { Command } from 'commander';
import { contactsEraseCommand } from './erase.js';
import { contactsExportCommand } from './export.js';
import { contactsImportCommand } from './import.js';

/** `emk contacts <verb>`: contact lists and the people in them; one line per verb. */
export function contactsCommand(): Command {
  return new Command('contacts')
    .description('contacts: import a list, erase or export a person')
    .addCommand(contactsImportCommand().exitOverride())
    .addCommand(contactsEraseCommand().exitOverride())
    .addCommand(contactsExportCommand().exitOverride());
}
