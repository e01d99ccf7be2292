import { Command } from 'commander';
import { NATIVE_PLATFORMS } from '../../../domain/integrations/integration.schema.js';
import { platformFlag } from '../../options.js';
import { runCommand, withGlobalOptions, type GlobalOptions } from '../../run-command.js';

/**
 * `emk integrations create --platform P --secret S [--shop-domain D]`: a Shopify or WooCommerce integration
 * (as `POST /api/v1/integrations`); prints the webhook URL to register with the platform.
 */
function integrationsCreateCommand(): Command {
  return withGlobalOptions(
    new Command('create')
      .description('connect a Shopify or WooCommerce store; prints the webhook URL to give the platform')
      .requiredOption('--platform <platform>', NATIVE_PLATFORMS.join(' or '))
      .requiredOption('--secret <secret>', "the platform's webhook signing secret")
      .option('--shop-domain <domain>', "the shop's domain (default: learnt from its first signed delivery)"),
  ).action((options: GlobalOptions & { platform: string; secret: string; shopDomain?: string }) =>
    runCommand(
      options,
      async (context) => {
        const input = { platform: platformFlag(options.platform), secret: options.secret, ...(options.shopDomain !== undefined ? { shop_domain: options.shopDomain } : {}) };
        const workspace = await context.workspace();
        return (await context.services()).integrations.add(workspace.id, input);
      },
      (created) => `${created.id}  ${created.platform}\nwebhook URL  ${'webhook_url' in created ? created.webhook_url : ''}`,
    ),
  );
}

/** `emk integrations <verb>`. */
export function integrationsCommand(): Command {
  return new Command('integrations').description('store integrations').addCommand(integrationsCreateCommand().exitOverride());
}
