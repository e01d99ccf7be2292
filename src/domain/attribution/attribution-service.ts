import type { Knex } from 'knex';
import type { Dialect } from '../db/dialect/dialect.js';
import type { ContactLookup } from '../contacts/contact-lookup.js';
import { chunk } from '../db/bulk.js';
import type { Database, Db } from '../db/database.js';
import type { BatchHandler, WriteBatcher } from '../db/write-batcher.js';
import { NotFoundError } from '../errors.js';
import type { SettingsService } from '../settings/settings-service.js';
import { uuidv7 } from '../shared/ids.js';
import { parseInput } from '../shared/validate.js';
import {
  engagementSchema,
  type Attribution,
  type Engagement,
  type EngagementInput,
  type OrderToAttribute,
  type RecomputeOptions,
  type RecomputeResult,
} from './attribution.schema.js';
import { createAttributionStore, type EngagementRow, type RecomputeCursor } from './attribution-store.js';
import { compositeKey } from '../shared/keys.js';

export type { Attribution, OrderToAttribute } from './attribution.schema.js';

const DAY_MS = 86_400_000;
/** Orders per statement and per recompute transaction. */
const CHUNK = 1_000;

type EngagementWriteResult = { id: string } | { error: 'contact not found' };

const sameAttribution = (a: Attribution | null, b: Attribution | null) =>
  a === b ||
  (a !== null &&
    b !== null &&
    a.kind === b.kind &&
    a.campaign_id === b.campaign_id &&
    a.flow_id === b.flow_id &&
    a.message_id === b.message_id &&
    a.variant === b.variant);

/**
 * Last-touch attribution (docs/api/orders.md, Attribution): an order is credited to the latest click by its contact
 * within `click_window_days` up to `ordered_at`, otherwise to the latest open within `open_window_days`.
 * Engagement after `ordered_at` never counts. Computed once when an order first arrives (the orders owner
 * writes the result); `recompute` is the operator's explicit re-run over stored orders.
 */
export function createAttributionService(deps: {
  knex: Knex;
  writeTransaction: Database['writeTransaction'];
  writer: WriteBatcher;
  dialect: Dialect;
  contactLookup: ContactLookup;
  settings: SettingsService;
}) {
  const { knex, writeTransaction, writer, contactLookup, settings } = deps;
  const store = createAttributionStore(deps.dialect);

  /** Stores clicks and opens set-based; one whose contact is not in its workspace is refused alone. */
  const writeEngagements: BatchHandler<Engagement, EngagementWriteResult> = async (trx, engagements) => {
    const known = new Set<string>();
    const byWorkspace = new Map<string, string[]>();
    for (const e of engagements) {
      const ids = byWorkspace.get(e.workspaceId) ?? [];
      ids.push(e.contactId);
      byWorkspace.set(e.workspaceId, ids);
    }
    for (const [workspaceId, ids] of byWorkspace) {
      for (const row of await contactLookup.findByIds(trx, workspaceId, [...new Set(ids)])) known.add(compositeKey(workspaceId, row.id));
    }
    const rows: EngagementRow[] = [];
    const results = engagements.map((e): EngagementWriteResult => {
      if (!known.has(compositeKey(e.workspaceId, e.contactId))) return { error: 'contact not found' };
      const row: EngagementRow = {
        id: uuidv7(),
        workspace_id: e.workspaceId,
        contact_id: e.contactId,
        kind: e.kind,
        campaign_id: e.campaignId ?? null,
        flow_id: e.flowId ?? null,
        message_id: e.messageId ?? null,
        occurred_at: e.occurredAt,
      };
      rows.push(row);
      return { id: row.id };
    });
    await store.insertEngagements(trx, rows);
    return results;
  };

  /** The attribution of each order (null: none), from the workspace's windows; one statement per 1000. */
  async function attributeOrders(
    trx: Knex.Transaction,
    workspaceId: string,
    orders: OrderToAttribute[],
  ): Promise<Map<string, Attribution | null>> {
    const result = new Map<string, Attribution | null>(orders.map((o) => [o.id, null]));
    if (orders.length === 0) return result;
    const { click_window_days, open_window_days } = await settings.cached(workspaceId, trx);
    for (const part of chunk(orders, CHUNK)) {
      const touches = await store.latestTouches(
        trx,
        workspaceId,
        part.map((o) => ({
          orderId: o.id,
          contactId: o.contactId,
          orderedAt: o.orderedAt,
          clickFrom: o.orderedAt - click_window_days * DAY_MS,
          openFrom: o.orderedAt - open_window_days * DAY_MS,
        })),
      );
      for (const [orderId, attribution] of touches) result.set(orderId, attribution);
    }
    return result;
  }

  return {
    /** Opens and clicks of one campaign's or flow's messages (their reports). */
    engagementCounts: (db: Db, workspaceId: string, of: { campaign_id: string } | { flow_id: string }) => store.engagementCounts(db, workspaceId, of),
    /** The same per UTC day since `since` (the console's charts). */
    engagementsByDay: (db: Db, workspaceId: string, of: { campaign_id: string } | { flow_id: string }, since: number) =>
      store.engagementsByDay(db, workspaceId, of, since),

    writeEngagements,
    attributeOrders,

    /** A click or an open of a sent message (exactly one of campaignId / flowId); returns its id. */
    async recordEngagement(input: EngagementInput): Promise<string> {
      const result = await writer.submit(writeEngagements, parseInput(engagementSchema, input));
      if ('error' in result) throw new NotFoundError(result.error);
      return result.id;
    },

    /**
     * Re-attributes stored webhook and sync orders from their `ordered_at` against stored engagement, a
     * chunk per transaction, writing only the orders whose attribution differs.
     */
    async recompute(workspaceId: string, options: RecomputeOptions = {}): Promise<RecomputeResult> {
      await settings.get(workspaceId);
      let after: RecomputeCursor | null = null;
      let examined = 0;
      let changed = 0;
      for (;;) {
        const step: { last: RecomputeCursor; examined: number; changed: number } | null = await writeTransaction(async (trx) => {
          const orders = await store.ordersToRecompute(trx, workspaceId, { ...options, after, limit: CHUNK });
          if (orders.length === 0) return null;
          const fresh = await attributeOrders(
            trx,
            workspaceId,
            orders.map((o) => ({ id: o.id, contactId: o.contact_id, orderedAt: o.ordered_at })),
          );
          const updates = orders
            .filter((o) => !sameAttribution(o.attribution, fresh.get(o.id) ?? null))
            .map((o) => ({ orderId: o.id, attribution: fresh.get(o.id) ?? null }));
          await store.writeAttributions(trx, updates);
          const last = orders[orders.length - 1]!;
          return { last: { orderedAt: last.ordered_at, id: last.id }, examined: orders.length, changed: updates.length };
        });
        if (!step) break;
        after = step.last;
        examined += step.examined;
        changed += step.changed;
        if (step.examined < CHUNK) break;
      }
      if (options.orderId !== undefined && examined === 0) {
        if (!(await store.orderExists(knex, workspaceId, options.orderId))) throw new NotFoundError('order not found');
      }
      return { examined, changed };
    },
  };
}

export type AttributionService = ReturnType<typeof createAttributionService>;
