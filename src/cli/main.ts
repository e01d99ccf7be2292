import { Command, CommanderError } from 'commander';
import { apiKeysCommand } from './commands/api-keys/index.js';
import { attributionCommand } from './commands/attribution/index.js';
import { backupCommand, restoreCommand } from './commands/backup.js';
import { copyDataCommand } from './commands/copy-data.js';
import { describeFailure } from './run-command.js';
import { initCommand } from './commands/init.js';
import { integrationsCommand } from './commands/integrations/index.js';
import { migrateCommand } from './commands/migrate.js';
import { productsCommand } from './commands/products/index.js';
import { serveCommand } from './commands/serve.js';
import { statusCommand } from './commands/status.js';
import { syncOrdersCommand } from './commands/orders/sync-orders.js';
import { eventsCommand } from './commands/events/index.js';
import { feedsCommand } from './commands/feeds/index.js';
import { workspacesCommand } from './commands/workspaces/index.js';
import { workerCommand } from './commands/worker.js';
import { campaignsCommand } from './commands/campaigns/index.js';
import { contactsCommand } from './commands/contacts/index.js';
import { flowsCommand } from './commands/flows/index.js';
import { messagesCommand } from './commands/messages/index.js';
import { segmentsCommand } from './commands/segments/index.js';
import { startersCommand } from './commands/starters/index.js';
import { reportCommand } from './commands/reports/index.js';
import { seedCommand } from './commands/seed/seed.js';
import { sendersCommand } from './commands/senders/index.js';
import { usersCommand } from './commands/users/index.js';
import { EMK_VERSION } from '../domain/shared/package.js';

export function buildProgram(): Command {
  const program = new Command('emk')
    .description('emk: customer data and marketing automation for online shops')
    .version(EMK_VERSION)
    .showHelpAfterError();
  for (const command of [
    serveCommand(),
    migrateCommand(),
    initCommand(),
    syncOrdersCommand(),
    productsCommand(),
    attributionCommand(),
    eventsCommand(),
    feedsCommand(),
    workspacesCommand(),
    apiKeysCommand(),
    usersCommand(),
    sendersCommand(),
    integrationsCommand(),
    workerCommand(),
    campaignsCommand(),
    flowsCommand(),
    segmentsCommand(),
    startersCommand(),
    messagesCommand(),
    reportCommand(),
    contactsCommand(),
    seedCommand(),
    statusCommand(),
    copyDataCommand(),
    backupCommand(),
    restoreCommand(),
  ]) {
    program.addCommand(command);
  }
  exitOverrideEverywhere(program);
  return program;
}

/** Usage errors throw (to become exit 2) at every depth, `emk products import --bad` included. */
function exitOverrideEverywhere(command: Command): void {
  command.exitOverride();
  for (const sub of command.commands) exitOverrideEverywhere(sub);
}

/** Exit codes: 0 done, 1 failed, 2 usage error (unknown command or flag, missing argument). */
export async function main(argv: string[]): Promise<void> {
  try {
    await buildProgram().parseAsync(argv);
  } catch (error) {
    if (error instanceof CommanderError) {
      process.exitCode = error.exitCode === 0 ? 0 : 2;
      return;
    }
    // runCommand reports its own failures; this is what escaped it: still one line, never a stack.
    process.stderr.write(`emk: ${describeFailure(error)}\n`);
    process.exitCode = 1;
  }
}
