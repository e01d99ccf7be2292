import type { Knex } from 'knex';
import type { CartService } from '../carts/cart-service.js';
import type { IdentityTokenService } from '../identity-tokens/identity-token-service.js';
import type { ProductService } from '../products/product-service.js';
import type { ContactService } from '../contacts/contact-service.js';
import { contactKey } from '../contacts/contact-lookup.js';
import type { BatchHandler, WriteBatcher } from '../db/write-batcher.js';
import { canonicalEventName } from '../events/event-names.js';
import type { EventService } from '../events/event-service.js';
import type { EventWrite } from '../events/event-write.js';
import type { OrderChange, OrderUpsert } from '../orders/order-upsert.js';
import { createDeliveryKeys, type RetryKey } from './delivery-keys.js';
import { ORDER_EVENTS, isReply, parseDelivery, type ParsedDelivery, type WebhookReply } from './webhook-event.js';

/** The integration a delivery arrived on (already authenticated). */
export interface WebhookIntegration {
  id: string;
  workspaceId: string;
  platform: string;
  domain: string;
}

interface Delivery {
  integration: WebhookIntegration;
  parsed: ParsedDelivery;
  at: number;
}

/** What the webhook needs from other nouns, so it stays a thin coordinator. */
export interface WebhookDeps {
  writer: WriteBatcher;
  contacts: ContactService;
  events: EventService;
  orderUpsert: OrderUpsert;
  carts: CartService;
  products: Pick<ProductService, 'applyWebhookEvent'>;
  identityTokens: Pick<IdentityTokenService, 'resolve'>;
}

/** The retry key: (workspace, event_type, external_id). */
const retryKey = (d: Delivery): RetryKey | null =>
  d.parsed.dedupeKey === null ? null : { workspaceId: d.integration.workspaceId, eventType: d.parsed.event.eventType, externalId: d.parsed.dedupeKey, at: d.at };

/**
 * `POST /ecom/{platform}/{integrationId}`: order, cart, customer, product and custom events. A group of
 * concurrent deliveries is applied in one transaction, set-based; duplicate protection is a unique key
 * (workspace, event_type, external_id), so two concurrent deliveries of one event apply it once.
 */
