import { createApiKeyService } from './api-keys/api-key-service.js';
import { createApiKeyStore } from './api-keys/api-key-store.js';
import { createCartService } from './carts/cart-service.js';
import { createCartStore } from './carts/cart-store.js';
import { createAttributionService } from './attribution/attribution-service.js';
import { createAttributionStore } from './attribution/attribution-store.js';
import { createContactService } from './contacts/contact-service.js';
import { createContactStore } from './contacts/contact-store.js';
import type { Database } from './db/database.js';
import type { Clock } from './shared/time.js';
import { WriteBatcher } from './db/write-batcher.js';
import { createEventService } from './events/event-service.js';
import { createEventStore } from './events/event-store.js';
import { createFeedService } from './feeds/feed-service.js';
import { createFeedStore } from './feeds/feed-store.js';
import { createIdentityTokenService } from './identity-tokens/identity-token-service.js';
import { createIdentityTokenStore } from './identity-tokens/identity-token-store.js';
import { createIntegrationService } from './integrations/integration-service.js';
import { createIntegrationStore } from './integrations/integration-store.js';
import { createOrderService } from './orders/order-service.js';
import { createOrderStore } from './orders/order-store.js';
import { createOrderUpsert } from './orders/order-upsert.js';
import { createProductService } from './products/product-service.js';
import { createProductStore } from './products/product-store.js';
import { createProductActivity } from './recommendations/product-activity.js';
import { createProductActivityStore } from './recommendations/product-activity-store.js';
import { createRanker } from './recommendations/rankings.js';
import { createDatabaseCounterStore, createMemoryCounterStore } from './rate-limits/counter-store.js';
import { createRateLimiter } from './rate-limits/rate-limiter.js';
import { createSettingsService } from './settings/settings-service.js';
import { createSettingsStore } from './settings/settings-store.js';
import { createShipmentService } from './shipments/shipment-service.js';
import { createShipmentStore } from './shipments/shipment-store.js';
import { createTriggerOutbox } from './triggers/trigger-outbox.js';
import { createWebhookDeliveryStore } from './webhook/webhook-delivery-store.js';
import { createWebhookService } from './webhook/webhook-service.js';
import { createWorkspaceService } from './workspaces/workspace-service.js';
import { createWorkspaceStore } from './workspaces/workspace-store.js';

/**
 * The one composition root: the server and every CLI command build their services here. `clock` feeds the
 * caches and the rate-limit windows (tests move it by hand).
 */
export function createServices(db: Database, options: { clock?: Clock } = {}) {
  const { clock } = options;
  const { knex, dialect } = db;
  const writer = new WriteBatcher(db, { concurrency: dialect.writeConcurrency });
  const contactStore = createContactStore(dialect);
  const eventStore = createEventStore(dialect);
  const productActivityStore = createProductActivityStore(dialect);
  const productActivity = createProductActivity({
    knex,
    writeTransaction: db.writeTransaction,
    store: productActivityStore,
  });
  const outbox = createTriggerOutbox(dialect);
  const apiKeys = createApiKeyService({ knex, store: createApiKeyStore(), writeTransaction: db.writeTransaction, clock });
  const integrations = createIntegrationService({
    knex,
    store: createIntegrationStore(dialect),
    writeTransaction: db.writeTransaction,
    clock,
  });
  const workspaces = createWorkspaceService({
    knex,
    writeTransaction: db.writeTransaction,
    store: createWorkspaceStore(dialect),
    apiKeys,
    integrations,
    clock,
  });
  const settings = createSettingsService({
    knex,
    writer,
    store: createSettingsStore(dialect),
    onChange: () => workspaces.forgetCached(),
    clock,
  });
  const identityTokens = createIdentityTokenService({ knex, store: createIdentityTokenStore(), contactStore });
  const attribution = createAttributionService({
    knex,
    writeTransaction: db.writeTransaction,
    writer,
    store: createAttributionStore(dialect),
    contactStore,
    settings,
  });
  const contacts = createContactService({
    knex,
    writer,
    contactStore,
    eventStore,
    contactLimitOf: async (db, workspaceId) => (await settings.cached(workspaceId, db)).contact_limit,
  });
  const { ensureContacts } = contacts;
  const shipments = createShipmentService({
    writer,
    store: createShipmentStore(),
    contactStore,
    ensureContacts,
    eventStore,
    outbox,
  });
  const events = createEventService({
    knex,
    writer,
    eventStore,
    contactStore,
    ensureContacts,
    outbox,
    applyShippingEvents: shipments.applyShippingEvents,
    activity: productActivity,
    identityTokens,
  });
  const productStore = createProductStore(dialect);
  const products = createProductService({
    knex,
    writeTransaction: db.writeTransaction,
    products: productStore,
  });
  const feeds = createFeedService({
    knex,
    writeTransaction: db.writeTransaction,
    feeds: createFeedStore(dialect),
    products: productStore,
    ranker: createRanker({ dialect, activity: productActivity, activityStore: productActivityStore }),
  });
  const orderStore = createOrderStore(dialect);
  const orderUpsert = createOrderUpsert({
    orderStore,
    outbox,
    attributeOrders: attribution.attributeOrders,
    activity: productActivity,
  });
  const orders = createOrderService({
    knex,
    writer,
    writeTransaction: db.writeTransaction,
    orderStore,
    contactStore,
    ensureContacts,
    upsert: orderUpsert,
    outbox,
    activity: productActivity,
  });
  const carts = createCartService({ store: createCartStore(dialect), outbox });
  const webhook = createWebhookService({
    writer,
    deliveryStore: createWebhookDeliveryStore(),
    contacts,
    events,
    orderUpsert,
    carts,
    applyProductEvent: products.applyWebhookEvent,
    resolveIdentityToken: (trx, workspaceId, token) => identityTokens.resolve(workspaceId, token, trx),
  });
  // Processes sharing a database share their budgets through it; a lone embedded process keeps them in memory.
  const rateLimiter = createRateLimiter(
    dialect.sharedByProcesses ? createDatabaseCounterStore(db.relaxedKnex()) : createMemoryCounterStore(),
    clock,
  );

  let closing: Promise<void> | null = null;
  return {
    db,
    writer,
    apiKeys,
    integrations,
    workspaces,
    settings,
    identityTokens,
    attribution,
    contacts,
    events,
    shipments,
    products,
    feeds,
    orders,
    carts,
    webhook,
    outbox,
    productActivity,
    rateLimiter,
    /** Finishes pending writes, then closes the database. Safe to call more than once. */
    close() {
      closing ??= (async () => {
        await writer.close();
        await rateLimiter.close();
        await db.close();
      })();
      return closing;
    },
  };
}

export type Services = ReturnType<typeof createServices>;
