import { createApiKeyService } from '../api-keys/api-key-service.js';
import { createIntegrationService } from '../integrations/integration-service.js';
import type { ProductService } from '../products/product-service.js';
import type { Runtime } from '../runtime/module.js';
import { createSenderService } from '../senders/sender-service.js';
import type { Clock } from '../shared/time.js';
import type { FooterCheck } from '../settings/settings-service.js';
import { createSettingsService } from '../settings/settings-service.js';
import { createUserService } from '../users/user-service.js';
import { createWorkspaceService } from '../workspaces/workspace-service.js';

/** Accounts: workspaces with their API keys and integrations, users and their tokens, sender domains, workspace settings. */
export function createAccountsModule(
  runtime: Runtime,
  { clock, templates, baseUrl, products }: { clock: Clock | undefined; templates: FooterCheck; baseUrl: string; products: Pick<ProductService, 'adoptShopCurrency'> },
) {
  const apiKeys = createApiKeyService({ ...runtime, clock });
  const integrations = createIntegrationService({ ...runtime, baseUrl, clock });
  const workspaces = createWorkspaceService({ ...runtime, apiKeys, integrations, clock });
  const users = createUserService({ ...runtime, workspaces, clock });
  const senders = createSenderService({ ...runtime, integrations, clock });
  const settings = createSettingsService({ ...runtime, senders, footers: templates, products, onChange: () => workspaces.forgetCached(), clock });
  return { apiKeys, integrations, workspaces, users, senders, settings };
}
