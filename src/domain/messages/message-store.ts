import type { Knex } from 'knex';
import { deferWrite } from '../db/deferred-writes.js';
import type { Db } from '../db/database.js';
import { chunk, chunkSizeFor, valuesList } from '../db/bulk.js';
import type { Dialect } from '../db/dialect/dialect.js';
import { NEWEST_FIRST, selectPage } from '../db/page.js';
import type { Paging } from '../shared/paging.js';
import { toIso } from '../shared/time.js';
import { MESSAGE_STATUSES, type MessageRecord, type MessageStatus, type MessageType } from './message.schema.js';

/** A message about to be rendered, with what its template reads of the recipient. */
export interface PendingMessage {
  id: string;
  workspace_id: string;
  contact_id: string;
  campaign_id: string | null;
  flow_id: string | null;
  enrollment_id: string | null;
  /** The A/B variant's index this message gets, or null (the campaign's or flow step's own content). */
  variant: number | null;
  message_type: MessageType;
  to: string;
  status: MessageStatus;
  contact: { email: string; properties: Record<string, unknown>; subscription_status: string };
}

/** What became of a message: written for many messages in one statement. */
export interface MessageOutcome {
  id: string;
  status: MessageStatus;
  subject: string | null;
  html: string | null;
  text: string | null;
  error: string | null;
  sent_at: number | null;
}

/** A message as tracking reads it. */
export interface TrackedMessage {
  id: string;
  workspace_id: string;
  contact_id: string;
  campaign_id: string | null;
  flow_id: string | null;
}

/** A message as relay webhooks read it. */
export interface RelayedMessage {
  id: string;
  contact_id: string;
  to: string;
  status: MessageStatus;
}

/** What a relay's webhook reports of a message: its status, one more soft bounce, or its delivery. */
export type RelayReport = 'bounced' | 'complained' | 'soft_bounce' | 'delivered';

/** Audience rows read per page while an A/B test's split keys are staged. */
const SPLIT_PAGE_ROWS = 5_000;

const UNFINISHED: MessageStatus[] = ['queued', 'sending'];
/** Handed over: a message a relay later reported bounced or complained about was sent all the same. */
const DELIVERED: MessageStatus[] = ['sent', 'captured', 'bounced', 'complained'];

/** Messages handed over (`sent` in reports). */
const sentColumn = (db: Db) => db.raw(`SUM(CASE WHEN status IN ('${DELIVERED.join("','")}') THEN 1 ELSE 0 END) AS sent`);
/** Handed over (`sent`), reported delivered, bounced and complained about: the deliverability counts' columns. */
const deliverabilityColumns = (db: Db) => [
  sentColumn(db),
  db.raw('COUNT(delivered_at) AS delivered'),
  db.raw(`SUM(CASE WHEN status = 'bounced' THEN 1 ELSE 0 END) AS bounced`),
  db.raw(`SUM(CASE WHEN status = 'complained' THEN 1 ELSE 0 END) AS complained`),
];
const deliverabilityOf = (row: Record<string, unknown> | undefined) => ({
  sent: Number(row?.sent ?? 0),
  delivered: Number(row?.delivered ?? 0),
  bounced: Number(row?.bounced ?? 0),
  complained: Number(row?.complained ?? 0),
});
/** A workspace's campaign and flow messages written since `since` (the `(workspace_id, created_at)` index). */
const sendsSince = (db: Db, workspaceId: string, since: number) =>
  db('messages')
    .where({ workspace_id: workspaceId })
    .where('created_at', '>=', since)
    .where((q) => q.whereNotNull('campaign_id').orWhereNotNull('flow_id'));

/** A flow step's message as first written: queued, keyed by enrolment × step. */
export interface FlowMessageRow {
  id: string;
  workspace_id: string;
  contact_id: string;
  flow_id: string;
  enrollment_id: string;
  dedupe_key: string;
  message_type: MessageType;
  to_email: string;
}

