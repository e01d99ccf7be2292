import type { Knex } from 'knex';
import { insertRows, valuesList } from '../db/bulk.js';
import type { Dialect } from '../db/dialect/dialect.js';
import type { Attribution, EngagementKind } from './attribution.schema.js';
import type { Db } from '../db/database.js';
import { DAY_MS } from '../shared/time.js';

export interface EngagementRow {
  id: string;
  workspace_id: string;
  contact_id: string;
  kind: EngagementKind;
  campaign_id: string | null;
  flow_id: string | null;
  message_id: string | null;
  occurred_at: number;
}

/** An order and the earliest engagement time each kind may have to count for it. */
export interface TouchQuery {
  orderId: string;
  contactId: string;
  orderedAt: number;
  clickFrom: number;
  openFrom: number;
}

/** A stored order as recompute sees it. */
export interface AttributedOrderRow {
  id: string;
  contact_id: string;
  ordered_at: number;
  attribution: Attribution | null;
}

/** Where a recompute walk stands: the last order it examined. */
export interface RecomputeCursor {
  orderedAt: number;
  id: string;
}

/** Orders that carry attribution: those that arrived by webhook or sync. Direct creates never do. */
export const ATTRIBUTED_ORIGINS = ['webhook', 'sync'] as const;

export function createAttributionStore(dialect: Dialect) {
  return {
    /** Opens and clicks (every one, repeats included) of one campaign's or flow's messages. */
    async engagementCounts(db: Db, workspaceId: string, of: { campaign_id: string } | { flow_id: string }) {
      const row = await db('engagements')
        .where({ workspace_id: workspaceId, ...of })
        .select(
          db.raw("SUM(CASE WHEN kind = 'open' THEN 1 ELSE 0 END) AS opens"),
          db.raw("SUM(CASE WHEN kind = 'click' THEN 1 ELSE 0 END) AS clicks"),
        )
        .first();
      return { opens: Number(row?.opens ?? 0), clicks: Number(row?.clicks ?? 0) };
    },

    /** `engagementCounts` per UTC day (days since the epoch) of the engagements at or after `since`. */
    async engagementsByDay(db: Db, workspaceId: string, of: { campaign_id: string } | { flow_id: string }, since: number) {
      const rows = await db('engagements')
        .where({ workspace_id: workspaceId, ...of })
        .where('occurred_at', '>=', since)
        .groupBy('day')
        .select(
          db.raw(`occurred_at / ${DAY_MS} AS day`),
          db.raw("SUM(CASE WHEN kind = 'open' THEN 1 ELSE 0 END) AS opens"),
          db.raw("SUM(CASE WHEN kind = 'click' THEN 1 ELSE 0 END) AS clicks"),
        );
      return (rows as Array<Record<string, unknown>>).map((row) => ({ day: Number(row.day), opens: Number(row.opens ?? 0), clicks: Number(row.clicks ?? 0) }));
    },

    /** Held until the transaction's next statement: engagements carry their own ids. */
    async insertEngagements(db: Db, rows: EngagementRow[]): Promise<void> {
      await insertRows(db, dialect, 'engagements', rows as unknown as Record<string, unknown>[], { hold: true });
    },

    /**
     * Last touch for many orders in one statement: per order, the latest click of its contact in
     * [clickFrom, orderedAt], else the latest open in [openFrom, orderedAt]. Each lookup is a backward
     * range scan of the (workspace_id, contact_id, kind, occurred_at) index. Orders without one are absent.
     */
    async latestTouches(db: Db, workspaceId: string, orders: TouchQuery[]): Promise<Map<string, Attribution>> {
      const found = new Map<string, Attribution>();
      if (orders.length === 0) return found;
      const latest = (kind: EngagementKind, fromColumn: string) =>
        db('engagements as x')
          .select('x.id')
          .where('x.workspace_id', workspaceId)
          .where('x.contact_id', db.ref('o.contact_id'))
          .where('x.kind', kind)
          .where('x.occurred_at', '>=', db.ref(fromColumn))
          .where('x.occurred_at', '<=', db.ref('o.ordered_at'))
          .orderBy([
            { column: 'x.occurred_at', order: 'desc' },
            { column: 'x.id', order: 'desc' },
          ])
          .limit(1);
      const touches = db
        .select('o.order_id', latest('click', 'o.click_from').as('click_id'), latest('open', 'o.open_from').as('open_id'))
        .from('o');
      const table = valuesList(
        ['TEXT', 'TEXT', 'BIGINT', 'BIGINT', 'BIGINT'],
        orders.map((o) => [o.orderId, o.contactId, o.orderedAt, o.clickFrom, o.openFrom]),
      );
      const rows = await db
        .with(
          'o',
          ['order_id', 'contact_id', 'ordered_at', 'click_from', 'open_from'],
          db.raw(table.sql, table.bindings as Knex.RawBinding[]),
        )
        .select('t.order_id', 'e.kind', 'e.campaign_id', 'e.flow_id', 'e.message_id', 'm.variant')
        .from(touches.as('t'))
        .join('engagements as e', 'e.id', db.raw('COALESCE(t.click_id, t.open_id)'))
        .leftJoin('messages as m', 'm.id', 'e.message_id');
      for (const row of rows) {
        found.set(row.order_id, {
          campaign_id: row.campaign_id ?? null,
          flow_id: row.flow_id ?? null,
          message_id: row.message_id ?? null,
          variant: dialect.readNullableNumber(row.variant ?? null),
          kind: row.kind,
        });
      }
      return found;
    },

    /**
     * The next `limit` attributable orders after the cursor, in (ordered_at, id) order so the
     * (workspace_id, ordered_at) index serves both `since` and the walk; locked for the caller's update.
     */
    async ordersToRecompute(
      db: Db,
      workspaceId: string,
      filter: { since?: number; orderId?: string; after: RecomputeCursor | null; limit: number },
    ): Promise<AttributedOrderRow[]> {
      const query = db('orders')
        .where({ workspace_id: workspaceId })
        .whereIn('origin', [...ATTRIBUTED_ORIGINS])
        // An order without a contact has no engagement to be credited to.
        .whereNotNull('contact_id')
        .select(
          'id',
          'contact_id',
          'ordered_at',
          'attributed_campaign_id',
          'attributed_flow_id',
          'attributed_message_id',
          'attributed_variant',
          'attribution_kind',
        )
        .orderBy([
          { column: 'ordered_at', order: 'asc' },
          { column: 'id', order: 'asc' },
        ])
        .limit(filter.limit);
      if (filter.since !== undefined) query.where('ordered_at', '>=', filter.since);
      if (filter.orderId !== undefined) query.where({ id: filter.orderId });
      const after = filter.after;
      if (after !== null) {
        query.where((q) =>
          q.where('ordered_at', '>', after.orderedAt).orWhere((same) => same.where('ordered_at', after.orderedAt).where('id', '>', after.id)),
        );
      }
      const rows = await dialect.forUpdate(query);
      return rows.map((row: Record<string, unknown>) => ({
        id: row.id as string,
        contact_id: row.contact_id as string,
        ordered_at: dialect.readNumber(row.ordered_at),
        attribution: row.attribution_kind
          ? {
              campaign_id: (row.attributed_campaign_id as string | null) ?? null,
              flow_id: (row.attributed_flow_id as string | null) ?? null,
              message_id: (row.attributed_message_id as string | null) ?? null,
              variant: dialect.readNullableNumber(row.attributed_variant ?? null),
              kind: row.attribution_kind as EngagementKind,
            }
          : null,
      }));
    },

    async orderExists(db: Db, workspaceId: string, id: string): Promise<boolean> {
      return (await db('orders').where({ workspace_id: workspaceId, id }).first('id')) !== undefined;
    },

    /** Sets (or clears) the attribution of many orders in one statement. */
    async writeAttributions(
      db: Db,
      updates: Array<{ orderId: string; attribution: Attribution | null }>,
      now = Date.now(),
    ): Promise<void> {
      if (updates.length === 0) return;
      const table = valuesList(
        ['TEXT', 'VARCHAR(36)', 'VARCHAR(36)', 'VARCHAR(36)', 'INTEGER', 'VARCHAR(8)'],
        updates.map(({ orderId, attribution: a }) => [
          orderId,
          a?.campaign_id ?? null,
          a?.flow_id ?? null,
          a?.message_id ?? null,
          a?.variant ?? null,
          a?.kind ?? null,
        ]),
      );
      await db.raw(
        `WITH v (id, campaign_id, flow_id, message_id, variant, kind) AS (${table.sql})
         UPDATE orders SET attributed_campaign_id = v.campaign_id, attributed_flow_id = v.flow_id,
           attributed_message_id = v.message_id, attributed_variant = v.variant, attribution_kind = v.kind, updated_at = ?
         FROM v WHERE orders.id = v.id`,
        [...table.bindings, now] as Knex.RawBinding[],
      );
    },
  };
}

export type AttributionStore = ReturnType<typeof createAttributionStore>;
