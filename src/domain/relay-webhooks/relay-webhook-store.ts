import type { Db } from '../db/database.js';
import type { RelayProvider } from './relay-webhook.schema.js';

export interface RelayWebhookRow {
  id: string;
  workspace_id: string;
  provider: RelayProvider;
  secret: string | null;
  public_key: string | null;
  topic_arn: string | null;
  subscribe_url: string | null;
  confirmed_at: number | null;
  created_at: number;
}

/** The relay_webhooks and relay_events tables; no rules. */
export function createRelayWebhookStore() {
  const readRow = (row: Record<string, unknown>): RelayWebhookRow => ({
    ...(row as unknown as RelayWebhookRow),
    confirmed_at: row.confirmed_at === null || row.confirmed_at === undefined ? null : Number(row.confirmed_at),
    created_at: Number(row.created_at),
  });
  return {
    async insert(db: Db, row: RelayWebhookRow): Promise<void> {
      await db('relay_webhooks').insert(row);
    },

    async list(db: Db, workspaceId: string): Promise<RelayWebhookRow[]> {
      return (await db('relay_webhooks').where({ workspace_id: workspaceId }).orderBy('created_at').orderBy('id')).map(readRow);
    },

    async find(db: Db, id: string): Promise<RelayWebhookRow | null> {
      const row = await db('relay_webhooks').where({ id }).first();
      return row ? readRow(row) : null;
    },

    /** An SNS subscription: the topic is kept where none is yet; the link until it is confirmed. */
    async recordSubscription(db: Db, id: string, topicArn: string, subscribeUrl: string, confirmedAt: number | null): Promise<void> {
      await db('relay_webhooks').where({ id }).whereNull('topic_arn').update({ topic_arn: topicArn });
      await db('relay_webhooks')
        .where({ id, topic_arn: topicArn })
        .update(confirmedAt === null ? { subscribe_url: subscribeUrl } : { subscribe_url: null, confirmed_at: confirmedAt });
    },

    /** Which of these event keys the webhook has acted on already. */
    async seenKeys(db: Db, webhookId: string, keys: string[]): Promise<Set<string>> {
      if (keys.length === 0) return new Set();
      const rows: Array<{ event_key: string }> = await db('relay_events').where({ webhook_id: webhookId }).whereIn('event_key', keys).select('event_key');
      return new Set(rows.map((r) => r.event_key));
    },

    /** Records one event's key; false when another call recorded it first. */
    async claimKey(db: Db, webhookId: string, key: string, now: number): Promise<boolean> {
      const rows = await db('relay_events').insert({ webhook_id: webhookId, event_key: key, created_at: now }).onConflict(['webhook_id', 'event_key']).ignore().returning('event_key');
      return (rows as unknown[]).length === 1;
    },
  };
}
