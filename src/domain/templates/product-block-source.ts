import { NotFoundError } from '../errors.js';
import type { FeedService } from '../feeds/feed-service.js';
import type { Product } from '../products/product.schema.js';
import { TtlCache } from '../shared/ttl-cache.js';
import type { Clock } from '../shared/time.js';

/** What a product block tops itself up from when its feed has too few products (or is gone). */
export const BLOCK_FALLBACKS = ['best_selling', 'most_viewed', 'cart_or_order_items'] as const;
export type BlockFallback = (typeof BLOCK_FALLBACKS)[number];

export interface BlockProductRequest {
  workspaceId: string;
  /** The recipient; null for a send without one (a test send), which gets no per-recipient products. */
  contactId: string | null;
  feedId: string;
  limit: number;
  fallback: BlockFallback | null;
}

/** The products of one `{% products %}` block for one recipient: at most `limit`, each once. */
export type BlockProductSource = (request: BlockProductRequest) => Promise<Product[]>;

/** Store-wide rankings are the same for every recipient of a send: read once per few seconds, not per message. */
const STORE_WIDE_TTL_MS = 5_000;
const STORE_WIDE_FALLBACKS: ReadonlySet<BlockFallback> = new Set(['best_selling', 'most_viewed']);

export function createBlockProductSource(deps: { feeds: FeedService; clock?: Clock }): BlockProductSource {
  const { feeds } = deps;
  /**
   * Store-wide products by feed or fallback, as promises: the first recipient to miss reads them and the others of
   * the send wait for that read, instead of each asking the database at once (dozens of renders are in flight).
   * A feed ranked per recipient is kept as `null`: its renders read their own at once, without waiting.
   */
  const storeWide = new TtlCache<string, Promise<Product[] | null>>(STORE_WIDE_TTL_MS, deps.clock, 1_000);

  /** `read` shared under `key`; a failed read is not kept, so the next render tries again. */
  function shared(key: string, read: () => Promise<Product[] | null>): Promise<Product[] | null> {
    let entry = storeWide.get(key);
    if (!entry) {
      entry = read();
      storeWide.set(key, entry);
      entry.catch(() => storeWide.delete(key));
    }
    return entry;
  }

  /**
   * The feed ranked for the recipient; a feed deleted since the template was written holds nothing. A feed that
   * is the same for everyone (a store-wide ranking) is read once per few seconds, not once per message.
   */
  async function feedProducts({ workspaceId, contactId, feedId, limit }: BlockProductRequest): Promise<Product[]> {
    const rank = () => feeds.rankedFor(workspaceId, feedId, { contactId: contactId ?? undefined, limit });
    try {
      // This render's own products when it was the one that read (a per-recipient feed's are its alone).
      let ownRead: Product[] | null = null;
      const everyone = await shared(`${workspaceId}\u0000feed:${feedId}\u0000${limit}`, async () => {
        const { data, sameForEveryone } = await rank();
        ownRead = data;
        return sameForEveryone ? data : null;
      });
      return everyone ?? ownRead ?? (await rank()).data;
    } catch (error) {
      if (error instanceof NotFoundError) return [];
      throw error;
    }
  }

  async function fallbackProducts(workspaceId: string, fallback: BlockFallback, contactId: string | null, limit: number): Promise<Product[]> {
    if (!STORE_WIDE_FALLBACKS.has(fallback)) return feeds.rankType(workspaceId, fallback, { contactId, limit });
    return (await shared(`${workspaceId}\u0000${fallback}\u0000${limit}`, () => feeds.rankType(workspaceId, fallback, { contactId: null, limit })))!;
  }

  return async (request) => {
    const chosen = new Map<string, Product>();
    const add = (products: Product[]) => {
      for (const product of products) if (chosen.size < request.limit && !chosen.has(product.id)) chosen.set(product.id, product);
    };
    add(await feedProducts(request));
    // `limit` from the fallback is always enough: at most chosen.size of them repeat a chosen product.
    if (chosen.size < request.limit && request.fallback !== null) {
      add(await fallbackProducts(request.workspaceId, request.fallback, request.contactId, request.limit));
    }
    return [...chosen.values()];
  };
}
