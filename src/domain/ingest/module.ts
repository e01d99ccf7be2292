import { createContactIdentityService } from '../contact-identities/contact-identity-service.js';
import { createContactLookup } from '../contacts/contact-lookup.js';
import { createContactService } from '../contacts/contact-service.js';
import { createKnownContacts } from '../contacts/known-contacts.js';
import { createEventPruner } from '../events/event-pruner.js';
import { createEventRecords } from '../events/event-records.js';
import { createEventService } from '../events/event-service.js';
import { createIdentityTokenService } from '../identity-tokens/identity-token-service.js';
import { createContactlessOrders } from '../orders/contactless-orders.js';
import type { ProductActivity } from '../recommendations/product-activity.js';
import type { Runtime } from '../runtime/module.js';
import type { SettingsService } from '../settings/settings-service.js';
import type { Clock } from '../shared/time.js';
import { createShipmentService } from '../shipments/shipment-service.js';
import { createSuppressionService } from '../suppressions/suppression-service.js';

/**
 * People and what they do: contacts (with the suppressions an import adds, the identity tokens that name them
 * and the platform customer ids and phone numbers that name them), events (and their pruning past a workspace's retention), and the shipping events that move orders' shipping status.
 */
export function createIngestModule(runtime: Runtime, deps: { settings: SettingsService; productActivity: ProductActivity; clock: Clock | undefined }) {
  const { dialect } = runtime;
  const contactLookup = createContactLookup(dialect);
  const eventRecords = createEventRecords(dialect);
  const suppressions = createSuppressionService(runtime);
  const identityTokens = createIdentityTokenService({ ...runtime, contactLookup });
  // A contact written with a platform customer id takes that customer's orders kept without a contact (commerce's rule, named apart).
  const contactIdentities = createContactIdentityService({ ...runtime, contactlessOrders: createContactlessOrders(runtime) });
  const contacts = createContactService({ ...runtime, eventRecords, suppressions, settings: deps.settings, clock: deps.clock, identities: contactIdentities });
  const { ensureContacts } = contacts;
  const shipments = createShipmentService({ ...runtime, contactLookup, ensureContacts, eventRecords });
  const events = createEventService({
    ...runtime,
    contactLookup,
    ensureContacts,
    applyShippingEvents: shipments.applyShippingEvents,
    activity: deps.productActivity,
    identityTokens,
    knownContacts: createKnownContacts(dialect),
  });
  const eventPruner = createEventPruner({ ...runtime, settings: deps.settings, clock: deps.clock });
  return { contactLookup, eventRecords, suppressions, identityTokens, contactIdentities, contacts, shipments, events, eventPruner };
}
