import type { CartRecord, CartService } from '../carts/cart-service.js';
import type { Db } from '../db/database.js';
import type { EventRecords } from '../events/event-records.js';
import type { OrderLookup } from '../orders/order-lookup.js';
import type { OutboxFact } from '../triggers/trigger-outbox.js';
import type { TriggerContext } from './flow-store.js';

/** The canonical product-viewed event (`product_viewed` is its alias). */
export const VIEWED_PRODUCT = 'viewed_product';

const cartVariables = (cart: CartRecord): NonNullable<TriggerContext['cart']> => ({
  external_id: cart.external_id,
  total_amount: cart.total_amount,
  currency: cart.currency,
  checkout_url: cart.checkout_url,
  items: cart.items,
});

/**
 * What each trigger fact shows an email step's templates (docs/email.md, Templates: `event`, `order`, `cart`),
 * read for a whole batch of facts in one query per kind and kept with the enrolment, so a later email shows
 * the trigger as it was.
 */
export function createTriggerContexts(deps: { eventRecords: EventRecords; orders: OrderLookup; carts: Pick<CartService, 'find'> }) {
  const { eventRecords, orders: orderLookup, carts: cartLookup } = deps;

  return {
    async load(db: Db, facts: OutboxFact[]): Promise<Map<number, TriggerContext>> {
      const idsOf = (type: OutboxFact['subjectType']) => [...new Set(facts.filter((f) => f.subjectType === type).map((f) => f.subjectId))];
      const events = new Map((await eventRecords.findByIds(db, idsOf('event'))).map((e) => [e.id, e]));
      const orders = new Map((await orderLookup.recordsByIds(db, idsOf('order'))).map((o) => [o.id, o]));
      const carts = new Map((await cartLookup.find(db, { ids: idsOf('cart') })).map((c) => [c.id, c]));

      const contexts = new Map<number, TriggerContext>();
      for (const fact of facts) {
        const context: TriggerContext = {};
        const event = fact.subjectType === 'event' ? events.get(fact.subjectId) : undefined;
        if (event) context.event = { name: event.event_name, properties: event.properties, created_at: event.created_at };
        const order = fact.subjectType === 'order' ? orders.get(fact.subjectId) : undefined;
        if (order) {
          context.order = {
            id: order.order_number,
            external_id: order.external_id,
            total_amount: order.total_amount,
            currency: order.currency,
            status: order.status,
            items: order.items,
          };
        }
        const cart = fact.subjectType === 'cart' ? carts.get(fact.subjectId) : undefined;
        if (cart) context.cart = cartVariables(cart);
        contexts.set(fact.id, context);
      }
      return contexts;
    },

    /** Whether a cart became an order (a platform's completed checkout): its abandoned-cart wait ends there. */
    async cartConverted(db: Db, cartId: string): Promise<boolean> {
      const [cart] = await cartLookup.find(db, { ids: [cartId] });
      return cart?.converted === true;
    },

    /**
     * A browse abandonment's products: the properties of the contact's `viewed_product` events in the range,
     * newest first, one per product (`product_id`, else `id`, `url` or `title`), at most 10.
     */
    async viewedProducts(db: Db, workspaceId: string, contactId: string, range: { after: number; upTo?: number }): Promise<Array<Record<string, unknown>>> {
      const views = await eventRecords.ofContact(db, workspaceId, contactId, VIEWED_PRODUCT, range, 100);
      const seen = new Set<string>();
      const products: Array<Record<string, unknown>> = [];
      for (const view of views) {
        const p = view.properties;
        const key = JSON.stringify(p.product_id ?? p.id ?? p.url ?? p.title ?? view.id);
        if (seen.has(key)) continue;
        seen.add(key);
        products.push(p);
        if (products.length === 10) break;
      }
      return products;
    },

    /**
     * Whether the contact viewed a product after this view: views are ordered by time, then by id (two views in
     * one millisecond: exactly one of them is the last).
     */
    async viewedSince(db: Db, workspaceId: string, contactId: string, view: { id: string; at: number }): Promise<boolean> {
      const views = await eventRecords.ofContact(db, workspaceId, contactId, VIEWED_PRODUCT, { after: view.at - 1 }, 100);
      return views.some((v) => Date.parse(v.created_at) > view.at || (v.id !== view.id && v.id > view.id));
    },

    /** A contact's latest cart, for abandoned carts seen only through events (no cart row of their own). */
    async latestCart(db: Db, contactId: string): Promise<TriggerContext['cart'] | undefined> {
      const [cart] = await cartLookup.find(db, { contactId });
      return cart ? cartVariables(cart) : undefined;
    },
  };
}

export type TriggerContexts = ReturnType<typeof createTriggerContexts>;
