import type { Db } from '../db/database.js';

/**
 * The shop's currency (settings `currency`, docs/api/settings-and-integrations.md#currency): what a price or an
 * order arriving without a currency is in. Until it is set or learnt from a platform it is the spec's product
 * default, USD. A named query: other nouns read the workspace row's column through it, never the table.
 */
export const DEFAULT_SHOP_CURRENCY = 'USD';

/** Who set the currency: the operator (`settings`, never overridden by a platform) or the platform it was learnt from. */
export type ShopCurrencyOrigin = 'settings' | 'shopify' | 'woocommerce';

export async function readShopCurrency(db: Db, workspaceId: string): Promise<string> {
  const row: { currency: string | null } | undefined = await db('workspaces').where({ id: workspaceId }).first('currency');
  return row?.currency ?? DEFAULT_SHOP_CURRENCY;
}
