import type { SubscriptionStatus } from '../contacts/contact.schema.js';
import type { OrderItem } from '../orders/order.schema.js';
import type { ShippingStatus } from '../shipments/shipment.schema.js';

/**
 * What a shop platform's delivery means to emk, in no platform's words. The platform mappers
 * (`shopify/`, `woocommerce/`) read a topic and its payload into these; `platform-webhooks/` applies them.
 * Times are epoch milliseconds; money is a number in the shared range; emails are already validated.
 */

/** The platform's own record of a customer's email-marketing consent. */
export interface PlatformConsent {
  status: SubscriptionStatus;
  /** When the platform recorded it; null when it does not say (then it only sets the status of a new contact). */
  at: number | null;
}

/** A customer as the platform describes them. */
export interface PlatformCustomer {
  email: string;
  /** Merged into the contact: `first_name`, `last_name`, `phone`, and the platform's id (`shopify_customer_id`, …). */
  properties: Record<string, unknown>;
  consent: PlatformConsent | null;
}

/**
 * The buyer of an order that names no usable email (a point-of-sale or phone order): the platform's customer id
 * and a phone number, either may be null. The order is kept against the contact they name, else without one
 * (docs/platforms/README.md, Orders without an email).
 */
export interface PlatformBuyer {
  customerId: string | null;
  phone: string | null;
}

/** A refund, by the platform's id: refunds add up by id, so a refund seen twice (topic and snapshot) counts once. */
export interface PlatformRefund {
  id: string;
  amount: number;
  /** The currency it was made in (Shopify: the one the buyer paid); null: the order's. */
  currency: string | null;
  /** When the platform made it (Shopify's `processed_at`); null when it does not say: then when emk first saw it. */
  at: number | null;
}

/** An order as a whole snapshot at the platform's `updatedAt`. */
export interface PlatformOrder {
  externalId: string;
  orderNumber: string | null;
  /** In the shop's currency. */
  totalAmount: number;
  /** Null when the payload names none: the order is in the workspace's currency (settings `currency`). */
  currency: string | null;
  /** The currency the platform says the shop keeps its books in, learnt by a workspace that has none yet. */
  shopCurrency: string | null;
  /** What the buyer paid in, when not the shop's currency: kept for reference, and the rate refunds in it convert at. */
  presentment: { currency: string; totalAmount: number } | null;
  /** The platform's status, stored as sent (Shopify's `financial_status`, WooCommerce's `status`). */
  status: string;
  orderedAt: number;
  items: OrderItem[];
  cancelled: boolean;
  /** When the platform cancelled it (Shopify's `cancelled_at`); null when it does not say: then when emk received it. */
  cancelledAt: number | null;
  refunds: PlatformRefund[];
  /** The platform's last-modified time: an older snapshot never overwrites a newer one. Null: unknown. */
  updatedAt: number | null;
}

export type StoreChange =
  /**
   * A whole order. `placed` false (an unpaid WooCommerce order) stores nothing new but updates a stored order.
   * `buyer`: who bought it when `customer` is null (no usable email).
   */
  | { kind: 'order'; customer: PlatformCustomer | null; identityToken: string | null; order: PlatformOrder; placed: boolean; buyer?: PlatformBuyer }
  /** Refunds of a stored order, by its external id (Shopify's `refunds/create`). */
  | { kind: 'order_refunds'; orderExternalId: string; refunds: PlatformRefund[] }
  /** A stored order cancelled without a snapshot (WooCommerce's `order.deleted`, which sends only the id). */
  | { kind: 'order_cancelled'; orderExternalId: string }
  /**
   * A test order (Shopify's `test: true`, WooPayments' test mode): only its id is kept, so that nothing of it is
   * stored (no order, revenue, contact or consent) and what later names it (a refund, a fulfillment) is dropped too.
   */
  | { kind: 'test_order'; orderExternalId: string }
  /** A shipment of a stored order: the spec's shipping status machine. */
  | {
      kind: 'shipment';
      orderExternalId: string;
      status: ShippingStatus;
      trackingNumber: string | null;
      carrier: string | null;
      email: string | null;
    }
  /** A checkout: the cart (abandoned-cart flows); `completed` when it became an order. */
  | {
      kind: 'cart';
      customer: PlatformCustomer | null;
      identityToken: string | null;
      cart: {
        externalId: string;
        totalAmount: number | null;
        currency: string | null;
        checkoutUrl: string | null;
        items: OrderItem[];
        completed: boolean;
      };
    }
  | { kind: 'customer'; customer: PlatformCustomer }
  /** A catalog product in the product field names (spec, Product); applied as the website's `product_updated`. */
  | { kind: 'product_upsert'; product: Record<string, unknown> }
  | { kind: 'product_delete'; externalId: string }
  /** Privacy: erase the contact with this email as `DELETE /contacts/{id}` does. */
  | { kind: 'customer_redact'; email: string }
  /** Privacy: a data request the operator fulfils with `emk contacts export`. */
  | { kind: 'data_request'; email: string; requestId: string | null }
  /** Privacy: the shop is gone: deactivate the integration and erase what came only from it. */
  | { kind: 'shop_redact' };

/** A delivery read by a platform mapper: what to apply, or nothing (a topic emk does not use). */
export type MappedDelivery =
  | { status: 'mapped'; changes: StoreChange[]; warnings: string[] }
  | { status: 'ignored' };

/** What a mapper knows of the integration a delivery arrived on. */
export interface MappingContext {
  /** The shop's host (`example.myshopify.com`, `shop.example.com`): product URLs are built from it. */
  shopDomain: string;
}
