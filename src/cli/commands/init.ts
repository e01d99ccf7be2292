import * as prompts from '@clack/prompts';
import { Command } from 'commander';
import { UsageError } from '../../domain/errors.js';
import type { BootstrappedWorkspace } from '../../domain/workspaces/workspace-service.js';
import { CancelledError, runCommand, withGlobalOptions, type CommandContext, type GlobalOptions } from '../run-command.js';

interface InitOptions extends GlobalOptions {
  name?: string;
  domain?: string;
}

async function ask(message: string, placeholder: string): Promise<string> {
  const answer = await prompts.text({
    message,
    placeholder,
    validate: (value) => (value && value.trim() ? undefined : 'required'),
  });
  if (prompts.isCancel(answer)) throw new CancelledError();
  return answer.trim();
}

/** What is missing comes from prompts at a terminal; elsewhere it is a usage error naming the flag. */
async function gather(options: InitOptions, context: CommandContext) {
  const missing = (['name', 'domain'] as const).filter((key) => !options[key]);
  if (missing.length > 0 && !context.interactive) {
    throw new UsageError(`missing ${missing.map((k) => `--${k}`).join(' and ')} (e.g. emk init --name "My shop" --domain shop.example.com)`);
  }
  if (context.interactive) prompts.intro('emk init');
  const name = options.name ?? (await ask('Workspace name', 'My shop'));
  const domain = options.domain ?? (await ask("Shop's domain", 'shop.example.com'));
  return { name, domain };
}

/** What `emk init` prints (`emk seed` too, for the workspace it creates): keys in full, once. */
export function initResult({ workspace, apiKey, integration }: BootstrappedWorkspace) {
  return {
    workspace_id: workspace.id,
    site_id: workspace.site_id,
    api_key: apiKey.key,
    integration: {
      id: integration.id,
      api_key: integration.api_key,
      platform: integration.platform,
      domain: integration.domain,
    },
  };
}

export const describeInit = (result: ReturnType<typeof initResult>): string =>
  [
    `workspace  ${result.workspace_id}`,
    `site id    ${result.site_id}`,
    `api key    ${result.api_key}   (shown once: keep it)`,
    `webhook    /ecom/website/${result.integration.id}`,
    `  key      ${result.integration.api_key}   (shown once: keep it)`,
  ].join('\n');

export function initCommand(): Command {
  return withGlobalOptions(
    new Command('init')
      .description('create a workspace with an API key, a site id and an active Website integration')
      .option('--name <name>', 'workspace name')
      .option('--domain <domain>', "the shop's domain, for the Website integration"),
  ).action((options: InitOptions) =>
    runCommand(
      options,
      async (context) => initResult(await (await context.services()).workspaces.bootstrap(await gather(options, context))),
      describeInit,
      { createsDatabase: true },
    ),
  );
}
