import type { Db } from '../db/database.js';
import type { Dialect } from '../db/dialect/dialect.js';

export type CartEventType = 'added_to_cart' | 'started_checkout';

/** The columns a cart event sets (on insert, and on update of a cart known by its external id). */
export interface CartFields {
  contact_id: string;
  last_event_type: CartEventType;
  total_amount: number | null;
  currency: string | null;
  checkout_url: string | null;
  items: unknown[];
  updated_at: number;
  integration_id: string | null;
  /** Set once the checkout is completed; absent leaves it as it is. */
  converted_at?: number;
}

export interface CartRecord {
  id: string;
  external_id: string | null;
  total_amount: number | null;
  currency: string | null;
  checkout_url: string | null;
  items: unknown[];
  /** The checkout became an order (a platform's completed checkout). */
  converted: boolean;
}

/** The carts table: one row per cart external id (or per event when the cart has none). */
export function createCartStore(dialect: Dialect) {
  return {
    /** Inserts a cart, or updates the one with this external id; returns the cart's id. */
    async upsert(db: Db, cart: { id: string; workspaceId: string; externalId: string | null; createdAt: number; fields: CartFields }): Promise<string> {
      const fields = { ...cart.fields, items: dialect.writeJson(cart.fields.items) };
      const query = db('carts').insert({ id: cart.id, workspace_id: cart.workspaceId, external_id: cart.externalId, created_at: cart.createdAt, ...fields });
      const [stored] = (cart.externalId === null
        ? await query.returning('id')
        : await query.onConflict(['workspace_id', 'external_id']).merge(Object.keys(fields)).returning('id')) as Array<{ id: string }>;
      return stored!.id;
    },

    /** Carts by id, or the latest cart of a contact: what a flow's template sees as `cart`. */
    async find(db: Db, where: { ids: string[] } | { contactId: string }): Promise<CartRecord[]> {
      const query = db('carts');
      if ('ids' in where) query.whereIn('id', where.ids);
      else query.where({ contact_id: where.contactId }).orderBy('updated_at', 'desc').limit(1);
      const rows = await query.select('id', 'external_id', 'total_amount', 'currency', 'checkout_url', 'items', 'converted_at');
      return rows.map((row: Record<string, unknown>) => ({
        id: row.id as string,
        external_id: (row.external_id as string | null) ?? null,
        total_amount: dialect.readNullableNumber(row.total_amount),
        currency: (row.currency as string | null) ?? null,
        checkout_url: (row.checkout_url as string | null) ?? null,
        items: dialect.readJson<unknown[]>(row.items) ?? [],
        converted: row.converted_at !== null && row.converted_at !== undefined,
      }));
    },

    /** Deletes the carts that came through an integration (`shop/redact`). */
    async deleteOfIntegration(db: Db, integrationId: string): Promise<number> {
      return db('carts').where({ integration_id: integrationId }).delete();
    },
  };
}

export type CartStore = ReturnType<typeof createCartStore>;
