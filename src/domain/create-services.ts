import { createApiKeyService } from './api-keys/api-key-service.js';
import { createApiKeyStore } from './api-keys/api-key-store.js';
import { createCartService } from './carts/cart-service.js';
import { createCartStore } from './carts/cart-store.js';
import { createAttributionService } from './attribution/attribution-service.js';
import { createAttributionStore } from './attribution/attribution-store.js';
import { createContactService } from './contacts/contact-service.js';
import { createContactStore } from './contacts/contact-store.js';
import type { Database } from './db/database.js';
import type { EmkConfig } from './config.js';
import type { Clock } from './shared/time.js';
import { WriteBatcher } from './db/write-batcher.js';
import { createTableGrowth } from './db/table-growth.js';
import { createKnownContacts } from './contacts/known-contacts.js';
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
import { createOutboxPruner } from './triggers/outbox-pruner.js';
import { createTriggerDispatcher } from './triggers/trigger-dispatcher.js';
import { createWebhookDeliveryStore } from './webhook/webhook-delivery-store.js';
import { createWebhookService } from './webhook/webhook-service.js';
import { createWorkspaceService } from './workspaces/workspace-service.js';
import { createWorkspaceStore } from './workspaces/workspace-store.js';
import { createJobQueue } from './jobs/job-queue.js';
import { createJobStore } from './jobs/job-store.js';
import { createSuppressionService } from './suppressions/suppression-service.js';
import { createSuppressionStore } from './suppressions/suppression-store.js';
import { createTemplates } from './templates/template-engine.js';
import { createBlockProductSource } from './templates/product-block-source.js';
import { createTransport } from './delivery/transport.js';
import { createMessageStore } from './messages/message-store.js';
import { createMessageService } from './messages/message-service.js';
import { createTrackingService } from './tracking/tracking-service.js';
import { createCampaignStore } from './campaigns/campaign-store.js';
import { createCampaignService } from './campaigns/campaign-service.js';
import { createReportService } from './reports/report-service.js';
import { createSendReports } from './reports/send-report.js';
import { createConsentService } from './consent/consent-service.js';
import { createFlowStore } from './flows/flow-store.js';
import { createFlowEngine } from './flows/flow-engine.js';
import { createFlowService } from './flows/flow-service.js';
import { createTriggerContexts } from './flows/trigger-context.js';
import { parseConditions, type SegmentConditions } from './segments/segment.schema.js';
import { createSegmentService } from './segments/segment-service.js';
import { createSegmentStore } from './segments/segment-store.js';
import { createAccessTokens } from './users/access-tokens.js';
import { createUserService } from './users/user-service.js';
import { createUserStore } from './users/user-store.js';
import { createDataRightsService } from './data-rights/data-rights-service.js';
import { createDataRightsStore } from './data-rights/data-rights-store.js';
import { createSegmentIngestService } from './segment-ingest/segment-ingest-service.js';
import { createSegmentIngestStore } from './segment-ingest/segment-ingest-store.js';

/** How mail leaves and where its links point (docs/email.md, Delivery). */
export interface EmailOptions {
  /** The public root of tracking, unsubscribe and preferences links. */
  baseUrl: string;
  /** Unset: every message is captured in the database. */
  smtpUrl?: string | undefined;
  smtpRatePerSecond?: number;
  smtpMaxConnections?: number;
}

const DEFAULT_EMAIL: EmailOptions = { baseUrl: 'http://localhost:8080' };

export const emailOptionsOf = (config: EmkConfig): EmailOptions => ({
  baseUrl: config.baseUrl,
  smtpUrl: config.smtpUrl,
  smtpRatePerSecond: config.smtpRatePerSecond,
  smtpMaxConnections: config.smtpMaxConnections,
});

/**
 * The one composition root: the server, the worker and every CLI command build their services here. `clock`
 * feeds the caches and the rate-limit windows (tests move it by hand).
 */
