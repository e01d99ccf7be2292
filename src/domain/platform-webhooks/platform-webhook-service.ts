import { createHmac, timingSafeEqual } from 'node:crypto';
import type { Knex } from 'knex';
import type { CartChange, CartService } from '../carts/cart-service.js';
import type { ContactIdentityService } from '../contact-identities/contact-identity-service.js';
import { CUSTOMER_ID_PROPERTIES, customerRefOf } from '../contact-identities/contact-identity.js';
import { contactKey, type ContactLookup } from '../contacts/contact-lookup.js';
import type { ContactService } from '../contacts/contact-service.js';
import type { DataRightsService } from '../data-rights/data-rights-service.js';
import { UnauthorizedError } from '../errors.js';
import type { BatchHandler, WriteBatcher } from '../db/write-batcher.js';
import type { IdentityTokenService } from '../identity-tokens/identity-token-service.js';
import type { IntegrationService, WebhookIntegration } from '../integrations/integration-service.js';
import { domainSchema, type NativePlatform } from '../integrations/integration.schema.js';
import type { OrderChange, OrderUpsert } from '../orders/order-upsert.js';
import type { ProductService } from '../products/product-service.js';
import type { SettingsService } from '../settings/settings-service.js';
import { readShopCurrency } from '../settings/shop-currency.js';
import type { ShipmentService, ShipmentWrite } from '../shipments/shipment-service.js';
import { mapShopifyDelivery } from '../shopify/shopify-mapping.js';
import { createDeliveryKeys, type RetryKey } from '../webhook/delivery-keys.js';
import { storableJsonObject } from '../webhook/webhook-event.js';
import { mapWooCommerceDelivery } from '../woocommerce/woocommerce-mapping.js';
import { compositeKey } from '../shared/keys.js';
import type { PlatformDelivery, PlatformReply } from './platform-webhook.schema.js';
import type { MappedDelivery, MappingContext, PlatformCustomer, StoreChange } from './store-change.js';
import { createTestOrderStore } from './test-order-store.js';

export type { PlatformDelivery, PlatformReply } from './platform-webhook.schema.js';

const MAPPERS: Record<NativePlatform, (topic: string, body: unknown, context: MappingContext) => MappedDelivery> = {
  shopify: mapShopifyDelivery,
  woocommerce: mapWooCommerceDelivery,
};

/** The reply's warning for a platform's test notification (`X-Shopify-Test: true`). */
const TEST_NOTIFICATION = 'a test notification (X-Shopify-Test: true): the signature is right, and nothing of the sample was applied';

/** WooCommerce's ping when a webhook is saved: form-encoded, unsigned, and nothing to apply. */
const WOOCOMMERCE_PING = /^webhook_id=\d+$/;

/** Whether `signature` is the base64 HMAC-SHA256 of the body with the secret, compared in constant time. */
function signedWith(secret: string, body: Buffer, signature: string | null): boolean {
  if (signature === null || secret === '') return false;
  const expected = Buffer.from(createHmac('sha256', secret).update(body).digest('base64'));
  const given = Buffer.from(signature.trim());
  return given.length === expected.length && timingSafeEqual(given, expected);
}

/** A Shopify or WooCommerce integration, its secret left behind once a delivery is trusted. */
export type PlatformIntegration = WebhookIntegration & { platform: NativePlatform };

/** A delivery already trusted (signed, or replayed by `emk seed` from files): what its headers said, and its bytes. */
export type TrustedDelivery = Omit<PlatformDelivery, 'signature'>;

/** An authenticated delivery of one integration, read and mapped, waiting for its group's transaction. */
interface Delivery {
  integration: PlatformIntegration;
  topic: string;
  deliveryId: string | null;
  /** The shop's domain the delivery named, to store on an integration that did not know its own yet. */
  learntDomain: string | null;
  mapped: MappedDelivery;
  at: number;
}

