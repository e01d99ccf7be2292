import { Command } from 'commander';
import { campaignsSendCommand } from './send.js';

/** `emk campaigns <verb>`. */
export function campaignsCommand(): Command {
  return new Command('campaigns').description('email campaigns').addCommand(campaignsSendCommand().exitOverride());
}
