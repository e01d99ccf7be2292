import type { RefundSum } from './order-store.js';

/** What converting an order's refunds needs: its total in the shop's currency and, when it differs, as paid. */
export interface OrderMoney {
  currency: string;
  total_amount: number;
  presentment_currency: string | null;
  presentment_total_amount: number | null;
}

/**
 * The refunds of an order in the shop's currency (docs/platforms/README.md, Currencies). A refund made in the
 * currency the buyer paid (Shopify refunds a Markets order in it) is converted at the order's own rate, its total in
 * the shop's currency over its total as paid, so refunding everything that was paid takes the whole total back
 * whatever the rates did since. A refund in the order's currency, or in one the order does not name, counts as it is.
 */
export function refundedInShopMoney(refunds: RefundSum[], order: OrderMoney): number {
  const paid = order.presentment_total_amount;
  let sum = 0;
  for (const refund of refunds) {
    const asPaid = refund.currency !== null && refund.currency !== order.currency && refund.currency === order.presentment_currency && paid !== null && paid > 0;
    sum += asPaid ? (refund.amount * order.total_amount) / paid : refund.amount;
  }
  // The stored scale (4 places): a refund of everything paid converts to the total exactly.
  return Math.round(sum * 10_000) / 10_000;
}