/** What the applier needs from other nouns: it coordinates, each noun keeps its rules. */
export interface PlatformWebhookDeps {
  writer: WriteBatcher;
  integrations: Pick<IntegrationService, 'signedIntegration' | 'learnDomains' | 'countIgnoredTopics' | 'deactivate'>;
  contacts: Pick<ContactService, 'writeContacts' | 'applyPlatformConsent'>;
  contactLookup: Pick<ContactLookup, 'idsByEmails'>;
  identityTokens: Pick<IdentityTokenService, 'resolve'>;
  contactIdentities: Pick<ContactIdentityService, 'contactsOf'>;
  orderUpsert: OrderUpsert;
  carts: Pick<CartService, 'applyCartChanges' | 'deleteOfIntegration'>;
  shipments: Pick<ShipmentService, 'recordShipments'>;
  products: Pick<ProductService, 'applyWebhookEvent' | 'adoptExported' | 'deleteOfIntegration'>;
  settings: Pick<SettingsService, 'learnShopCurrency'>;
  dataRights: Pick<DataRightsService, 'eraseContacts' | 'eraseShopContacts' | 'recordDataRequests'>;
}

const retryKey = (d: Delivery): RetryKey | null =>
  d.deliveryId === null ? null : { workspaceId: d.integration.workspaceId, eventType: `${d.integration.platform}:${d.topic}`, externalId: d.deliveryId, at: d.at };

/** A change of a delivery, with the delivery it came in (its integration, time and warnings). */
interface Applied<C extends StoreChange['kind']> {
  delivery: Delivery;
  change: Extract<StoreChange, { kind: C }>;
}

/**
 * `POST /ecom/shopify/{id}` and `/ecom/woocommerce/{id}` (docs/platforms/README.md): the signature is checked
 * over the exact bytes before anything is read; the platform's mapper reads the topic's payload into store
 * changes, which are applied through the nouns that own them. A group of concurrent deliveries is applied in one
 * transaction (the group commit), with their retry keys, so a delivery is applied once however often it comes.
 */
