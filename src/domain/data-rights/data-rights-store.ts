import type { Db } from '../db/database.js';
import type { Dialect } from '../db/dialect/dialect.js';
import { selectPage } from '../db/page.js';
import { toPage, type Page, type Paging } from '../shared/paging.js';
import { toIso } from '../shared/time.js';
import type { TriggerOutbox } from '../triggers/trigger-outbox.js';
import type { DataRequest, ExportedCart } from './data-rights.schema.js';

const NEWEST_FIRST_RECEIVED = [
  { column: 'received_at', order: 'desc' as const },
  { column: 'id', order: 'desc' as const },
];

/** A contact's carts, the last changed first (the carts index on workspace, contact and `updated_at` serves it). */
const LAST_CHANGED_FIRST = [
  { column: 'updated_at', order: 'desc' as const },
  { column: 'id', order: 'desc' as const },
];

export interface DataRequestRow {
  id: string;
  workspace_id: string;
  integration_id: string;
  email: string;
  contact_id: string | null;
  request_id: string | null;
  received_at: number;
}

/** What came from one shop platform integration: the contacts it created, and the origins it records consent with. */
export interface ShopSource {
  workspaceId: string;
  integrationId: string;
  /** `<platform>:<domain>`: the source of the contacts it created and of the events it recorded. */
  source: string;
  /** The consent history origins it writes (the contact's creation by it, its consent updates). */
  origins: string[];
}

/**
 * What a person did and was sent, by table: every row names its contact and workspace (indexed). Orders are
 * not here: they are kept, on the tombstone, so revenue does not change. Nor are trigger facts: not all of them
 * are indexed by contact, and the outbox finds the others through the contact's events.
 */
const TRACES = ['events', 'messages', 'carts', 'engagements', 'flow_enrollments', 'segment_members', 'contact_user_ids'] as const;

export function createDataRightsStore(dialect: Dialect, outbox: Pick<TriggerOutbox, 'deleteContactFacts'>) {
  const fromRow = (raw: Record<string, unknown>): DataRequestRow => ({
    ...(raw as unknown as DataRequestRow),
    received_at: dialect.readNumber(raw.received_at),
  });
  const toExportedCart = (row: Record<string, unknown>): ExportedCart => ({
    id: row.id as string,
    external_id: (row.external_id as string | null) ?? null,
    last_event_type: row.last_event_type as string,
    items: dialect.readJson<unknown[]>(row.items) ?? [],
    total_amount: dialect.readNullableNumber(row.total_amount),
    currency: (row.currency as string | null) ?? null,
    checkout_url: (row.checkout_url as string | null) ?? null,
    converted_at: toIso(dialect.readNullableNumber(row.converted_at)),
    created_at: toIso(dialect.readNumber(row.created_at))!,
    updated_at: toIso(dialect.readNumber(row.updated_at))!,
  });
  return {
    /**
     * Deletes the contacts' events, messages, carts, engagements, trigger facts, flow enrolments (in progress
     * or not: their jobs find nothing left to run), segment memberships and Segment user ids; one statement a
     * table, and three for trigger facts, first, while the contacts' events are there to find them by.
     */
    async deleteTraces(db: Db, workspaceId: string, contactIds: string[]): Promise<void> {
      await outbox.deleteContactFacts(db, workspaceId, contactIds);
      for (const table of TRACES) await db(table).where({ workspace_id: workspaceId }).whereIn('contact_id', contactIds).delete();
    },

    /**
     * The unerased contacts a shop platform integration created that nothing else vouches for: no order but the
     * integration's, no event but from its source, no consent change but its own. Read once per shop that is
     * gone (`shop/redact`), over the workspace's contacts: no index on `contacts.source` for it, which every
     * contact write would pay for.
     */
    async contactsOnlyFrom(db: Db, shop: ShopSource): Promise<string[]> {
      const rows = await db('contacts as c')
        .where({ 'c.workspace_id': shop.workspaceId, 'c.source': shop.source })
        .whereNull('c.erased_at')
        .whereNotExists((q) =>
          q.from('orders as o').where('o.workspace_id', shop.workspaceId).whereRaw('o.contact_id = c.id').where((other) => other.whereNull('o.integration_id').orWhereNot('o.integration_id', shop.integrationId)),
        )
        .whereNotExists((q) =>
          q
            .from('events as e')
            .where('e.workspace_id', shop.workspaceId)
            .whereRaw('e.contact_id = c.id')
            .where((other) => other.whereNull('e.source').orWhereNot('e.source', shop.source)),
        )
        .whereNotExists((q) => q.from('subscription_changes as s').whereRaw('s.contact_id = c.id').whereNotIn('s.origin', shop.origins))
        .orderBy('c.id')
        .select('c.id');
      return rows.map((row: { id: string }) => row.id);
    },

    /**
     * A page of the contact's carts for its export. Carts are among the traces an erasure deletes (TRACES), and
     * the management API has no list of them to read through, so the export reads them here.
     */
    async listCarts(db: Db, workspaceId: string, contactId: string, paging: Paging): Promise<Page<ExportedCart>> {
      const query = db('carts')
        .where({ workspace_id: workspaceId, contact_id: contactId })
        .select('id', 'external_id', 'last_event_type', 'items', 'total_amount', 'currency', 'checkout_url', 'converted_at', 'created_at', 'updated_at');
      const { rows, total } = await selectPage(query, LAST_CHANGED_FIRST, paging, toExportedCart);
      return toPage(rows, total, paging);
    },

    async insertDataRequests(db: Db, rows: DataRequestRow[]): Promise<void> {
      if (rows.length > 0) await db('data_requests').insert(rows);
    },

    listDataRequests: (db: Db, workspaceId: string, paging: Paging) =>
      selectPage(db('data_requests').where({ workspace_id: workspaceId }), NEWEST_FIRST_RECEIVED, paging, fromRow),

    toDataRequest: (row: DataRequestRow): DataRequest => ({
      id: row.id,
      email: row.email,
      contact_id: row.contact_id,
      integration_id: row.integration_id,
      request_id: row.request_id,
      received_at: toIso(row.received_at)!,
    }),
  };
}

export type DataRightsStore = ReturnType<typeof createDataRightsStore>;
