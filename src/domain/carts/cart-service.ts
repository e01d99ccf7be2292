import type { Knex } from 'knex';
import type { Dialect } from '../db/dialect/dialect.js';
import { uuidv7 } from '../shared/ids.js';
import type { TriggerFact, TriggerOutbox } from '../triggers/trigger-outbox.js';

export type CartEventType = 'added_to_cart' | 'started_checkout';

/** A webhook cart event for a resolved contact. */
export interface CartChange {
  workspaceId: string;
  contactId: string;
  /** `cart.external_id`: the cart is updated in place; absent, every event stores a new cart. */
  externalId: string | null;
  eventType: CartEventType;
  totalAmount: number | null;
  currency: string | null;
  checkoutUrl: string | null;
  items: unknown[];
  source: string;
  at: number;
}

/** Carts feed abandoned-cart flows (the `cart` trigger) and the added_to_cart recommendations. */
export function createCartService(deps: { dialect: Dialect; outbox: TriggerOutbox }) {
  const { dialect, outbox } = deps;

  return {
    /** Upserts each cart (in arrival order: a later event for one cart wins) and fires its `cart` trigger. */
    async applyCartChanges(trx: Knex.Transaction, changes: CartChange[]): Promise<string[]> {
      const ids: string[] = [];
      const facts: TriggerFact[] = [];
      for (const change of changes) {
        const fields = {
          contact_id: change.contactId,
          last_event_type: change.eventType,
          total_amount: change.totalAmount,
          currency: change.currency,
          checkout_url: change.checkoutUrl,
          items: dialect.writeJson(change.items),
          updated_at: change.at,
        };
        const row = { id: uuidv7(change.at), workspace_id: change.workspaceId, external_id: change.externalId, created_at: change.at, ...fields };
        const query = trx('carts').insert(row);
        const [stored] = (change.externalId === null
          ? await query.returning('id')
          : await query.onConflict(['workspace_id', 'external_id']).merge(Object.keys(fields)).returning('id')) as Array<{ id: string }>;
        ids.push(stored!.id);
        facts.push({
          workspaceId: change.workspaceId,
          triggerType: 'cart',
          eventName: change.eventType,
          contactId: change.contactId,
          subjectType: 'cart',
          subjectId: stored!.id,
          source: change.source,
          at: change.at,
        });
      }
      await outbox.record(trx, facts);
      return ids;
    },

    /** A contact's carts, most recent first. */
    async listForContact(db: Knex | Knex.Transaction, workspaceId: string, contactId: string) {
      const rows = await db('carts').where({ workspace_id: workspaceId, contact_id: contactId }).orderBy('updated_at', 'desc');
      return rows.map((row) => ({
        id: row.id as string,
        external_id: row.external_id as string | null,
        last_event_type: row.last_event_type as CartEventType,
        total_amount: dialect.readNullableNumber(row.total_amount),
        currency: row.currency as string | null,
        checkout_url: row.checkout_url as string | null,
        items: dialect.readJson<unknown[]>(row.items),
        updated_at: Number(row.updated_at),
      }));
    },
  };
}

export type CartService = ReturnType<typeof createCartService>;
