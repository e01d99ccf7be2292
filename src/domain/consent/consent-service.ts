import type { Knex } from 'knex';
import type { ContactService } from '../contacts/contact-service.js';
import type { ContactLookup } from '../contacts/contact-lookup.js';
import type { SubscriptionStatus } from '../contacts/contact.schema.js';
import type { TrackingService } from '../tracking/tracking-service.js';
import type { WorkspaceService } from '../workspaces/workspace-service.js';

/** What the consent pages show. */
export interface ConsentView {
  email: string;
  status: SubscriptionStatus;
  workspaceName: string;
}

/**
 * The recipient's side of consent (docs/email.md, Consent): the unsubscribe and preferences links every
 * marketing message carries. A token names a contact of one workspace; one that is not ours changes nothing.
 * Every change lands in the contact's consent history with its origin and the message whose link it was.
 */
export function createConsentService(deps: {
  knex: Knex;
  tracking: TrackingService;
  contactLookup: ContactLookup;
  contacts: ContactService;
  workspaces: WorkspaceService;
}) {
  const { knex, tracking, contactLookup, contacts, workspaces } = deps;

  async function subjectOf(token: string) {
    const subject = await tracking.consentSubject(token);
    const contact = subject && (await contactLookup.findById(knex, subject.workspaceId, subject.contactId));
    return subject && contact ? { ...subject, contact } : null;
  }

  return {
    /** Null for a token that is not ours or whose contact is gone. */
    async view(token: string): Promise<ConsentView | null> {
      const subject = await subjectOf(token);
      if (!subject) return null;
      const workspace = await workspaces.get(subject.workspaceId);
      return { email: subject.contact.email, status: subject.contact.subscription_status, workspaceName: workspace.name };
    },

    /** Sets the status; `origin` says how (`unsubscribe_link`, `one_click`, `preferences_page`). */
    async setStatus(token: string, status: SubscriptionStatus, origin: string): Promise<ConsentView | null> {
      const subject = await subjectOf(token);
      if (!subject) return null;
      await contacts.changeStatus(subject.workspaceId, subject.contactId, status, origin, subject.messageId);
      const workspace = await workspaces.get(subject.workspaceId);
      return { email: subject.contact.email, status, workspaceName: workspace.name };
    },
  };
}

export type ConsentService = ReturnType<typeof createConsentService>;