export function createPlatformWebhookService(deps: PlatformWebhookDeps) {
  const { writer, integrations, contacts, orderUpsert, carts, shipments, products, settings, dataRights } = deps;
  const deliveryKeys = createDeliveryKeys();
  const testOrders = createTestOrderStore();
  const sourceOf = (d: Delivery) => `${d.integration.platform}:${d.integration.domain}`;

  /**
   * The contacts of the customers the changes name (created if unseen, with the platform's consent when it gives
   * one, else `non_subscribed`; properties merged), with the platform's consent applied to existing ones by its
   * time rule (ContactService.applyPlatformConsent). Keyed by the customer object; absent when the workspace's
   * contact limit refuses it.
   */
  async function customersOf(trx: Knex.Transaction, named: Array<{ delivery: Delivery; customer: PlatformCustomer }>) {
    const written = await contacts.writeContacts(
      trx,
      named.map(({ delivery, customer }) => ({
        workspaceId: delivery.integration.workspaceId,
        email: customer.email,
        properties: customer.properties,
        merge: 'overwrite' as const,
        statusOnCreate: customer.consent?.status ?? 'non_subscribed',
        sourceOnCreate: sourceOf(delivery),
        // The platform's consent, at its time; without a time the status is only where the contact starts.
        ...(customer.consent?.at != null ? { consentOnCreate: { origin: delivery.integration.platform, at: customer.consent.at } } : {}),
      })),
    );
    const owners = new Map<PlatformCustomer, { contactId: string; created: boolean }>();
    const consent: Parameters<ContactService['applyPlatformConsent']>[1] = [];
    named.forEach(({ delivery, customer }, i) => {
      const result = written[i]!;
      if ('error' in result) return;
      owners.set(customer, { contactId: result.contactId, created: result.created });
      if (!result.created && customer.consent?.at != null) {
        const { status, at } = customer.consent;
        consent.push({ workspaceId: delivery.integration.workspaceId, contactId: result.contactId, status, at, origin: delivery.integration.platform });
      }
    });
    await contacts.applyPlatformConsent(trx, consent);
    return owners;
  }

  /** The owner of an order or a cart: its customer's contact, else the contact its identity token names. */
  async function ownerOf(
    trx: Knex.Transaction,
    delivery: Delivery,
    customer: PlatformCustomer | null,
    identityToken: string | null,
    customers: Map<PlatformCustomer, { contactId: string; created: boolean }>,
  ): Promise<{ contactId: string; created: boolean } | null> {
    if (customer) return customers.get(customer) ?? null;
    if (identityToken === null) return null;
    const named = await deps.identityTokens.resolve(delivery.integration.workspaceId, identityToken, trx);
    return named ? { contactId: named.contactId, created: false } : null;
  }

  /**
   * The owner of an order (docs/platforms/README.md, Orders without an email): as a cart's; else, for a buyer who
   * gave no email, the contact holding its platform customer id, else its phone number's. `customerRef`: the
   * platform's customer of the order; `holdsRef`: the owner is that customer's contact (found by its id, or
   * written with it by this delivery), whom an order kept without a contact joins.
   */
  async function orderOwnerOf(trx: Knex.Transaction, delivery: Delivery, change: Applied<'order'>['change'], customers: Map<PlatformCustomer, { contactId: string; created: boolean }>) {
    const { platform, workspaceId } = delivery.integration;
    const customerRef = change.customer
      ? customerRefOf(platform, change.customer.properties[CUSTOMER_ID_PROPERTIES[platform]])
      : customerRefOf(platform, change.buyer?.customerId);
    const owner = await ownerOf(trx, delivery, change.customer, change.identityToken, customers);
    if (owner || change.customer || !change.buyer) return { owner, customerRef, holdsRef: owner !== null && change.customer !== null && customerRef !== null };
    const [found] = await deps.contactIdentities.contactsOf(trx, workspaceId, [{ customerRef, phone: change.buyer.phone }]);
    return { owner: found ? { contactId: found.contactId, created: false } : null, customerRef, holdsRef: found?.by === platform };
  }

  const orderChange = (
    delivery: Delivery,
    fields: Pick<OrderChange, 'contactId' | 'upsertKey' | 'ownerCreated' | 'snapshot' | 'fields' | 'customerRef' | 'ownerHoldsRef'>,
  ): OrderChange => ({
    workspaceId: delivery.integration.workspaceId,
    origin: 'webhook',
    platform: delivery.integration.platform,
    integrationId: delivery.integration.id,
    kind: 'snapshot',
    at: delivery.at,
    ...fields,
  });

  /**
   * The shop's currency of each workspace the orders are of (docs/platforms/README.md, Currencies): a workspace
   * with none set or learnt takes the one its first platform order names; an order naming none is in it.
   */
  async function shopCurrenciesOf(trx: Knex.Transaction, changes: Array<Applied<'order' | 'order_refunds' | 'order_cancelled'>>): Promise<Map<string, string>> {
    const currencies = new Map<string, string>();
    for (const { delivery, change } of changes) {
      const { workspaceId, platform } = delivery.integration;
      if (currencies.has(workspaceId)) continue;
      if (change.kind === 'order' && change.order.shopCurrency !== null) await settings.learnShopCurrency(trx, workspaceId, change.order.shopCurrency, platform);
      currencies.set(workspaceId, await readShopCurrency(trx, workspaceId));
    }
    return currencies;
  }

  /** Orders as snapshots; refunds and cancellations of orders by id (a contact is needed only for a new order). */
  async function applyOrders(trx: Knex.Transaction, changes: Array<Applied<'order' | 'order_refunds' | 'order_cancelled'>>, customers: Map<PlatformCustomer, { contactId: string; created: boolean }>) {
    const orderChanges: OrderChange[] = [];
    const shopCurrencies = await shopCurrenciesOf(trx, changes);
    for (const { delivery, change } of changes) {
      if (change.kind === 'order') {
        const { order } = change;
        const { owner, customerRef, holdsRef } = await orderOwnerOf(trx, delivery, change, customers);
        orderChanges.push(
          orderChange(delivery, {
            // A buyer without an email that no contact is known for: the order is kept without a contact. One with
            // an email the workspace's contact limit refuses stores no new order (docs/api/webhook.md, rule 5).
            contactId: owner?.contactId ?? null,
            customerRef,
            ownerHoldsRef: holdsRef,
            upsertKey: order.externalId,
            ownerCreated: owner?.created ?? false,
            snapshot: {
              refunds: order.refunds,
              cancelledAt: order.cancelled ? (order.cancelledAt ?? delivery.at) : null,
              updatedAt: order.updatedAt,
              storesNew: change.placed && (owner !== null || change.customer === null),
            },
            fields: {
              order_number: order.orderNumber,
              total_amount: order.totalAmount,
              currency: order.currency ?? shopCurrencies.get(delivery.integration.workspaceId)!,
              presentment_currency: order.presentment?.currency ?? null,
              presentment_total_amount: order.presentment?.totalAmount ?? null,
              status: order.status,
              ordered_at: order.orderedAt,
              items: order.items,
            },
          }),
        );
      } else {
        // Refunds or a cancellation alone: they update a stored order and never store a new one (no owner needed).
        orderChanges.push(
          orderChange(delivery, {
            contactId: null,
            upsertKey: change.orderExternalId,
            ownerCreated: false,
            snapshot: {
              refunds: change.kind === 'order_refunds' ? change.refunds : [],
              // WooCommerce's `order.deleted` has only the id: the time is when emk received it.
              cancelledAt: change.kind === 'order_cancelled' ? delivery.at : null,
              updatedAt: null,
              storesNew: false,
            },
            fields: {},
          }),
        );
      }
    }
    await orderUpsert.applyOrderChanges(trx, orderChanges);
  }

  /** Checkouts as carts (abandoned-cart flows); a checkout of nobody known stores nothing. */
  async function applyCarts(trx: Knex.Transaction, changes: Array<Applied<'cart'>>, customers: Map<PlatformCustomer, { contactId: string; created: boolean }>) {
    const cartChanges: CartChange[] = [];
    for (const { delivery, change } of changes) {
      const owner = await ownerOf(trx, delivery, change.customer, change.identityToken, customers);
      if (!owner) continue;
      const { cart } = change;
      cartChanges.push({
        workspaceId: delivery.integration.workspaceId,
        contactId: owner.contactId,
        externalId: cart.externalId,
        eventType: 'started_checkout',
        totalAmount: cart.totalAmount,
        currency: cart.currency,
        checkoutUrl: cart.checkoutUrl,
        items: cart.items,
        source: sourceOf(delivery),
        integrationId: delivery.integration.id,
        converted: cart.completed,
        at: delivery.at,
      });
    }
    await carts.applyCartChanges(trx, cartChanges);
  }

  async function applyShipments(trx: Knex.Transaction, changes: Array<Applied<'shipment'>>) {
    await shipments.recordShipments(
      trx,
      changes.map(({ delivery, change }): ShipmentWrite => ({
        workspaceId: delivery.integration.workspaceId,
        orderRef: change.orderExternalId,
        status: change.status,
        email: change.email,
        contactSource: sourceOf(delivery),
        source: sourceOf(delivery),
        properties: {
          order_id: change.orderExternalId,
          tracking_number: change.trackingNumber,
          carrier: change.carrier,
          shipping_status: change.status,
          platform: delivery.integration.platform,
        },
        at: delivery.at,
      })),
    );
  }

  /** Catalog products; one the platform's export stored under its handle is adopted first. */
  async function applyProducts(trx: Knex.Transaction, changes: Array<Applied<'product_upsert' | 'product_delete'>>, warn: (d: Delivery, warning: string) => void) {
    for (const { delivery, change } of changes) {
      if (change.kind === 'product_delete') {
        await products.applyWebhookEvent(trx, delivery.integration, 'product_deleted', { external_id: change.externalId });
        continue;
      }
      const { external_id: externalId, metadata } = change.product as { external_id?: unknown; metadata?: { handle?: unknown } };
      if (typeof externalId === 'string' && typeof metadata?.handle === 'string') {
        await products.adoptExported(trx, delivery.integration, externalId, metadata.handle);
      }
      const result = await products.applyWebhookEvent(trx, delivery.integration, 'product_updated', change.product);
      if (result === 'invalid') warn(delivery, `product ${String(externalId)} could not be read: nothing of it was stored`);
    }
  }

  /** The mandatory privacy topics: erase a customer, record a data request, forget a shop that is gone. */
  async function applyPrivacy(trx: Knex.Transaction, changes: Array<Applied<'customer_redact' | 'data_request' | 'shop_redact'>>) {
    const redacted = changes.flatMap((c) => (c.change.kind === 'customer_redact' ? [{ workspaceId: c.delivery.integration.workspaceId, email: c.change.email }] : []));
    const ids = await deps.contactLookup.idsByEmails(trx, redacted.map((r) => [r.workspaceId, r.email] as const));
    for (const workspaceId of new Set(redacted.map((r) => r.workspaceId))) {
      const erased = redacted.filter((r) => r.workspaceId === workspaceId).flatMap((r) => ids.get(contactKey(workspaceId, r.email)) ?? []);
      await dataRights.eraseContacts(trx, workspaceId, [...new Set(erased)].sort());
    }
    await dataRights.recordDataRequests(
      trx,
      changes.flatMap(({ delivery, change }) =>
        change.kind === 'data_request'
          ? [{ workspaceId: delivery.integration.workspaceId, integrationId: delivery.integration.id, email: change.email, requestId: change.requestId, at: delivery.at }]
          : [],
      ),
    );
    for (const { delivery } of changes.filter((c) => c.change.kind === 'shop_redact')) {
      const { integration } = delivery;
      await integrations.deactivate(trx, [integration.id]);
      await products.deleteOfIntegration(trx, integration);
      await carts.deleteOfIntegration(trx, integration.id);
      await dataRights.eraseShopContacts(trx, {
        workspaceId: integration.workspaceId,
        integrationId: integration.id,
        source: sourceOf(delivery),
        origins: [integration.platform, `create:${sourceOf(delivery)}`],
      });
    }
  }

  /** The order a change names by id alone: a test order's later deliveries (its refunds, fulfillments) map to these. */
  const orderNamed = (change: StoreChange): string | null =>
    change.kind === 'order_refunds' || change.kind === 'order_cancelled' || change.kind === 'shipment' ? change.orderExternalId : null;

  /**
   * Records the test orders of a group (their ids only) and leaves out the changes that name a test order, with a
   * warning on their delivery: a test order's refund or fulfillment stores nothing and creates no contact either.
   */
  async function withoutTestOrders<T extends { delivery: Delivery; change: StoreChange }>(trx: Knex.Transaction, changes: T[], warn: (d: Delivery, warning: string) => void) {
    await testOrders.record(
      trx,
      changes.flatMap(({ delivery, change }) =>
        change.kind === 'test_order' ? [{ workspaceId: delivery.integration.workspaceId, orderKey: change.orderExternalId, at: delivery.at }] : [],
      ),
    );
    const named = changes.flatMap(({ delivery, change }) => {
      const orderKey = orderNamed(change);
      return orderKey === null ? [] : [{ workspaceId: delivery.integration.workspaceId, orderKey }];
    });
    if (named.length === 0) return changes;
    const tests = await testOrders.known(trx, named);
    return changes.filter(({ delivery, change }) => {
      const orderKey = orderNamed(change);
      if (orderKey === null || !tests.has(compositeKey(delivery.integration.workspaceId, orderKey))) return true;
      warn(delivery, `order ${orderKey} is a test order: nothing of it is stored`);
      return false;
    });
  }

  const applyDeliveries: BatchHandler<Delivery, PlatformReply> = async (trx, deliveries) => {
    const seen = await deliveryKeys.duplicates(trx, deliveries, retryKey);
    const todo = deliveries.filter((d) => !seen.has(d));

    // An integration created without its shop's domain takes the one its first signed delivery names.
    const learnt = new Map<string, string>();
    for (const d of todo) if (d.learntDomain !== null && !learnt.has(d.integration.id)) learnt.set(d.integration.id, d.learntDomain);
    await integrations.learnDomains(trx, [...learnt].map(([id, domain]) => ({ id, domain })));

    const ignored = new Map<string, { integrationId: string; topic: string; count: number }>();
    for (const d of todo.filter((d) => d.mapped.status === 'ignored')) {
      const key = `${d.integration.id} ${d.topic}`;
      const counted = ignored.get(key) ?? { integrationId: d.integration.id, topic: d.topic, count: 0 };
      counted.count++;
      ignored.set(key, counted);
    }
    await integrations.countIgnoredTopics(trx, [...ignored.values()]);

    const warnings = new Map<Delivery, string[]>();
    const warn = (d: Delivery, warning: string) => warnings.set(d, [...(warnings.get(d) ?? []), warning]);
    const mapped = todo.flatMap((delivery) => {
      if (delivery.mapped.status !== 'mapped') return [];
      for (const warning of delivery.mapped.warnings) warn(delivery, warning);
      return delivery.mapped.changes.map((change) => ({ delivery, change }));
    });
    const changes = await withoutTestOrders(trx, mapped, warn);
    const ofKind = <C extends StoreChange['kind']>(...kinds: C[]) => changes.filter((c): c is Applied<C> => (kinds as string[]).includes(c.change.kind));

    // An order that is not placed stores nothing new, its buyer's contact neither (a stored order needs no owner).
    const named = changes.flatMap(({ delivery, change }) => {
      const customer = change.kind === 'customer' || change.kind === 'cart' || (change.kind === 'order' && change.placed) ? change.customer : null;
      return customer ? [{ delivery, customer }] : [];
    });
    const customers = await customersOf(trx, named);
    await applyOrders(trx, ofKind('order', 'order_refunds', 'order_cancelled'), customers);
    await applyCarts(trx, ofKind('cart'), customers);
    await applyShipments(trx, ofKind('shipment'));
    await applyProducts(trx, ofKind('product_upsert', 'product_delete'), warn);
    await applyPrivacy(trx, ofKind('customer_redact', 'data_request', 'shop_redact'));

    return deliveries.map((d): PlatformReply => {
      if (seen.has(d)) return { status: 'duplicate', topic: d.topic };
      if (d.mapped.status === 'ignored') return { status: 'ignored', topic: d.topic };
      const told = warnings.get(d);
      return { status: 'processed', topic: d.topic, ...(told ? { warnings: told } : {}) };
    });
  };

  /** A trusted delivery read, mapped and applied with the group of deliveries arriving with it. */
  function applyTrusted(integration: PlatformIntegration, delivery: TrustedDelivery): Promise<PlatformReply> {
    const topic = delivery.topic?.trim().slice(0, 200) ?? '';
    // Shopify's "Send test notification" sends a sample (fixed ids, example.com buyers), signed as the shop's own
    // deliveries are: it is answered, so the set-up can be checked, and nothing of it is applied or counted.
    if (delivery.test === true) return Promise.resolve({ status: 'ignored', topic, warnings: [TEST_NOTIFICATION] });
    const body = storableJsonObject(delivery.body.toString('utf8'));
    const named = delivery.shop === null ? null : domainSchema.safeParse(delivery.shop);
    // The integration's own domain wins over what a delivery says; the first signed one names it if unknown.
    const learntDomain = integration.domain === '' && named?.success ? named.data : null;
    const domain = integration.domain || learntDomain || '';
    const mapped: MappedDelivery =
      body === null
        ? { status: 'mapped', changes: [], warnings: ['the body is not a JSON object: nothing was applied'] }
        : MAPPERS[integration.platform](topic, body, { shopDomain: domain });
    const deliveryId = delivery.deliveryId?.trim().slice(0, 255) || null;
    return writer.submit(applyDeliveries, { integration: { ...integration, domain }, topic, deliveryId, learntDomain, mapped, at: Date.now() });
  }

  return {
    /**
     * One delivery: 404 `integration not found` (unknown, inactive, another platform's), 401 `invalid signature`
     * unless signed with the integration's secret (checked before the body is read; WooCommerce's unsigned ping
     * is answered and applies nothing), then applied as a trusted one (a signed test notification applies nothing).
     */
    async handle(platform: NativePlatform, integrationId: string, delivery: PlatformDelivery): Promise<PlatformReply> {
      const { secret, ...integration } = await integrations.signedIntegration(integrationId, platform);
      if (platform === 'woocommerce' && delivery.signature === null && WOOCOMMERCE_PING.test(delivery.body.toString('latin1'))) {
        return { status: 'ignored', topic: 'ping' };
      }
      if (!signedWith(secret, delivery.body, delivery.signature)) throw new UnauthorizedError('invalid signature');
      return applyTrusted({ ...integration, platform }, delivery);
    },

    /**
     * A delivery whose origin needs no signature (`emk seed` replaying a fixture set's webhook bodies): the same
     * mapping, retry key and transaction as a signed one. The integration is the caller's (active, of its workspace).
     */
    applyTrusted,
  };
}

export type PlatformWebhookService = ReturnType<typeof createPlatformWebhookService>;
