import * as prompts from '@clack/prompts';
import { Command } from 'commander';
import { UsageError } from '../../../domain/errors.js';
import { emailFlag } from '../../options.js';
import { namingNotFound } from '../../not-found.js';
import { CancelledError, runCommand, withGlobalOptions, type GlobalOptions } from '../../run-command.js';

interface EraseOptions extends GlobalOptions {
  email: string;
  yes?: boolean;
}

/**
 * `emk contacts erase --email E [--yes]`: DELETE /contacts/{id} for the contact of that email. It cannot be
 * undone, so it asks at a terminal; elsewhere (or with --json) only --yes confirms it.
 */
export function contactsEraseCommand(): Command {
  return withGlobalOptions(
    new Command('erase')
      .description("erase a person: events, messages, carts, consent history and memberships go; orders stay, anonymised")
      .requiredOption('--email <email>', "the contact's email (case-insensitive)")
      .option('--yes', 'erase without asking'),
  ).action((options: EraseOptions) =>
    runCommand(
      options,
      async (context) => {
        const email = emailFlag(options.email);
        if (!options.yes && !context.interactive) throw new UsageError('erasing cannot be undone: pass --yes to confirm it');
        const services = await context.services();
        const workspace = await context.workspace();
        const contact = await namingNotFound('contact', email, () => services.dataRights.find(workspace.id, email));
        if (!options.yes) {
          const answer = await prompts.confirm({ message: `Erase ${contact.email} (${contact.id})? This cannot be undone.`, initialValue: false });
          if (prompts.isCancel(answer) || !answer) throw new CancelledError();
        }
        await services.dataRights.erase(workspace.id, contact.id);
        return { id: contact.id, email: contact.email, erased: true };
      },
      (result) => `erased contact ${result.id} (${result.email}); its orders stay, anonymised`,
    ),
  );
}
