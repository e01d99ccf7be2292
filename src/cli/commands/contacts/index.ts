import { Command } from 'commander';
import { contactsImportCommand } from './import.js';

/** `emk contacts <verb>`: contact lists and the people in them. */
export function contactsCommand(): Command {
  return new Command('contacts')
    .description('contacts: list import')
    .addCommand(contactsImportCommand().exitOverride());
}
