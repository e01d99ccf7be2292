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
