import type { CartService } from '../carts/cart-service.js';
import type { ContactIdentityService } from '../contact-identities/contact-identity-service.js';
import type { ContactLookup } from '../contacts/contact-lookup.js';
import type { ContactService } from '../contacts/contact-service.js';
import type { EventRecords } from '../events/event-records.js';
import type { EventService } from '../events/event-service.js';
import type { IdentityTokenService } from '../identity-tokens/identity-token-service.js';
import type { DataRightsService } from '../data-rights/data-rights-service.js';
import type { IntegrationService } from '../integrations/integration-service.js';
import type { OrderUpsert } from '../orders/order-upsert.js';
import { createPlatformWebhookService } from '../platform-webhooks/platform-webhook-service.js';
import type { ProductService } from '../products/product-service.js';
import type { Runtime } from '../runtime/module.js';
import { createSegmentIngestService } from '../segment-ingest/segment-ingest-service.js';
import type { ShipmentService } from '../shipments/shipment-service.js';
import { createWebhookService } from '../webhook/webhook-service.js';
import type { WorkspaceService } from '../workspaces/workspace-service.js';
import type { SettingsService } from '../settings/settings-service.js';

/**
 * The doors of other systems: the integration webhook, Shopify's and WooCommerce's own webhooks, and Segment's
 * tracking API. Built last: a platform's privacy topics erase contacts as the data rights do.
 */
export function createPlatformsModule(
  runtime: Runtime,
  deps: {
    workspaces: WorkspaceService;
    contactLookup: ContactLookup;
    contacts: ContactService;
    eventRecords: EventRecords;
    events: EventService;
    identityTokens: IdentityTokenService;
    contactIdentities: ContactIdentityService;
    orderUpsert: OrderUpsert;
    carts: CartService;
    products: ProductService;
    integrations: IntegrationService;
    shipments: ShipmentService;
    dataRights: DataRightsService;
    settings: SettingsService;
  },
) {
  const webhook = createWebhookService({ ...runtime, ...deps });
  const segmentIngest = createSegmentIngestService({
    ...runtime,
    ...deps,
    writeContacts: deps.contacts.writeContacts,
    recordEvents: deps.events.recordEvents,
  });
  const platformWebhooks = createPlatformWebhookService({ ...runtime, ...deps });
  return { webhook, segmentIngest, platformWebhooks };
}
