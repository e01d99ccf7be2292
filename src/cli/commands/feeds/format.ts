import type { FeedReply } from '../../../domain/feeds/feed-service.js';
import type { Product } from '../../../domain/products/product.schema.js';
import { plural } from '../../plural.js';

/** One line per feed: id, name, type or sort, product count. */
export function describeFeed({ feed, product_count }: FeedReply): string {
  const ordering = feed.recommendation_type === '' ? `sort ${feed.sort_by}` : feed.recommendation_type;
  return `${feed.id}  ${feed.name}  (${ordering}, max ${feed.max_items}): ${plural(product_count, 'product')}`;
}

export function describeProduct(product: Product): string {
  const price = product.price === null ? '-' : `${product.price} ${product.currency}`;
  return `  ${product.external_id}  ${product.title}  ${price}`;
}
