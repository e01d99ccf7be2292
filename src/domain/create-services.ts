import { createAccountsModule } from './accounts/module.js';
import { createAutomationModule } from './automation/module.js';
import { createCatalogModule } from './catalog/module.js';
import { createCommerceModule } from './commerce/module.js';
import { createContentModule } from './content/module.js';
import type { Database } from './db/database.js';
import { createIngestModule } from './ingest/module.js';
import { createOperationsModule } from './operations/module.js';
import { createPlatformsModule } from './platforms/module.js';
import { createRuntime } from './runtime/module.js';
import { createSendingModule, DEFAULT_EMAIL, type EmailOptions } from './sending/module.js';
import type { Clock } from './shared/time.js';
import type { FactSetAside } from './triggers/trigger-dispatcher.js';

export { emailOptionsOf, type EmailOptions } from './sending/module.js';

export interface ServiceOptions {
  /** Feeds the caches and the rate-limit windows (tests move it by hand). */
  clock?: Clock;
  email?: EmailOptions;
  /** Where a trigger fact the worker had to set aside is reported (the host's log; unset: nowhere). */
  onFactSetAside?: FactSetAside;
}

/**
 * The one composition root: the server, the worker and every CLI command build their services here. Each
 * area module builds its nouns from what the areas before it made (docs/architecture.md, the module map).
 */
export function createServices(db: Database, options: ServiceOptions = {}) {
  const { clock } = options;
  const runtime = createRuntime(db);
  const email = options.email ?? DEFAULT_EMAIL;
  const catalog = createCatalogModule(runtime);
  const content = createContentModule({ ...catalog, templateLimits: email.templateLimits });
  const accounts = createAccountsModule(runtime, { ...content, clock, baseUrl: email.baseUrl, products: catalog.products });
  const ingest = createIngestModule(runtime, { ...accounts, ...catalog, clock });
  const commerce = createCommerceModule(runtime, { ...accounts, ...catalog, ...ingest });
  const sending = createSendingModule(runtime, { ...content, ...accounts, ...catalog, ...ingest, ...commerce, email, clock });
  const automation = createAutomationModule(runtime, { ...content, ...ingest, ...commerce, ...sending, senders: accounts.senders, feeds: catalog.feeds, clock, onFactSetAside: options.onFactSetAside, webhooks: email.webhooks });
  const operations = createOperationsModule(runtime, { ...catalog, ...ingest, ...commerce, ...sending, ...automation, clock });
  const platforms = createPlatformsModule(runtime, { ...accounts, ...catalog, ...ingest, ...commerce, ...operations });

  let closing: Promise<void> | null = null;
  return {
    ...runtime,
    ...accounts,
    ...catalog,
    ...content,
    ...ingest,
    ...commerce,
    ...platforms,
    ...sending,
    ...automation,
    ...operations,
    /** Finishes pending writes, then closes the relay's connections and the database. Safe to call more than once. */
    close() {
      closing ??= (async () => {
        await runtime.writer.close();
        await runtime.tableGrowth.settled();
        await sending.transport.close();
        await content.templates.close();
        await operations.rateLimiter.close();
        await db.close();
      })();
      return closing;
    },
  };
}

export type Services = ReturnType<typeof createServices>;
