import { z } from 'zod';
import { consentChangeSchema, contactRecordSchema, type ConsentChange, type Contact } from '../contacts/contact.schema.js';
import { eventRecordSchema, type EventRecord } from '../events/event.schema.js';
import { messageRecordSchema, type MessageRecord } from '../messages/message.schema.js';
import { orderRecordSchema, type Order } from '../orders/order.schema.js';

/** GET /api/v1/contacts/{id}/export: everything kept about one person (docs/api/data-rights.md). */
export interface ContactExport {
  contact: Contact;
  /** Newest first, as the lists order them. */
  events: EventRecord[];
  orders: Order[];
  messages: MessageRecord[];
  /** Oldest first. */
  consent: ConsentChange[];
}

export const contactExportSchema = z.object({
  contact: contactRecordSchema,
  events: z.array(eventRecordSchema),
  orders: z.array(orderRecordSchema),
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
