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

  };
}

export type CartStore = ReturnType<typeof createCartStore>;
