import type { Knex } from 'knex';
import type { EnsureContacts } from '../contacts/contact-service.js';
import { contactKey, type ContactLookup } from '../contacts/contact-lookup.js';
import type { WriteBatcher } from '../db/write-batcher.js';
import type { EventRecords, EventRow } from '../events/event-records.js';
import { uuidv7 } from '../shared/ids.js';
import { parseInput } from '../shared/validate.js';
import type { TriggerFact, TriggerOutbox } from '../triggers/trigger-outbox.js';
import {
  normaliseShippingStatus,
  orderUpdateLabel,
  orderUpdateSchema,
  shipmentBodySchema,
  shipmentSchema,
  type OrderUpdateReply,
  type ShipmentReply,
  type ShippingStatus,
} from './shipment.schema.js';
import { createShipmentStore, type OrderMatch } from './shipment-store.js';

/** Source of contacts the shipment endpoint creates for an unseen `customer.email`. */
const SHIPMENT_CONTACT_SOURCE = 'shipment';
const SHIPPING_INFORMATION = 'shipping_information';

/** An event as `recordEvents` stores it: what a `shipping_information` event needs to set its order's status. */
export interface ShippingEventFact {
  workspaceId: string;
  eventName: string;
  properties: Record<string, unknown>;
}

/** A shipment to record: the order it names (external id or number), its canonical status, who to tell. */
export interface ShipmentWrite {
  workspaceId: string;
  orderRef: string;
  status: ShippingStatus;
  /** The contact to store the event on (created if unseen, with `contactSource`); else the order's contact. */
  email: string | null;
  contactSource: string;
  /** The event's source, which `shipping_information` flows filter on. */
  source: string | null;
  properties: Record<string, unknown>;
  at: number;
}

export type ApplyShippingEvents = (trx: Knex.Transaction, events: ShippingEventFact[]) => Promise<number>;

/** `properties.order_number` as text (shops send numbers too); null when absent or empty. */
function orderReference(value: unknown): string | null {
  if (typeof value !== 'string' && !(typeof value === 'number' && Number.isFinite(value))) return null;
  const text = String(value).trim();
  return text.length > 0 && text.length <= 255 ? text : null;
}

