import { Command } from 'commander';
import { eventsCorrectCommand } from './correct.js';
import { eventsImportCommand } from './import.js';

/** `emk events <verb>`: batch import and correction of events from files. */
export function eventsCommand(): Command {
  return new Command('events')
    .description('batch event import and correction from CSV or JSON Lines')
    .addCommand(eventsImportCommand().exitOverride())
    .addCommand(eventsCorrectCommand().exitOverride());
}
