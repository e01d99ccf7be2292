import type { Knex } from 'knex';
import { deferWrite } from '../db/deferred-writes.js';
import type { Dialect } from '../db/dialect/dialect.js';
import { compositeKey } from '../shared/keys.js';

/** A contact as an event's owner needs it: who it is, and what identifies it. */
export interface KnownContact {
  id: string;
  workspace_id: string;
  email_key: string;
}

/** Contacts remembered at most; the oldest is forgotten first. */
const CAPACITY = 100_000;

/**
 * Contacts this process has seen stored, so that a group commit of events need not look their owners up: under
 * load that lookup is a wait of its own before the group's one script (issue 16). A remembered contact is never
 * trusted: the transaction that uses it checks, inside itself and before its first write, that every contact it
 * took still exists, unerased, with the same workspace and email (`Dialect.failUnlessCount`, held with the
 * writes). If one does not (erased, its email changed, by this process or another), the check fails as a lock
 * conflict and the transaction runs again, looking its owners up: a taken contact leaves the memory until the
 * transaction that took it commits, so the second attempt cannot take it again.
 */
export function createKnownContacts(dialect: Dialect) {
  const byEmail = new Map<string, KnownContact>();
  const byId = new Map<string, KnownContact>();
  const emailKeyOf = (c: KnownContact) => compositeKey(c.workspace_id, c.email_key);
  const idKeyOf = (c: KnownContact) => compositeKey(c.workspace_id, c.id);

  const forget = (contact: KnownContact) => {
    byEmail.delete(emailKeyOf(contact));
    byId.delete(idKeyOf(contact));
  };
  const remember = (contact: KnownContact) => {
    forget(contact);
    if (byId.size >= CAPACITY) forget(byId.values().next().value!);
    const copy = { id: contact.id, workspace_id: contact.workspace_id, email_key: contact.email_key };
    byEmail.set(emailKeyOf(copy), copy);
    byId.set(idKeyOf(copy), copy);
  };

  return {
    /** One transaction's use: take what is remembered, learn what it read, then `check` before its writes. */
    within(trx: Knex.Transaction) {
      const taken = new Map<string, KnownContact>();
      const takenByEmail = new Map<string, KnownContact>();
      const learned: KnownContact[] = [];
      const take = (contact: KnownContact | undefined): KnownContact | undefined => {
        if (!contact) return undefined;
        forget(contact);
        taken.set(idKeyOf(contact), contact);
        takenByEmail.set(emailKeyOf(contact), contact);
        return contact;
      };
      return {
        /** The id of the contact of `contactKey(workspace, email)`, if remembered. */
        idByEmail: (contactKey: string): string | undefined => (takenByEmail.get(contactKey) ?? take(byEmail.get(contactKey)))?.id,

        /** Whether contact `id` of the workspace is remembered. */
        hasId: (workspaceId: string, id: string): boolean =>
          taken.has(compositeKey(workspaceId, id)) || take(byId.get(compositeKey(workspaceId, id))) !== undefined,

        /** Contacts read or created by this transaction, remembered once it commits. */
        learn(contacts: Iterable<KnownContact>) {
          learned.push(...contacts);
        },

        /** Holds the check of what was taken (a statement sent with the writes) and remembers all after the commit. */
        async check(): Promise<void> {
          const used = [...taken.values()];
          const all = [...used, ...learned];
          if (all.length > 0) void trx.executionPromise.then(() => all.forEach(remember), () => {});
          if (used.length === 0) return;
          const tuples = used.map(() => '(?, ?, ?)').join(', ');
          const count = {
            sql: `SELECT count(*) AS n FROM contacts WHERE erased_at IS NULL AND (id, workspace_id, email_key) IN (VALUES ${tuples})`,
            bindings: used.flatMap((c) => [c.id, c.workspace_id, c.email_key]),
          };
          // Planned once: PostgreSQL took longer to plan the check than to run it
          // (docs/performance.md#eighth-pass-statistics-from-the-first-thousand-rows-the-outboxs-contact-index).
          const { sql, bindings } = dialect.plannedOnce('known_contacts', dialect.failUnlessCount(count, used.length));
          await deferWrite(dialect, trx, trx.raw(sql, bindings));
        },
      };
    },
  };
}

export type KnownContacts = ReturnType<typeof createKnownContacts>;
/** One transaction's view of the remembered contacts. */
export type RememberedContacts = ReturnType<KnownContacts['within']>;