/** How many messages a campaign has and its batch count. */
async function campaignSize(trx: Knex.Transaction, campaignId: string): Promise<{ recipients: number; batches: number }> {
  const row = await trx('messages').where({ campaign_id: campaignId }).select(trx.raw('COUNT(*) AS n'), trx.raw('MAX(batch) AS last')).first();
  const recipients = Number(row?.n ?? 0);
  return { recipients, batches: recipients === 0 ? 0 : Number(row?.last) + 1 };
}

export function createMessageStore(dialect: Dialect) {
  /** Messages that have not reached an end, with what their templates read of the recipient. */
  async function pending(db: Db, where: (q: Knex.QueryBuilder) => void): Promise<PendingMessage[]> {
    const query = db('messages as m').join('contacts as c', 'c.id', 'm.contact_id').whereIn('m.status', UNFINISHED).orderBy('m.id');
    where(query);
    const rows = await query.select(
      'm.id',
      'm.workspace_id',
      'm.contact_id',
      'm.campaign_id',
      'm.flow_id',
      'm.enrollment_id',
      'm.variant',
      'm.message_type',
      'm.to_email',
      'm.status',
      'c.email',
      'c.properties',
      'c.subscription_status',
    );
    return rows.map((row: Record<string, unknown>) => ({
      id: row.id as string,
      workspace_id: row.workspace_id as string,
      contact_id: row.contact_id as string,
      campaign_id: (row.campaign_id as string | null) ?? null,
      flow_id: (row.flow_id as string | null) ?? null,
      enrollment_id: (row.enrollment_id as string | null) ?? null,
      variant: dialect.readNullableNumber(row.variant),
      message_type: row.message_type as MessageType,
      to: row.to_email as string,
      status: row.status as MessageStatus,
      contact: {
        email: row.email as string,
        properties: dialect.readJson<Record<string, unknown>>(row.properties) ?? {},
        subscription_status: row.subscription_status as string,
      },
    }));
  }

  const toRecord = (row: Record<string, unknown>): MessageRecord => ({
    id: row.id as string,
    contact_id: row.contact_id as string,
    campaign_id: (row.campaign_id as string | null) ?? null,
    flow_id: (row.flow_id as string | null) ?? null,
    enrollment_id: (row.enrollment_id as string | null) ?? null,
    variant: dialect.readNullableNumber(row.variant ?? null),
    to: row.to_email as string,
    subject: (row.subject as string | null) ?? null,
    html: (row.html as string | null) ?? null,
    text: (row.text as string | null) ?? null,
    status: row.status as MessageStatus,
    error: (row.error as string | null) ?? null,
    sent_at: toIso(row.sent_at as number | null),
    delivered_at: toIso((row.delivered_at as number | null) ?? null),
    soft_bounces: Number(row.soft_bounces ?? 0),
    opened_at: toIso(row.opened_at as number | null),
    clicked_at: toIso(row.clicked_at as number | null),
    created_at: toIso(row.created_at as number)!,
  });

  /**
   * Queues a campaign message for each row `r` of `source` (a contact's `id`, `workspace_id` and `email`, and what
   * `placement` reads), keyed campaign × contact, so a contact with a message of the campaign already adds nothing.
   * `placement` is the SQL of the message's batch, then its variant. Written in contact order: the messages'
   * indexes then grow at their ends (an A/B group written in key order took twice as long on SQLite).
   */
  async function insertCampaignMessages(
    trx: Knex.Transaction,
    args: { campaignId: string; now: number; placement: { sql: string; bindings: unknown[] }; source: { sql: string; bindings: readonly unknown[] } },
  ): Promise<void> {
    // `WHERE 1 = 1`: SQLite reads ON CONFLICT after a bare FROM as a join constraint.
    await trx.raw(
      `INSERT INTO messages (id, workspace_id, contact_id, campaign_id, dedupe_key, batch, variant, message_type, to_email, status, created_at, updated_at)
       SELECT ${dialect.newIdSql}, r.workspace_id, r.id, ?, ? || r.id, ${args.placement.sql}, 'marketing', r.email, 'queued', ?, ?
       FROM (${args.source.sql}) r
       WHERE 1 = 1
       ORDER BY r.id
       ON CONFLICT (dedupe_key) DO NOTHING`,
      [args.campaignId, `c:${args.campaignId}:`, ...args.placement.bindings, args.now, args.now, ...args.source.bindings] as Knex.RawBinding[],
    );
  }

  return {
    toRecord,

    /**
     * Fixes a campaign's recipients in one statement: a `queued` message for every contact `recipients`
     * selects (`id`, `workspace_id`, `email`), numbered into batches of `batchSize` from `firstBatch` on, each
     * naming `variant`. The unique dedupe key (campaign × contact) makes a second run add nobody; with
     * `firstBatch` (an A/B test's winner send) contacts who have a message of the campaign already are left out
     * of the numbering too. Returns how many messages the campaign has and its batch count.
     */
    async insertCampaignRecipients(
      trx: Knex.Transaction,
      args: { campaignId: string; recipients: Knex.QueryBuilder; batchSize: number; now: number; variant?: number | null; firstBatch?: number },
    ): Promise<{ recipients: number; batches: number }> {
      const firstBatch = args.firstBatch ?? 0;
      if (args.firstBatch !== undefined) {
        args.recipients.whereNotExists(trx('messages as had').where('had.campaign_id', args.campaignId).whereRaw('had.contact_id = c.id').select(trx.raw('1')));
      }
      await insertCampaignMessages(trx, {
        campaignId: args.campaignId,
        now: args.now,
        placement: { sql: '(ROW_NUMBER() OVER (ORDER BY r.id) - 1) / ? + ?, CAST(? AS INTEGER)', bindings: [args.batchSize, firstBatch, args.variant ?? null] },
        source: args.recipients.toSQL(),
      });
      return campaignSize(trx, args.campaignId);
    },

    /**
     * An A/B test's group (campaigns/ab-split.ts): a `queued` message for each of the first `round(testShare ×
     * audience)` recipients (all at 1) ordered by split key, then contact id byte by byte; dealt to the variants in
     * turn and cut into batches of `batchSize` in that order. The audience is read a page at a time and staged
     * with its keys (`campaign_split_keys`, emptied again here), so the database sorts and the process holds one
     * page whatever the audience. Keyed like every campaign message (a second run adds nobody). Returns how many
     * messages the campaign has and its batch count.
     */
    async insertCampaignTestGroup(
      trx: Knex.Transaction,
      args: {
        campaignId: string;
        /** The audience (segments/audience.ts): contacts as `c`. */
        audience: Knex.QueryBuilder;
        splitKey: (contactId: string) => number;
        testShare: number;
        variants: number;
        batchSize: number;
        now: number;
        /** Audience rows read per page (a test's small pages cross several). */
        pageRows?: number;
      },
    ): Promise<{ recipients: number; batches: number }> {
      const pageRows = args.pageRows ?? SPLIT_PAGE_ROWS;
      // Pages by email key: the contacts' (workspace, email key) index gives them in order, so each page is an
      // index range (by id, SQLite sorted the whole audience for every page). A contact whose email changes
      // between pages may be read twice (kept once) or not at all (then the winner reaches them).
      for (let after: string | null = null; ; ) {
        const page = args.audience.clone().clearSelect().select('c.id', 'c.email_key').orderBy('c.email_key').limit(pageRows);
        if (after !== null) page.where('c.email_key', '>', after);
        const rows = (await page) as Array<{ id: string; email_key: string }>;
        for (const part of chunk(rows, chunkSizeFor(dialect, 3))) {
          await trx('campaign_split_keys')
            .insert(part.map((row) => ({ campaign_id: args.campaignId, contact_id: row.id, split_key: args.splitKey(row.id) })))
            .onConflict(['campaign_id', 'contact_id'])
            .ignore();
        }
        if (rows.length < pageRows) break;
        after = rows[rows.length - 1]!.email_key;
      }
      const [counted] = await trx('campaign_split_keys').where({ campaign_id: args.campaignId }).count({ n: '*' });
      const staged = Number(counted?.n ?? 0);
      const size = args.testShare >= 1 ? staged : Math.round(args.testShare * staged);
      await insertCampaignMessages(trx, {
        campaignId: args.campaignId,
        now: args.now,
        placement: { sql: '(r.place - 1) / ?, (r.place - 1) % ?', bindings: [args.batchSize, args.variants] },
        source: {
          sql: `SELECT c.id, c.workspace_id, c.email, s.place
                FROM (SELECT contact_id, ROW_NUMBER() OVER (ORDER BY split_key, ${dialect.bytewise('contact_id')}) AS place FROM campaign_split_keys WHERE campaign_id = ?) s
                JOIN contacts c ON c.id = s.contact_id
                WHERE s.place <= ?`,
          bindings: [args.campaignId, size],
        },
      });
      await trx('campaign_split_keys').where({ campaign_id: args.campaignId }).delete();
      return campaignSize(trx, args.campaignId);
    },

    /** Per variant of an A/B campaign's messages: handed over, unique opens and unique clicks. */
    async variantCounts(db: Db, workspaceId: string, campaignId: string): Promise<Map<number, { sent: number; unique_opens: number; unique_clicks: number }>> {
      const rows: Array<Record<string, unknown>> = await db('messages')
        .where({ workspace_id: workspaceId, campaign_id: campaignId })
        .whereNotNull('variant')
        .groupBy('variant')
        .select('variant', sentColumn(db), db.raw('COUNT(opened_at) AS unique_opens'), db.raw('COUNT(clicked_at) AS unique_clicks'));
      return new Map(
        rows.map((row) => [
          dialect.readNumber(row.variant),
          { sent: Number(row.sent ?? 0), unique_opens: Number(row.unique_opens ?? 0), unique_clicks: Number(row.unique_clicks ?? 0) },
        ]),
      );
    },

    /** A campaign batch's messages that have not reached an end, with their recipients. */
    pendingInBatch: (db: Db, campaignId: string, batch: number): Promise<PendingMessage[]> =>
      pending(db, (q) => q.where({ 'm.campaign_id': campaignId, 'm.batch': batch })),

    /** Flow messages (one per enrolment × step); a key that exists already adds nothing. */
    async insertFlowMessages(db: Db, rows: FlowMessageRow[], now: number): Promise<void> {
      if (rows.length === 0) return;
      for (const part of chunk(rows, chunkSizeFor(dialect, 12))) {
        await db('messages')
          .insert(part.map((row) => ({ ...row, status: 'queued', created_at: now, updated_at: now })))
          .onConflict('dedupe_key')
          .ignore();
      }
    },

    /** Which of these keys have a message already. */
    async existingDedupeKeys(db: Db, keys: string[]): Promise<Set<string>> {
      const found = new Set<string>();
      for (const part of chunk(keys, chunkSizeFor(dialect, 1))) {
        for (const row of await db('messages').whereIn('dedupe_key', part).select('dedupe_key')) found.add(row.dedupe_key as string);
      }
      return found;
    },

    /** The messages of these keys that have not reached an end, with their recipients. */
    async pendingByDedupeKeys(db: Db, keys: string[]): Promise<PendingMessage[]> {
      const out: PendingMessage[] = [];
      for (const part of chunk(keys, chunkSizeFor(dialect, 1))) out.push(...(await pending(db, (q) => q.whereIn('m.dedupe_key', part))));
      return out;
    },

    /** Which of these contacts got a marketing message at or after `since` (smart sending). */
    async marketingSentSince(db: Db, contactIds: string[], since: number): Promise<Set<string>> {
      const found = new Set<string>();
      for (const part of chunk(contactIds, chunkSizeFor(dialect, 1))) {
        const rows = await db('messages').whereIn('contact_id', part).where({ message_type: 'marketing' }).where('sent_at', '>=', since).distinct('contact_id');
        for (const row of rows) found.add(row.contact_id as string);
      }
      return found;
    },

    /** Writes what became of many messages, a statement per few hundred. */
    async saveOutcomes(db: Db, outcomes: MessageOutcome[], now: number): Promise<void> {
      for (const part of chunk(outcomes, chunkSizeFor(dialect, 8))) {
        const table = valuesList(
          ['VARCHAR(36)', 'VARCHAR(16)', 'TEXT', 'TEXT', 'TEXT', 'TEXT', 'BIGINT'],
          part.map((o) => [o.id, o.status, o.subject, o.html, o.text, o.error, o.sent_at]),
        );
        await db.raw(
          `WITH v (id, status, subject, html, text, error, sent_at) AS (${table.sql})
           UPDATE messages SET status = v.status, subject = v.subject, html = v.html, text = v.text, error = v.error,
             sent_at = v.sent_at, updated_at = ?
           FROM v WHERE messages.id = v.id`,
          [...table.bindings, now] as Knex.RawBinding[],
        );
      }
    },

    /** Marks mails the relay took as `sent` (their content was stored with `sending`): one statement per few hundred. */
    async markSent(db: Db, sent: Array<{ id: string; sent_at: number }>, now: number): Promise<void> {
      for (const part of chunk(sent, chunkSizeFor(dialect, 2))) {
        const table = valuesList(['VARCHAR(36)', 'BIGINT'], part.map((s) => [s.id, s.sent_at]));
        await db.raw(
          `WITH v (id, sent_at) AS (${table.sql})
           UPDATE messages SET status = 'sent', error = NULL, sent_at = v.sent_at, updated_at = ?
           FROM v WHERE messages.id = v.id`,
          [...table.bindings, now] as Knex.RawBinding[],
        );
      }
    },

    /** Recipients skipped by rule get no message row (reports count them as skipped). */
    async remove(db: Db, ids: string[]): Promise<void> {
      for (const part of chunk(ids, chunkSizeFor(dialect, 1))) await db('messages').whereIn('id', part).delete();
    },

    /** Every workspace's messages by status (the operator's status): an index read alone, never the rows with their mail. */
    async countByStatus(db: Db): Promise<Record<MessageStatus, number>> {
      const rows: Array<{ status: MessageStatus; n: unknown }> = await db('messages').groupBy('status').select('status', db.raw('COUNT(*) AS n'));
      const counts = Object.fromEntries(MESSAGE_STATUSES.map((status) => [status, 0])) as Record<MessageStatus, number>;
      for (const row of rows) counts[row.status] = dialect.readNumber(row.n);
      return counts;
    },

    /** Every workspace's messages handed over (or captured) at or after `since`: a range of the status index per status. */
    async handedOverSince(db: Db, since: number): Promise<number> {
      const [{ n }] = (await db('messages').whereIn('status', DELIVERED).where('sent_at', '>=', since).count({ n: '*' })) as [{ n: unknown }];
      return dialect.readNumber(n);
    },

    /** Whether any message of the campaign has not reached an end. */
    async campaignUnfinished(db: Db, campaignId: string): Promise<boolean> {
      return (await db('messages').where({ campaign_id: campaignId }).whereIn('status', UNFINISHED).first('id')) !== undefined;
    },

    async findForTracking(db: Db, id: string): Promise<TrackedMessage | null> {
      const row = await db('messages').where({ id }).first('id', 'workspace_id', 'contact_id', 'campaign_id', 'flow_id');
      return (row as TrackedMessage | undefined) ?? null;
    },

    /**
     * Sets `opened_at` / `clicked_at` where still unset (they keep the first open and click): one statement for
     * a group commit's engagements of a kind, each message taking its earliest time in the group.
     */
    async markEngaged(db: Db, kind: 'open' | 'click', firsts: Array<{ id: string; at: number }>): Promise<void> {
      const column = kind === 'open' ? 'opened_at' : 'clicked_at';
      for (const part of chunk(firsts, chunkSizeFor(dialect, 2))) {
        const table = valuesList(['VARCHAR(36)', 'BIGINT'], part.map((f) => [f.id, f.at]));
        // Held until the transaction's next statement: nobody reads the count of rows it changed.
        await deferWrite(
          dialect,
          db,
          db.raw(
            `WITH v (id, at) AS (${table.sql}) UPDATE messages SET ${column} = v.at FROM v WHERE messages.id = v.id AND messages.${column} IS NULL`,
            table.bindings as Knex.RawBinding[],
          ),
        );
      }
    },

    async findForRelay(db: Db, workspaceId: string, id: string): Promise<RelayedMessage | null> {
      const row = await db('messages').where({ workspace_id: workspaceId, id }).first('id', 'contact_id', 'to_email', 'status');
      return row ? { id: row.id, contact_id: row.contact_id, to: row.to_email, status: row.status } : null;
    },

    /** What a relay reported after the hand-over (relay webhooks): a complaint outranks a bounce. */
    async markRelayed(db: Db, id: string, report: RelayReport, now: number): Promise<void> {
      const row = db('messages').where({ id });
      if (report === 'bounced') await row.whereNot({ status: 'complained' }).update({ status: 'bounced', updated_at: now });
      else if (report === 'complained') await row.update({ status: 'complained', updated_at: now });
      else if (report === 'soft_bounce') await row.update({ soft_bounces: db.raw('soft_bounces + 1'), updated_at: now });
      else await row.whereNull('delivered_at').update({ delivered_at: now, updated_at: now });
    },

    async get(db: Db, workspaceId: string, id: string): Promise<MessageRecord | null> {
      const row = await db('messages').where({ workspace_id: workspaceId, id }).first();
      return row ? toRecord(row) : null;
    },

    list: (db: Db, workspaceId: string, filter: { contact_id?: string; campaign_id?: string; flow_id?: string }, paging: Paging) =>
      selectPage(db('messages').where({ workspace_id: workspaceId, ...filter }), NEWEST_FIRST, paging, toRecord),

    /** Delivery, deliverability and engagement counts of one campaign's or flow's messages. */
    async counts(db: Db, workspaceId: string, of: { campaign_id: string } | { flow_id: string }) {
      const row = await db('messages')
        .where({ workspace_id: workspaceId, ...of })
        .select(
          ...deliverabilityColumns(db),
          db.raw(`SUM(CASE WHEN status = 'failed' THEN 1 ELSE 0 END) AS failed`),
          db.raw('COUNT(opened_at) AS unique_opens'),
          db.raw('COUNT(clicked_at) AS unique_clicks'),
        )
        .first();
      return {
        ...deliverabilityOf(row),
        failed: Number(row?.failed ?? 0),
        unique_opens: Number(row?.unique_opens ?? 0),
        unique_clicks: Number(row?.unique_clicks ?? 0),
      };
    },

    /** The ids of one campaign's or flow's messages, with that campaign or flow as `grp` (for unsubscribe counts). */
    idsOf: (db: Db, workspaceId: string, of: { campaign_id: string } | { flow_id: string }) =>
      db('messages')
        .where({ workspace_id: workspaceId, ...of })
        .select('id', `${'campaign_id' in of ? 'campaign_id' : 'flow_id'} as grp`),

    /** The ids of the campaign and flow messages written since `since`, with their campaign or flow as `grp`. */
    idsSince: (db: Db, workspaceId: string, since: number) =>
      sendsSince(db, workspaceId, since).select('id', db.raw('COALESCE(campaign_id, flow_id) AS grp')),

    /** Per campaign and flow with messages handed over among those written since `since`: deliverability counts. */
    async deliverabilitySince(db: Db, workspaceId: string, since: number) {
      const rows: Array<Record<string, unknown>> = await sendsSince(db, workspaceId, since)
        .groupBy('campaign_id', 'flow_id')
        .select('campaign_id', 'flow_id', ...deliverabilityColumns(db));
      return rows
        .map((row) => ({ campaign_id: row.campaign_id as string | null, flow_id: row.flow_id as string | null, ...deliverabilityOf(row) }))
        .filter((row) => row.sent > 0);
    },
  };
}

export type MessageStore = ReturnType<typeof createMessageStore>;
