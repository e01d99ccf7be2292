import { Command } from 'commander';
import type { Sender } from '../../../domain/senders/sender.schema.js';
import { runCommand, withGlobalOptions, type GlobalOptions } from '../../run-command.js';

const describeSender = (sender: Sender) =>
  [`${sender.id}  ${sender.domain}  DKIM selector ${sender.dkim.selector}`, ...sender.dns.map((r) => `  ${r.type}  ${r.name}  "${r.value}"`)].join('\n');

/** `emk senders add --domain D`: a sender domain with its DKIM key and the DNS records to publish (as `POST /api/v1/senders`). */
function sendersAddCommand(): Command {
  return withGlobalOptions(
    new Command('add').description('add a sender domain; prints the DNS records to publish').requiredOption('--domain <domain>', 'the domain from_email addresses use'),
  ).action((options: GlobalOptions & { domain: string }) =>
    runCommand(
      options,
      async (context) => {
        const workspace = await context.workspace();
        return (await context.services()).senders.add(workspace.id, { domain: options.domain });
      },
      describeSender,
    ),
  );
}

/** `emk senders list`: the sender domains an owner added, with their DNS records. */
function sendersListCommand(): Command {
  return withGlobalOptions(new Command('list').description("list the workspace's sender domains")).action((options: GlobalOptions) =>
    runCommand(
      options,
      async (context) => {
        const workspace = await context.workspace();
        return (await context.services()).senders.list(workspace.id);
      },
      ({ data }) => (data.length === 0 ? 'no sender domains added (the workspace\'s own domain counts without one)' : data.map(describeSender).join('\n')),
    ),
  );
}

/** `emk senders <verb>`. */
export function sendersCommand(): Command {
  return new Command('senders').description('sender domains').addCommand(sendersAddCommand().exitOverride()).addCommand(sendersListCommand().exitOverride());
}
