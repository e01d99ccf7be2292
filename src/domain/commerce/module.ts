import { createAttributionService } from '../attribution/attribution-service.js';
import { createCartService } from '../carts/cart-service.js';
import type { ContactIdentityService } from '../contact-identities/contact-identity-service.js';
import type { ContactLookup } from '../contacts/contact-lookup.js';
import type { ContactService } from '../contacts/contact-service.js';
import { createOrderLookup } from '../orders/order-lookup.js';
import { createOrderService } from '../orders/order-service.js';
import { createOrderUpsert } from '../orders/order-upsert.js';
import type { ProductActivity } from '../recommendations/product-activity.js';
import type { Runtime } from '../runtime/module.js';
import type { SettingsService } from '../settings/settings-service.js';

/** Commerce: orders (with the revenue credited to the messages that earned it) and carts. */
export function createCommerceModule(
  runtime: Runtime,
  deps: { settings: SettingsService; contactLookup: ContactLookup; contacts: ContactService; contactIdentities: ContactIdentityService; productActivity: ProductActivity },
) {
  const { contactLookup, productActivity: activity } = deps;
  const attribution = createAttributionService({ ...runtime, contactLookup, settings: deps.settings });
  const orderUpsert = createOrderUpsert({ ...runtime, attributeOrders: attribution.attributeOrders, activity });
  const orders = createOrderService({ ...runtime, contactLookup, ensureContacts: deps.contacts.ensureContacts, upsert: orderUpsert, activity, identities: deps.contactIdentities });
  const carts = createCartService(runtime);
  return { attribution, orderLookup: createOrderLookup(runtime.dialect), orderUpsert, orders, carts };
}
