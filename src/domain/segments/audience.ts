import type { Knex } from 'knex';
import type { Db } from '../db/database.js';
import { notSuppressedSql } from '../suppressions/suppressed-sql.js';

/** The status that lets a contact get marketing mail (docs/email.md, Consent). */
const MARKETING_STATUS = 'subscribed';

/**
 * Who may get a campaign: the workspace's contacts who are subscribed, whose address is not suppressed and who
 * are not erased, and with a segment, its members as the membership table holds them now. Selects `c.id`,
 * `c.workspace_id` and `c.email`, for the message rows written from it in one statement.
 */
export function campaignAudience(db: Db, workspaceId: string, segmentId: string | null): Knex.QueryBuilder {
  const audience = db('contacts as c')
    .where({ 'c.workspace_id': workspaceId, 'c.subscription_status': MARKETING_STATUS })
    .whereNull('c.erased_at')
    .whereRaw(notSuppressedSql('c'));
  if (segmentId !== null) {
    audience.whereExists(db('segment_members as sm').where('sm.segment_id', segmentId).whereRaw('sm.contact_id = c.id').select(db.raw('1')));
  }
  return audience.select('c.id', 'c.workspace_id', 'c.email');
}

/**
 * The same rule when a message is about to leave (status and suppressions may have changed since it was
 * queued): a suppressed address gets nothing, and marketing goes to subscribed contacts only.
 */
export function mayStillReceive(message: { message_type: string; contact: { subscription_status: string } }, suppressed: boolean): boolean {
  return !suppressed && (message.message_type !== 'marketing' || message.contact.subscription_status === MARKETING_STATUS);
}
