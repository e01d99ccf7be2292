import type { CartService } from '../carts/cart-service.js';
import type { ContactLookup } from '../contacts/contact-lookup.js';
import type { ContactService } from '../contacts/contact-service.js';
import type { EventRecords } from '../events/event-records.js';
import type { EventService } from '../events/event-service.js';
import type { IdentityTokenService } from '../identity-tokens/identity-token-service.js';
import type { OrderUpsert } from '../orders/order-upsert.js';
import type { ProductService } from '../products/product-service.js';
import type { Runtime } from '../runtime/module.js';
import { createSegmentIngestService } from '../segment-ingest/segment-ingest-service.js';
import { createWebhookService } from '../webhook/webhook-service.js';
import type { WorkspaceService } from '../workspaces/workspace-service.js';

/** The doors of other systems: the shop platforms' webhook and Segment's tracking API. */
export function createPlatformsModule(
  runtime: Runtime,
  deps: {
    workspaces: WorkspaceService;
    contactLookup: ContactLookup;
    contacts: ContactService;
    eventRecords: EventRecords;
    events: EventService;
    identityTokens: IdentityTokenService;
    orderUpsert: OrderUpsert;
    carts: CartService;
    products: ProductService;
  },
) {
  const webhook = createWebhookService({ ...runtime, ...deps });
  const segmentIngest = createSegmentIngestService({
    ...runtime,
    ...deps,
    writeContacts: deps.contacts.writeContacts,
    recordEvents: deps.events.recordEvents,
  });
  return { webhook, segmentIngest };
}
