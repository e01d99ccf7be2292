import type { Knex } from 'knex';
import type { Dialect } from '../db/dialect/dialect.js';
import type { WriteBatcher } from '../db/write-batcher.js';
import { NotFoundError } from '../errors.js';
import type { SenderService } from '../senders/sender-service.js';
import type { Clock } from '../shared/time.js';
import { TtlCache } from '../shared/ttl-cache.js';
import { parseInput } from '../shared/validate.js';
import { updateSettingsSchema, type Settings } from './settings.schema.js';
import { createSettingsStore } from './settings-store.js';
import { DEFAULT_SHOP_CURRENCY, type ShopCurrencyOrigin } from './shop-currency.js';

/**
 * What checks the footer templates at PATCH: the message templates (`templates.check`, which names a part
 * `${prefix}html` / `${prefix}text`); declared here by shape, so settings import nothing of the sending half.
 */
export interface FooterCheck {
  check(fields: { html?: string | null; text?: string | null }, prefix: string): Promise<void>;
}

/** How long a hot-path read (`cached`) may be stale in other processes; this process forgets at once. */
const CACHE_TTL_MS = 5_000;

/**
 * Workspace settings (docs/api/settings-and-integrations.md): attribution windows, contact limit, sender, own domains,
 * the marketing footer and postal address, per-domain rates, event retention. `get` always reads the
 * database; `cached` serves the write paths that consult settings on every commit (attribution windows, the
 * contact limit). `onChange` lets caches of workspace rows forget.
 */
export function createSettingsService(deps: {
  knex: Knex;
  writer: WriteBatcher;
  dialect: Dialect;
  /** `sender.from_email` must be at one of the workspace's sender domains. */
  senders: Pick<SenderService, 'checkFromEmail'>;
  /** Footer templates are parsed and rendered against sample data like a campaign's. */
  footers: FooterCheck;
  /** Products whose writes named no currency follow the shop's (declared by shape: settings import no catalog). */
  products: { adoptShopCurrency(trx: Knex.Transaction, workspaceId: string, currency: string): Promise<unknown> };
  onChange?: (workspaceId: string) => void;
  clock?: Clock;
}) {
  const { knex, writer, onChange } = deps;
  const store = createSettingsStore(deps.dialect);
  const cache = new TtlCache<string, Settings>(CACHE_TTL_MS, deps.clock);

  async function get(workspaceId: string, db: Knex | Knex.Transaction = knex): Promise<Settings> {
    const settings = await store.find(db, workspaceId);
    if (!settings) throw new NotFoundError('workspace not found');
    return settings;
  }

  return {
    /** The workspace's settings; inside a transaction pass it as `db`. */
    get,

    /** The settings, at most a few seconds old (changes made here are seen at once); pass a transaction as `db`. */
    async cached(workspaceId: string, db: Knex | Knex.Transaction = knex): Promise<Settings> {
      const hit = cache.get(workspaceId);
      if (hit) return hit;
      const settings = await get(workspaceId, db);
      cache.set(workspaceId, settings);
      return settings;
    },

    /** Every workspace that prunes its events and its retention in days (the event pruner's look). */
    eventRetentions: () => store.eventRetentions(knex),

    /** PATCH: changes only the fields sent; a refused request changes nothing. */
    async update(workspaceId: string, body: unknown): Promise<Settings> {
      const input = parseInput(updateSettingsSchema, body);
      await deps.senders.checkFromEmail(workspaceId, input.sender?.from_email, 'sender.from_email');
      // A 400 naming `footer_html` / `footer_text` for a footer that does not parse or render within the limits.
      await deps.footers.check({ html: input.footer_html, text: input.footer_text }, 'footer_');
      const next = await writer.run(async (trx) => {
        const current = await store.find(trx, workspaceId, true);
        if (!current) throw new NotFoundError('workspace not found');
        const changes: Partial<Settings> = {
          ...(input.click_window_days !== undefined ? { click_window_days: input.click_window_days } : {}),
          ...(input.open_window_days !== undefined ? { open_window_days: input.open_window_days } : {}),
          ...(input.contact_limit !== undefined ? { contact_limit: input.contact_limit } : {}),
          ...(input.sender !== undefined
            ? {
                sender: {
                  from_email: input.sender.from_email !== undefined ? input.sender.from_email : current.sender.from_email,
                  from_name: input.sender.from_name !== undefined ? input.sender.from_name || null : current.sender.from_name,
                },
              }
            : {}),
          ...(input.own_domains !== undefined ? { own_domains: input.own_domains ?? [] } : {}),
          ...(input.footer_html !== undefined ? { footer_html: input.footer_html } : {}),
          ...(input.footer_text !== undefined ? { footer_text: input.footer_text } : {}),
          ...(input.postal_address !== undefined ? { postal_address: input.postal_address } : {}),
          ...(input.domain_rates !== undefined ? { domain_rates: input.domain_rates ?? {} } : {}),
          ...(input.event_retention_days !== undefined ? { event_retention_days: input.event_retention_days } : {}),
        };
        await store.update(trx, workspaceId, changes);
        if (input.currency === undefined) return { ...current, ...changes };
        await store.setCurrency(trx, workspaceId, input.currency, input.currency === null ? null : 'settings');
        const currency = input.currency ?? DEFAULT_SHOP_CURRENCY;
        await deps.products.adoptShopCurrency(trx, workspaceId, currency);
        return { ...current, ...changes, currency };
      });
      cache.delete(workspaceId);
      onChange?.(workspaceId);
      return next;
    },

    /**
     * The currency a Shopify or WooCommerce delivery says the shop keeps its books in, taken when the workspace has
     * none yet (neither set in settings nor learnt from an earlier delivery); inside the delivery's transaction.
     */
    async learnShopCurrency(trx: Knex.Transaction, workspaceId: string, currency: string, origin: ShopCurrencyOrigin): Promise<void> {
      if (!(await store.learnCurrency(trx, workspaceId, currency, origin))) return;
      await deps.products.adoptShopCurrency(trx, workspaceId, currency);
      cache.delete(workspaceId);
      onChange?.(workspaceId);
    },
  };
}

export type SettingsService = ReturnType<typeof createSettingsService>;
