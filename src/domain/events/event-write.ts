import type { EventRecord } from './event.schema.js';

/**
 * Who an event belongs to: a known contact, an email (found or created), an email of an existing contact
 * (never created: the batch endpoint), or an anonymous visitor.
 */
export type EventOwner =
  | { contactId: string }
  | { email: string; anonymousId?: string }
  | { existingEmail: string }
  | { anonymousId: string };

export interface EventWrite {
  workspaceId: string;
  owner: EventOwner;
  eventName: string;
  properties: Record<string, unknown>;
  source: string | null;
  occurredAt: number;
  /** False for history backfills: stored without firing flow triggers. */
  fireTrigger: boolean;
  /** `source` of a contact this event creates. */
  contactSource: string;
  /** Sent through the public Collect API: a `shipping_information` event from there never changes an order. */
  viaCollect?: boolean;
}

export type EventWriteResult = { record: EventRecord } | { error: 'contact not found' | 'contact limit reached' };
