import type { Knex } from 'knex';
import type { Db } from '../db/database.js';
import type { Dialect } from '../db/dialect/dialect.js';
import type { ContactlessOrders } from '../orders/contactless-orders.js';
import { customerRef, identitiesOf, identityKey, identityOfRef, phoneKey, type BuyerIdentity, type Identity, type IdentityKind } from './contact-identity.js';
import { createContactIdentityStore, type IdentityRow } from './contact-identity-store.js';

/** A write of a contact's properties, as the contacts' writes report it. */
export interface ContactPropertyWrite {
  workspaceId: string;
  contactId: string;
  /** The properties before the write; null for a contact the write created. */
  before: Record<string, unknown> | null;
  after: Record<string, unknown>;
  /** The properties the write named: an identity among them is claimed even where the contact held it already. */
  named: Record<string, unknown>;
}

/**
 * The contacts that platform customer ids and phone numbers name (docs/platforms/README.md, Orders without an
 * email). Each identity names one contact: the contact last written with it. Kept in step with every write of
 * contacts' properties, in its transaction; a contact that comes to hold a customer id takes the orders kept
 * without a contact for that customer.
 */
export function createContactIdentityService(deps: { dialect: Dialect; contactlessOrders: Pick<ContactlessOrders, 'join'> }) {
  const store = createContactIdentityStore(deps.dialect);
  const rowOf = (workspaceId: string, identity: Identity, contactId: string): IdentityRow => ({
    workspace_id: workspaceId,
    kind: identity.kind,
    value: identity.value,
    contact_id: contactId,
  });

  return {
    /**
     * Follows writes of contacts' properties, in order: an identity a contact no longer has is released (where it
     * still holds it); one it gained, or one the write named, becomes its own. Contact-less orders of the customer
     * ids it holds join it. Writes without an identity cost no statement.
     */
    async record(trx: Knex.Transaction, writes: ContactPropertyWrite[]): Promise<void> {
      const claims = new Map<string, IdentityRow>();
      const released: IdentityRow[] = [];
      for (const write of writes) {
        const key = (identity: Identity) => identityKey(write.workspaceId, identity);
        const held = identitiesOf(write.after);
        const heldKeys = new Set(held.map(key));
        const had = write.before === null ? [] : identitiesOf(write.before);
        const hadKeys = new Set(had.map(key));
        const named = new Set(identitiesOf(write.named).map(key));
        for (const identity of had) {
          if (heldKeys.has(key(identity))) continue;
          released.push(rowOf(write.workspaceId, identity, write.contactId));
          if (claims.get(key(identity))?.contact_id === write.contactId) claims.delete(key(identity));
        }
        for (const identity of held) {
          if (!hadKeys.has(key(identity)) || named.has(key(identity))) claims.set(key(identity), rowOf(write.workspaceId, identity, write.contactId));
        }
      }
      if (released.length > 0) await store.release(trx, released);
      if (claims.size === 0) return;
      await store.claim(trx, [...claims.values()]);
      const customers = [...claims.values()].filter((row) => row.kind !== 'phone');
      await deps.contactlessOrders.join(
        trx,
        customers.map((row) => ({ workspaceId: row.workspace_id, customerRef: customerRef(row as Identity), contactId: row.contact_id })),
      );
    },

    /**
     * The contact of each buyer without an email: the one holding its platform customer id, else its phone
     * number (`by` says which); null when none does.
     */
    async contactsOf(db: Db, workspaceId: string, buyers: BuyerIdentity[]): Promise<Array<{ contactId: string; by: IdentityKind } | null>> {
      const named = buyers.map((buyer) => {
        const phone = phoneKey(buyer.phone);
        return [buyer.customerRef === null ? null : identityOfRef(buyer.customerRef), phone === null ? null : ({ kind: 'phone', value: phone } as Identity)];
      });
      const wanted = named.flat().filter((identity): identity is Identity => identity !== null);
      if (wanted.length === 0) return buyers.map(() => null);
      const holders = await store.holders(db, workspaceId, wanted);
      return named.map((identities) => {
        for (const identity of identities) {
          const holder = identity === null ? undefined : holders.get(identityKey(workspaceId, identity));
          if (holder !== undefined) return { contactId: holder, by: identity!.kind };
        }
        return null;
      });
    },

    /** An erasure: the contacts' identities go with their personal data. */
    forget: (trx: Knex.Transaction, workspaceId: string, contactIds: string[]) => store.deleteOfContacts(trx, workspaceId, contactIds),
  };
}

export type ContactIdentityService = ReturnType<typeof createContactIdentityService>;