export function createWebhookService(deps: WebhookDeps) {
  const { writer, contacts, events, orderUpsert, carts } = deps;
  const deliveryKeys = createDeliveryKeys();

  /** Contacts by email (unseen: created `subscribed`, source `website:<domain>`), else by identity token. */
  async function owners(trx: Knex.Transaction, deliveries: Delivery[]): Promise<Map<Delivery, { contactId: string; created: boolean }>> {
    const ensured = await contacts.ensureContacts(
      trx,
      deliveries.flatMap((d) =>
        d.parsed.email
          ? [
              {
                workspaceId: d.integration.workspaceId,
                email: d.parsed.email,
                properties: {},
                subscriptionStatus: 'subscribed' as const,
                source: `website:${d.integration.domain}`,
              },
            ]
          : [],
      ),
      { lock: false },
    );
    const result = new Map<Delivery, { contactId: string; created: boolean }>();
    for (const d of deliveries) {
      if (d.parsed.email) {
        // Absent when the workspace's contact limit forbids creating it (docs/api/webhook.md, rule 5).
        const owner = ensured.get(contactKey(d.integration.workspaceId, d.parsed.email));
        if (owner) result.set(d, { contactId: owner.row.id, created: owner.created });
      } else if (d.parsed.identityToken) {
        const named = await deps.identityTokens.resolve(d.integration.workspaceId, d.parsed.identityToken, trx);
        if (named) result.set(d, { contactId: named.contactId, created: false });
      }
    }
    return result;
  }

  const applyDeliveries: BatchHandler<Delivery, WebhookReply> = async (trx, deliveries) => {
    const seen = await deliveryKeys.duplicates(trx, deliveries, retryKey);
    const todo = deliveries.filter((d) => !seen.has(d));

    // customer_created / customer_updated: the contact's properties are merged.
    const customerEvents = todo.filter((d) => d.parsed.event.category === 'customer' && d.parsed.email);
    await contacts.writeContacts(
      trx,
      customerEvents.map((d) => ({
        workspaceId: d.integration.workspaceId,
        email: d.parsed.email!,
        properties: d.parsed.event.category === 'customer' ? d.parsed.event.properties : {},
        merge: 'overwrite',
        statusOnCreate: 'subscribed',
        sourceOnCreate: `website:${d.integration.domain}`,
      })),
    );

    // Orders, carts and custom events need a contact; without one nothing is stored (docs/api/webhook.md, rule 5).
    const needOwner = todo.filter((d) => ['order', 'cart', 'custom'].includes(d.parsed.event.category));
    const ownerOf = await owners(
      trx,
      needOwner.filter((d) => d.parsed.event.category !== 'order' || d.parsed.event.order !== null),
    );

    const orderChanges: OrderChange[] = [];
    const cartChanges: Parameters<CartService['applyCartChanges']>[1] = [];
    const timeline: EventWrite[] = [];
    for (const d of todo) {
      const { event } = d.parsed;
      const owner = ownerOf.get(d);
      const contactId = owner?.contactId;
      const source = `${d.integration.platform}:${d.integration.domain}`;
      if (event.category === 'product') {
        await deps.products.applyWebhookEvent(trx, d.integration, event.eventType, event.product);
      } else if (event.category === 'order' && event.order && owner) {
        const o = event.order;
        orderChanges.push({
          workspaceId: d.integration.workspaceId,
          contactId: owner.contactId,
          upsertKey: o.externalId,
          origin: 'webhook',
          platform: d.integration.platform,
          integrationId: d.integration.id,
          ownerCreated: owner.created,
          kind: ORDER_EVENTS[event.eventType],
          fields: {
            ...(o.orderNumber !== undefined ? { order_number: o.orderNumber } : {}),
            ...(o.totalAmount !== undefined ? { total_amount: o.totalAmount } : {}),
            ...(o.currency !== undefined ? { currency: o.currency } : {}),
            ...(o.status !== undefined ? { status: o.status } : {}),
            ...(o.orderedAt !== undefined ? { ordered_at: o.orderedAt } : {}),
            ...(o.items !== undefined ? { items: o.items } : {}),
            ...(o.refundedAmount !== undefined ? { refunded_amount: o.refundedAmount } : {}),
            ...(o.refundAmount !== undefined ? { refund_amount: o.refundAmount } : {}),
          },
          at: d.at,
        });
      } else if (event.category === 'cart' && contactId) {
        cartChanges.push({
          workspaceId: d.integration.workspaceId,
          contactId,
          externalId: event.cart.externalId,
          eventType: event.eventType,
          totalAmount: event.cart.totalAmount,
          currency: event.cart.currency,
          checkoutUrl: event.cart.checkoutUrl,
          items: event.cart.items,
          source,
          at: d.at,
        });
        // On the timeline too; the cart trigger (not the event trigger) starts abandoned-cart flows.
        timeline.push(timelineEvent(d, contactId, source, false));
      } else if (event.category === 'custom' && contactId) {
        timeline.push(timelineEvent(d, contactId, source, true));
      }
    }
    await orderUpsert.applyOrderChanges(trx, orderChanges);
    await carts.applyCartChanges(trx, cartChanges);
    await events.recordEvents(trx, timeline);

    return deliveries.map((d): WebhookReply => {
      if (seen.has(d)) return { status: 'duplicate' };
      const { warnings } = d.parsed;
      return { status: 'processed', event_type: d.parsed.event.eventType, ...(warnings.length > 0 ? { warnings } : {}) };
    });
  };

  return {
    /** One delivery: parsed leniently, then applied with the group of deliveries arriving with it. */
    async handle(integration: WebhookIntegration, rawBody: string): Promise<WebhookReply> {
      const parsed = parseDelivery(rawBody);
      if (isReply(parsed)) return parsed;
      return writer.submit(applyDeliveries, { integration, parsed, at: Date.now() });
    },
  };
}

/** A custom event (or a cart event) on the contact's timeline, the whole body as its properties. */
function timelineEvent(d: Delivery, contactId: string, source: string, fireTrigger: boolean): EventWrite {
  return {
    workspaceId: d.integration.workspaceId,
    owner: { contactId },
    eventName: canonicalEventName(d.parsed.event.eventType),
    properties: d.parsed.body,
    source,
    occurredAt: d.at,
    fireTrigger,
    contactSource: `website:${d.integration.domain}`,
  };
}

export type WebhookService = ReturnType<typeof createWebhookService>;