export function createShipmentService(deps: {
  writer: WriteBatcher;
  contactLookup: ContactLookup;
  ensureContacts: EnsureContacts;
  eventRecords: EventRecords;
  outbox: TriggerOutbox;
}) {
  const { writer, contactLookup, ensureContacts, eventRecords, outbox } = deps;
  const store = createShipmentStore();

  /**
   * Set-based: `shipping_information` events carrying `properties.order_number` and a known
   * `properties.tracking_status` set their order's Shipping Status (one lookup and one update statement per
   * status and workspace). Events without them, or whose order is unknown, change nothing; an unknown
   * `tracking_status` leaves the status as it was. Several events for one order: the last one wins.
   * Returns the number of orders whose status was set.
   */
  const applyShippingEvents: ApplyShippingEvents = async (trx, facts) => {
    const wanted = new Map<string, Array<{ ref: string; status: string }>>();
    for (const fact of facts) {
      if (fact.eventName !== SHIPPING_INFORMATION) continue;
      const ref = orderReference(fact.properties.order_number);
      const status = normaliseShippingStatus(fact.properties.tracking_status);
      if (ref === null || status === null) continue;
      const list = wanted.get(fact.workspaceId) ?? [];
      list.push({ ref, status });
      wanted.set(fact.workspaceId, list);
    }
    const statusByOrder = new Map<string, string>();
    for (const [workspaceId, list] of wanted) {
      const matches = await store.matchOrders(
        trx,
        workspaceId,
        list.map((w) => w.ref),
      );
      for (const { ref, status } of list) {
        const order = matches.get(ref);
        if (order) statusByOrder.set(order.id, status);
      }
    }
    if (statusByOrder.size > 0) await store.setShippingStatus(trx, statusByOrder, Date.now());
    return statusByOrder.size;
  };

  /**
   * Shipments, set-based in the caller's transaction: each sets its matched order's Shipping Status, stores a
   * `shipping_information` event (with its properties and source) on the contact of its email (created if
   * unseen, and not past the workspace's contact limit) or else the order's contact, and fires the
   * `shipping_information` trigger with that source. No order matched: the event is still stored and fires.
   */
  async function recordShipments(trx: Knex.Transaction, shipments: ShipmentWrite[]): Promise<Array<{ eventId: string; contactId: string | null }>> {
    const ensured = await ensureContacts(
      trx,
      shipments.flatMap((s) =>
        s.email ? [{ workspaceId: s.workspaceId, email: s.email, properties: {}, subscriptionStatus: 'non_subscribed' as const, source: s.contactSource }] : [],
      ),
      { lock: false },
    );
    const matched = new Map<string, Map<string, OrderMatch>>();
    for (const workspaceId of new Set(shipments.map((s) => s.workspaceId))) {
      matched.set(workspaceId, await store.matchOrders(trx, workspaceId, shipments.filter((s) => s.workspaceId === workspaceId).map((s) => s.orderRef)));
    }
    const statusByOrder = new Map<string, string>();
    const events: EventRow[] = [];
    const facts: TriggerFact[] = [];
    const recorded = shipments.map((s) => {
      const order = matched.get(s.workspaceId)!.get(s.orderRef) ?? null;
      // A contact the workspace's contact limit refuses falls back to the order's own.
      const contactId = (s.email ? ensured.get(contactKey(s.workspaceId, s.email))?.row.id : undefined) ?? order?.contact_id ?? null;
      const eventId = uuidv7(s.at);
      if (order) statusByOrder.set(order.id, s.status);
      events.push({
        id: eventId,
        workspace_id: s.workspaceId,
        contact_id: contactId,
        anonymous_id: null,
        event_name: SHIPPING_INFORMATION,
        properties: s.properties,
        source: s.source,
        dedupe_key: null,
        created_at: s.at,
        received_at: s.at,
      });
      // Nobody to enrol without a contact: like an anonymous event, it fires nothing.
      if (contactId) {
        facts.push({
          workspaceId: s.workspaceId,
          triggerType: SHIPPING_INFORMATION,
          eventName: SHIPPING_INFORMATION,
          contactId,
          subjectType: 'shipment',
          subjectId: eventId,
          source: s.source,
          payload: { order_id: order?.id ?? null, shipping_status: s.status },
          at: s.at,
        });
      }
      return { eventId, contactId };
    });
    // One after another: a transaction is one connection, which runs one statement at a time.
    if (statusByOrder.size > 0) await store.setShippingStatus(trx, statusByOrder, Date.now());
    await eventRecords.insert(trx, events);
    await outbox.record(trx, facts);
    return recorded;
  }

  return {
    applyShippingEvents,

    recordShipments,

    /**
     * POST /api/v1/events/shipment: sets the matched order's Shipping Status, stores a `shipping_information`
     * event (properties: the body) on the contact of `customer.email` (created if unseen) or else the order's
     * contact, and fires the `shipping_information` trigger with the event's source. No order matched: the
     * event is still stored and fires; nothing else changes.
     */
    async shipment(workspaceId: string, body: unknown): Promise<ShipmentReply> {
      const input = parseInput(shipmentSchema, body);
      const properties = parseInput(shipmentBodySchema, body);
      const email = input.customer?.email ?? null;
      return writer.run(async (trx) => {
        const [recorded] = await recordShipments(trx, [
          {
            workspaceId,
            orderRef: input.order.origin_order_id,
            status: input.shipment_status.slug,
            email,
            contactSource: SHIPMENT_CONTACT_SOURCE,
            source: input.order.site?.platform?.slug ?? null,
            properties,
            at: Date.now(),
          },
        ]);
        return { status: 'processed', event_id: recorded!.eventId, event_type: SHIPPING_INFORMATION, has_contact: recorded!.contactId !== null };
      });
    },

    /**
     * POST /api/v1/events/order-update: `delivered`/`complete` set the matched order's Shipping Status to
     * `Delivered`, `cancelled` to `Canceled`, any other slug leaves it. The `order_updated` trigger fires every
     * time someone can be enrolled: the existing contact of `customer.email` (never created here), else the
     * order's contact.
     */
    async orderUpdate(workspaceId: string, body: unknown): Promise<OrderUpdateReply> {
      const input = parseInput(orderUpdateSchema, body);
      const ref = input.origin_order_id;
      const email = input.customer?.email ?? null;
      const label = orderUpdateLabel(input.order_status.slug);
      return writer.run(async (trx) => {
        const now = Date.now();
        const matches = await store.matchOrders(trx, workspaceId, [ref]);
        const byEmail = email ? await contactLookup.findByEmails(trx, [[workspaceId, email]]) : null;
        const order = matches.get(ref) ?? null;
        const contactId = (email ? byEmail?.get(contactKey(workspaceId, email))?.id : undefined) ?? order?.contact_id ?? null;
        const shippingStatus = order ? (label ?? order.shipping_status) : null;
        if (order && label && label !== order.shipping_status) {
          await store.setShippingStatus(trx, new Map([[order.id, label]]), now);
        }
        if (contactId) {
          await outbox.record(trx, [
            {
              workspaceId,
              triggerType: 'order_updated',
              contactId,
              subjectType: 'order',
              // No order matched: the trigger still fires for the contact, its subject a fresh id.
              subjectId: order?.id ?? uuidv7(now),
              payload: {
                origin_order_id: ref,
                order_status: { slug: input.order_status.slug, name: input.order_status.name ?? null },
                order_id: order?.id ?? null,
                shipping_status: shippingStatus,
              },
              at: now,
            },
          ]);
        }
        return { status: 'processed', order_id: order?.id ?? null, shipping_status: shippingStatus, has_contact: contactId !== null };
      });
    },
  };
}

export type ShipmentService = ReturnType<typeof createShipmentService>;
