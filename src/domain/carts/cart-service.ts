import type { Knex } from 'knex';
import { uuidv7 } from '../shared/ids.js';
import type { TriggerFact, TriggerOutbox } from '../triggers/trigger-outbox.js';
import type { Db } from '../db/database.js';
import type { Dialect } from '../db/dialect/dialect.js';
import { createCartStore, type CartEventType } from './cart-store.js';

export type { CartRecord } from './cart-store.js';


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
  /** The shop platform integration it came through (`shop/redact` deletes its carts); null for the website's. */
  integrationId?: string | null;
  /** The checkout was completed (it became an order): marked converted, it starts no abandoned-cart flow. */
  converted?: boolean;
  at: number;
}

/** Carts feed abandoned-cart flows (the `cart` trigger) and the added_to_cart recommendations. */
export function createCartService(deps: { dialect: Dialect; outbox: TriggerOutbox }) {
  const { outbox } = deps;
  const store = createCartStore(deps.dialect);

  return {
    /** Carts by id or by contact (a flow's trigger carts; abandoned-cart checks). */
    find: (db: Db, filter: Parameters<typeof store.find>[1]) => store.find(db, filter),

    /** Deletes the carts that came through a shop platform integration (`shop/redact`). */
    deleteOfIntegration: (trx: Knex.Transaction, integrationId: string) => store.deleteOfIntegration(trx, integrationId),

    /**
     * Upserts each cart (in arrival order: a later event for one cart wins) and fires its `cart` trigger; a
     * converted cart fires nothing, and stays converted.
     */
    async applyCartChanges(trx: Knex.Transaction, changes: CartChange[]): Promise<string[]> {
      const ids: string[] = [];
      const facts: TriggerFact[] = [];
      for (const change of changes) {
        const id = await store.upsert(trx, {
          id: uuidv7(change.at),
          workspaceId: change.workspaceId,
          externalId: change.externalId,
          createdAt: change.at,
          fields: {
            contact_id: change.contactId,
            last_event_type: change.eventType,
            total_amount: change.totalAmount,
            currency: change.currency,
            checkout_url: change.checkoutUrl,
            items: change.items,
            updated_at: change.at,
            integration_id: change.integrationId ?? null,
            ...(change.converted ? { converted_at: change.at } : {}),
          },
        });
        ids.push(id);
        if (change.converted) continue;
        facts.push({
          workspaceId: change.workspaceId,
          triggerType: 'cart',
          eventName: change.eventType,
          contactId: change.contactId,
          subjectType: 'cart',
          subjectId: id,
          source: change.source,
          at: change.at,
        });
      }
      await outbox.record(trx, facts);
      return ids;
    },
  };
}

export type CartService = ReturnType<typeof createCartService>;
