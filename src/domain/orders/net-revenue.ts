/** Net revenue of an order (what lifetime revenue and reports sum): nothing once cancelled, less refunds. */
export const NET_REVENUE_SQL = 'CASE WHEN cancelled_at IS NULL THEN total_amount - refunded_amount ELSE 0 END';
