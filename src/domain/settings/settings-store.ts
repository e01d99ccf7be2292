import type { Dialect } from '../db/dialect/dialect.js';
import { storedDomainRatesSchema, storedOwnDomainsSchema, storedSenderSchema, type Settings } from './settings.schema.js';
import type { Db } from '../db/database.js';
import { DEFAULT_SHOP_CURRENCY, type ShopCurrencyOrigin } from './shop-currency.js';

const COLUMNS = ['click_window_days', 'open_window_days', 'contact_limit', 'sender', 'own_domains', 'footer_html', 'footer_text', 'postal_address', 'domain_rates', 'event_retention_days', 'currency'] as const;
/** Text columns a PATCH writes as sent (null clears). */
const TEXT_COLUMNS = ['footer_html', 'footer_text', 'postal_address'] as const;
const textOrNull = (value: unknown): string | null => (typeof value === 'string' ? value : null);

/** Settings are columns of the workspace row. */
export function createSettingsStore(dialect: Dialect) {
  const fromRow = (row: Record<string, unknown>): Settings => {
    const sender = storedSenderSchema.parse(row.sender === null ? {} : dialect.readJson(row.sender));
    return {
      click_window_days: dialect.readNumber(row.click_window_days),
      open_window_days: dialect.readNumber(row.open_window_days),
      contact_limit: dialect.readNullableNumber(row.contact_limit),
      sender: { from_email: sender.from_email ?? null, from_name: sender.from_name ?? null },
      own_domains: row.own_domains === null ? [] : storedOwnDomainsSchema.parse(dialect.readJson(row.own_domains)),
      footer_html: textOrNull(row.footer_html),
      footer_text: textOrNull(row.footer_text),
      postal_address: textOrNull(row.postal_address),
      domain_rates: row.domain_rates === null ? {} : storedDomainRatesSchema.parse(dialect.readJson(row.domain_rates)),
      event_retention_days: dialect.readNullableNumber(row.event_retention_days),
      currency: textOrNull(row.currency) ?? DEFAULT_SHOP_CURRENCY,
    };
  };

  return {
    async find(db: Db, workspaceId: string, lock = false): Promise<Settings | null> {
      const query = db('workspaces').where({ id: workspaceId }).first(COLUMNS);
      const row = await (lock ? dialect.forUpdate(query) : query);
      return row ? fromRow(row) : null;
    },

    async update(db: Db, workspaceId: string, changes: Partial<Settings>): Promise<void> {
      const patch: Record<string, unknown> = {};
      if (changes.click_window_days !== undefined) patch.click_window_days = changes.click_window_days;
      if (changes.open_window_days !== undefined) patch.open_window_days = changes.open_window_days;
      if (changes.contact_limit !== undefined) patch.contact_limit = changes.contact_limit;
      if (changes.sender !== undefined) patch.sender = dialect.writeJson(changes.sender);
      if (changes.own_domains !== undefined) patch.own_domains = dialect.writeJson(changes.own_domains);
      for (const column of TEXT_COLUMNS) if (changes[column] !== undefined) patch[column] = changes[column];
      if (changes.domain_rates !== undefined) patch.domain_rates = dialect.writeJson(changes.domain_rates);
      if (changes.event_retention_days !== undefined) patch.event_retention_days = changes.event_retention_days;
      if (Object.keys(patch).length > 0) await db('workspaces').where({ id: workspaceId }).update(patch);
    },

    /** Sets the shop's currency and who set it (null forgets both). */
    async setCurrency(db: Db, workspaceId: string, currency: string | null, origin: ShopCurrencyOrigin | null): Promise<void> {
      await db('workspaces').where({ id: workspaceId }).update({ currency, currency_origin: origin });
    },

    /**
     * Sets the currency a platform names, unless one was set or learnt before; whether it was set. The row is
     * locked by the update, so two first deliveries cannot both set it.
     */
    async learnCurrency(db: Db, workspaceId: string, currency: string, origin: ShopCurrencyOrigin): Promise<boolean> {
      const updated = await db('workspaces').where({ id: workspaceId }).whereNull('currency_origin').update({ currency, currency_origin: origin });
      return updated > 0;
    },

    /** Every workspace that prunes its events, with its retention in days. */
    async eventRetentions(db: Db): Promise<Array<{ workspaceId: string; days: number }>> {
      const rows: Array<{ id: string; event_retention_days: unknown }> = await db('workspaces')
        .whereNotNull('event_retention_days')
        .orderBy('id')
        .select('id', 'event_retention_days');
      return rows.map((row) => ({ workspaceId: row.id, days: dialect.readNumber(row.event_retention_days) }));
    },
  };
}

export type SettingsStore = ReturnType<typeof createSettingsStore>;
