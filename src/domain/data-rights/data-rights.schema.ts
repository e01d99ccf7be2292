import { z } from 'zod';
import { consentChangeSchema, contactRecordSchema, type ConsentChange, type Contact } from '../contacts/contact.schema.js';
import { eventRecordSchema, type EventRecord } from '../events/event.schema.js';
import { messageRecordSchema, type MessageRecord } from '../messages/message.schema.js';
import { orderRecordSchema, type Order } from '../orders/order.schema.js';

/**
 * A cart of the person as the export shows it: carts have no list of their own in the management API, so this is
 * their one record shape (docs/api/data-rights.md#export).
 */
export interface ExportedCart {
  id: string;
  /** The shop's id of the cart or checkout; null when the cart event named none. */
  external_id: string | null;
  /** The cart's last event: `added_to_cart` or `started_checkout`. */
  last_event_type: string;
  /** The items as the shop sent them. */
  items: unknown[];
  total_amount: number | null;
  currency: string | null;
  /** The link that restores the cart (the abandoned-cart message's recovery URL). */
  checkout_url: string | null;
  /** When the checkout became an order; null while it has not. */
  converted_at: string | null;
  created_at: string;
  updated_at: string;
}

export const exportedCartSchema = z.object({
  id: z.string(),
  external_id: z.string().nullable(),
  last_event_type: z.string(),
  items: z.array(z.unknown()),
  total_amount: z.number().nullable(),
  currency: z.string().nullable(),
  checkout_url: z.string().nullable(),
  converted_at: z.string().nullable(),
  created_at: z.string(),
  updated_at: z.string(),
}) satisfies z.ZodType<ExportedCart>;

/** GET /api/v1/contacts/{id}/export: everything kept about one person (docs/api/data-rights.md). */
export interface ContactExport {
  contact: Contact;
  /** Newest first, as the lists order them. */
  events: EventRecord[];
  orders: Order[];
  /** Newest change first. */
  carts: ExportedCart[];
  messages: MessageRecord[];
  /** Oldest first. */
  consent: ConsentChange[];
}

export const contactExportSchema = z.object({
  contact: contactRecordSchema,
  events: z.array(eventRecordSchema),
  orders: z.array(orderRecordSchema),
  carts: z.array(exportedCartSchema),
  messages: z.array(messageRecordSchema),
  consent: z.array(consentChangeSchema),
}) satisfies z.ZodType<ContactExport>;

/** A platform's request for what is kept about a person (Shopify's `customers/data_request`), to fulfil with `emk contacts export`. */
export interface DataRequest {
  id: string;
  email: string;
  /** The contact of that email when the request arrived; null when there was none. */
  contact_id: string | null;
  integration_id: string;
  /** The platform's id of the request (Shopify's `data_request.id`). */
  request_id: string | null;
  received_at: string;
}

export const dataRequestRecordSchema = z.object({
  id: z.string(),
  email: z.string(),
  contact_id: z.string().nullable(),
  integration_id: z.string(),
  request_id: z.string().nullable(),
  received_at: z.string(),
}) satisfies z.ZodType<DataRequest>;