export function createServices(db: Database, options: { clock?: Clock; email?: EmailOptions } = {}) {
  const { clock } = options;
  const email = options.email ?? DEFAULT_EMAIL;
  const { knex, dialect } = db;
  const writer = new WriteBatcher(db, { concurrency: dialect.writeConcurrency });
  const tableGrowth = createTableGrowth(knex, dialect);
  const contactStore = createContactStore(dialect);
  const eventStore = createEventStore(dialect);
  const productActivityStore = createProductActivityStore(dialect);
  const productActivity = createProductActivity({
    knex,
    writeTransaction: db.writeTransaction,
    store: productActivityStore,
  });
  const jobs = createJobQueue({ db, store: createJobStore(dialect) });
  // A committed fact wakes this process's worker at once (other processes' find it by their poll) and counts
  // toward the outbox's statistics.
  const outbox = createTriggerOutbox(dialect, {
    onCommit: (facts) => {
      jobs.wake('facts');
      tableGrowth.added('trigger_outbox', facts);
    },
  });
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
  const userStore = createUserStore();
  const users = createUserService({
    knex,
    writeTransaction: db.writeTransaction,
    store: userStore,
    workspaces,
    // Access tokens live 15 minutes (docs/api/auth.md).
    accessTokens: createAccessTokens({ knex, writeTransaction: db.writeTransaction, store: userStore, ttlSeconds: 15 * 60, clock }),
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
  const attributionStore = createAttributionStore(dialect);
  const attribution = createAttributionService({
    knex,
    writeTransaction: db.writeTransaction,
    writer,
    store: attributionStore,
    contactStore,
    settings,
  });
  const suppressionStore = createSuppressionStore(dialect);
  const contacts = createContactService({
    knex,
    writer,
    writeTransaction: db.writeTransaction,
    contactStore,
    eventStore,
    suppressionStore,
    outbox,
    contactLimitOf: async (db, workspaceId) => (await settings.cached(workspaceId, db)).contact_limit,
    tableGrowth,
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
    tableGrowth,
    knownContacts: createKnownContacts(dialect),
  });
  const segmentIngest = createSegmentIngestService({
    writer,
    store: createSegmentIngestStore(dialect),
    contactStore,
    eventStore,
    outbox,
    workspaces,
    writeContacts: contacts.writeContacts,
    recordEvents: events.recordEvents,
  });
  const productStore = createProductStore(dialect);
  const products = createProductService({
    knex,
    writeTransaction: db.writeTransaction,
    products: productStore,
    categoriesChanged: productActivity.categoriesChanged,
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
    tableGrowth,
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
    tableGrowth,
  });
  const cartStore = createCartStore(dialect);
  const carts = createCartService({ store: cartStore, outbox });
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
  const suppressions = createSuppressionService({
    knex,
    writeTransaction: db.writeTransaction,
    store: suppressionStore,
  });
  const templates = createTemplates({ blockProducts: createBlockProductSource({ feeds }) });
  const transport = createTransport({
    smtpUrl: email.smtpUrl,
    ratePerSecond: email.smtpRatePerSecond,
    maxConnections: email.smtpMaxConnections,
  });
  const messageStore = createMessageStore(dialect);
  const tracking = createTrackingService({
    knex,
    writer,
    baseUrl: email.baseUrl,
    messageStore,
    identityTokens,
    attribution,
    events,
    clock,
  });
  const messages = createMessageService({
    knex,
    writeTransaction: db.writeTransaction,
    store: messageStore,
    templates,
    transport,
    tracking,
    suppressions,
    settings,
    workspaces,
    baseUrl: email.baseUrl,
  });
  const segments = createSegmentService({
    knex,
    writeTransaction: db.writeTransaction,
    store: createSegmentStore(dialect),
    outbox,
    jobs,
    clock,
  });
  const campaignStore = createCampaignStore(dialect);
  const sendReport = createSendReports({ messageStore, attributionStore, orderStore });
  const campaigns = createCampaignService({
    knex,
    writeTransaction: db.writeTransaction,
    store: campaignStore,
    messageStore,
    messages,
    templates,
    jobs,
    contactStore,
    sendReport,
    segmentExists: segments.exists,
  });
  const flowStore = createFlowStore(dialect);
  const flowEngine = createFlowEngine({
    knex,
    writeTransaction: db.writeTransaction,
    store: flowStore,
    outbox,
    jobs,
    contexts: createTriggerContexts({ eventStore, orderStore, cartStore }),
    contactStore,
    messageStore,
    messages,
    filters: (db, workspaceId, conditions, contactIds) => segments.matching(db, workspaceId, conditions as SegmentConditions, contactIds),
  });
  const flows = createFlowService({
    knex,
    writeTransaction: db.writeTransaction,
    store: flowStore,
    engine: flowEngine,
    templates,
    segments: { checkConditions: parseConditions, exists: segments.exists },
    outbox,
    sendReport,
  });
  // The outbox consumer: each noun that acts on trigger facts (flows, segments) is one consumer.
  const dispatcher = createTriggerDispatcher({
    db,
    outbox,
    consumers: [segments.consumeFacts, flowEngine.consumeFacts],
    onFailure: (fact, error) =>
      process.stderr.write(`emk worker: trigger fact ${fact.id} (${fact.triggerType}) set aside: ${error instanceof Error ? error.message : String(error)}\n`),
  });
  const outboxPruner = createOutboxPruner({ db, oldestFactInUse: flowEngine.oldestFactInUse, clock });
  const reports = createReportService({ knex, orderStore, campaignStore, flowStore });
  const consent = createConsentService({ knex, tracking, contactStore, contacts, workspaces });
  const dataRights = createDataRightsService({
    knex,
    writeTransaction: db.writeTransaction,
    store: createDataRightsStore(outbox),
    contactStore,
    lists: { events, orders, messages },
    activity: productActivity,
    activityStore: productActivityStore,
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
    users,
    settings,
    identityTokens,
    attribution,
    contacts,
    events,
    segmentIngest,
    shipments,
    products,
    feeds,
    orders,
    carts,
    webhook,
    outbox,
    productActivity,
    rateLimiter,
    jobs,
    /** What the worker runs, by job kind: each noun's handlers. */
    jobHandlers: { ...campaigns.handlers, ...segments.handlers, ...flowEngine.handlers },
    /** What the worker drains before each claim: the trigger outbox, then its consumed facts once unneeded. */
    workerPumps: [() => dispatcher.drainOnce(), () => outboxPruner.pruneOnce()],
    outboxPruner,
    dispatcher,
    suppressions,
    templates,
    messages,
    tracking,
    campaigns,
    flows,
    segments,
    reports,
    consent,
    dataRights,
    /** Finishes pending writes, then closes the relay's connections and the database. Safe to call more than once. */
    close() {
      closing ??= (async () => {
        await writer.close();
        await tableGrowth.settled();
        await transport.close();
        await rateLimiter.close();
        await db.close();
      })();
      return closing;
    },
  };
}

export type Services = ReturnType<typeof createServices>;
