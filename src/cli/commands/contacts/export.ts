import { Command } from 'commander';
import { emailFlag } from '../../options.js';
import { namingNotFound } from '../../not-found.js';
import { runCommand, withGlobalOptions, writeStreamed, type GlobalOptions } from '../../run-command.js';

interface ExportOptions extends GlobalOptions {
  email: string;
}

/**
 * `emk contacts export --email E`: GET /contacts/{id}/export of that email's contact, as JSON on stdout, written
 * page by page as it is read (compact JSON, with or without --json).
 */
export function contactsExportCommand(): Command {
  return withGlobalOptions(
    new Command('export')
      .description('everything kept about a person (contact, events, orders, messages, consent) as JSON on stdout')
      .requiredOption('--email <email>', "the contact's email (case-insensitive)"),
  ).action((options: ExportOptions) =>
    runCommand(
      options,
      async (context) => {
        const email = emailFlag(options.email);
        const services = await context.services();
        const workspace = await context.workspace();
        return writeStreamed(await services.dataRights.exportJson(workspace.id, (await namingNotFound('contact', email, () => services.dataRights.find(workspace.id, email))).id));
      },
      () => '',
    ),
  );
}
