import { Command } from 'commander';
import { attributionRecomputeCommand } from './recompute.js';

/** `emk attribution <verb>`: last-touch attribution of orders. */
export function attributionCommand(): Command {
  return new Command('attribution')
    .description('last-touch attribution of orders to campaigns and flows')
    .addCommand(attributionRecomputeCommand().exitOverride());
}
