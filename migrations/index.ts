import type { Knex } from 'knex';
import * as createWorkspaces from './202611211000_create_workspaces.js';
import * as createContacts from './202611211001_create_contacts.js';
import * as createEvents from './202611211002_create_events.js';
import * as createRateLimitCounters from './202611211003_create_rate_limit_counters.js';
import * as addWorkspaceSecret from './202611211100_add_workspace_secret.js';
import * as createProducts from './202611211101_create_products.js';
import * as createOrders from './202611211102_create_orders.js';
import * as createCarts from './202611211103_create_carts.js';
import * as createWebhookDeliveries from './202611211104_create_webhook_deliveries.js';
import * as createEngagements from './202611211105_create_engagements.js';
import * as trimHotPathIndexes from './202611211200_trim_hot_path_indexes.js';
import * as partialAttributionIndexes from './202611211201_partial_attribution_indexes.js';
import * as indexDedupeKeysByWorkspace from './202611211202_index_dedupe_keys_by_workspace.js';
import * as createProductFeeds from './202611211300_create_product_feeds.js';
import * as indexProductFilters from './202611211400_index_product_filters.js';
import * as createProductActivity from './202611211401_create_product_activity.js';
import * as createProductPairTotals from './202611211402_create_product_pair_totals.js';
import * as createJobs from './202611241000_create_jobs.js';
import * as createCampaignsAndMessages from './202611241001_create_campaigns_and_messages.js';
import * as createFlows from './202611241100_create_flows.js';
import * as createSegments from './202611241101_create_segments.js';
import * as createUsers from './202611241200_create_users.js';
import * as createSegmentIngest from './202611241210_create_segment_ingest.js';
import * as addContactErasedAt from './202611241220_add_contact_erased_at.js';
import * as indexPairPartnersInRankOrder from './202611250100_index_pair_partners_in_rank_order.js';
import * as createProductCategoryTotals from './202611250200_create_product_category_totals.js';
import * as trimEventContactIndexes from './202611251000_trim_event_contact_indexes.js';
import * as indexOutboxFactsReadByContact from './202611251100_index_outbox_facts_read_by_contact.js';
import * as addWorkspaceOwnDomains from './202611270930_add_workspace_own_domains.js';
import * as addUserRolesAndSenders from './202611270940_add_user_roles_and_senders.js';
import * as createRelayWebhooks from './202611271010_create_relay_webhooks.js';
import * as addWorkspaceFooter from './202611271030_add_workspace_footer.js';
import * as addWorkspaceDomainRates from './202611271040_add_workspace_domain_rates.js';
import * as addMessageToSubscriptionChanges from './202611271050_add_message_to_subscription_changes.js';
import * as createPlatformWebhooks from './202611280900_create_platform_webhooks.js';
import * as indexMessagesByStatus from './202611281100_index_messages_by_status.js';
import * as addWorkspaceEventRetention from './202611281300_add_workspace_event_retention.js';
import * as createConsoleSessions from './202611290100_create_console_sessions.js';
import * as addCampaignFormat from './202611290300_add_campaign_format.js';
import * as addCampaignAbTests from './202611290400_add_campaign_ab_tests.js';
import * as createFlowWebhookAttempts from './202611290500_create_flow_webhook_attempts.js';
import * as partitionEventsByMonth from './202611290600_partition_events_by_month.js';
import * as compressMessageHtmlWithLz4 from './202611300100_compress_message_html_with_lz4.js';
import * as createCampaignSplitKeys from './202611300200_create_campaign_split_keys.js';
import * as addWorkspaceCurrency from './202612020100_add_workspace_currency.js';
import * as createContactIdentities from './202612020200_create_contact_identities.js';
import * as allowOrdersWithoutContact from './202612020210_allow_orders_without_contact.js';
import * as addRefundTimesAndTestOrders from './202612020300_add_refund_times_and_test_orders.js';

export interface Migration {
  up(knex: Knex): Promise<void>;
  down(knex: Knex): Promise<void>;
  /** `transaction: false`: run outside a transaction (knex's per-migration setting; the migration says why). */
  config?: { transaction?: boolean };
}

/**
 * Every migration, in order. Listed statically (not read from a folder) so the same set runs from compiled
 * JavaScript and under the test runner alike.
 */
export const migrations: ReadonlyArray<readonly [name: string, migration: Migration]> = [
  ['202611211000_create_workspaces', createWorkspaces],
  ['202611211001_create_contacts', createContacts],
  ['202611211002_create_events', createEvents],
  ['202611211003_create_rate_limit_counters', createRateLimitCounters],
  ['202611211100_add_workspace_secret', addWorkspaceSecret],
  ['202611211101_create_products', createProducts],
  ['202611211102_create_orders', createOrders],
  ['202611211103_create_carts', createCarts],
  ['202611211104_create_webhook_deliveries', createWebhookDeliveries],
  ['202611211105_create_engagements', createEngagements],
  ['202611211200_trim_hot_path_indexes', trimHotPathIndexes],
  ['202611211201_partial_attribution_indexes', partialAttributionIndexes],
  ['202611211202_index_dedupe_keys_by_workspace', indexDedupeKeysByWorkspace],
  ['202611211300_create_product_feeds', createProductFeeds],
  ['202611211400_index_product_filters', indexProductFilters],
  ['202611211401_create_product_activity', createProductActivity],
  ['202611211402_create_product_pair_totals', createProductPairTotals],
  ['202611241000_create_jobs', createJobs],
  ['202611241001_create_campaigns_and_messages', createCampaignsAndMessages],
  ['202611241100_create_flows', createFlows],
  ['202611241101_create_segments', createSegments],
  ['202611241200_create_users', createUsers],
  ['202611241210_create_segment_ingest', createSegmentIngest],
  ['202611241220_add_contact_erased_at', addContactErasedAt],
  ['202611250100_index_pair_partners_in_rank_order', indexPairPartnersInRankOrder],
  ['202611250200_create_product_category_totals', createProductCategoryTotals],
  ['202611251000_trim_event_contact_indexes', trimEventContactIndexes],
  ['202611251100_index_outbox_facts_read_by_contact', indexOutboxFactsReadByContact],
  ['202611270930_add_workspace_own_domains', addWorkspaceOwnDomains],
  ['202611270940_add_user_roles_and_senders', addUserRolesAndSenders],
  ['202611271010_create_relay_webhooks', createRelayWebhooks],
  ['202611271030_add_workspace_footer', addWorkspaceFooter],
  ['202611271040_add_workspace_domain_rates', addWorkspaceDomainRates],
  ['202611271050_add_message_to_subscription_changes', addMessageToSubscriptionChanges],
  ['202611280900_create_platform_webhooks', createPlatformWebhooks],
  ['202611281100_index_messages_by_status', indexMessagesByStatus],
  ['202611281300_add_workspace_event_retention', addWorkspaceEventRetention],
  ['202611290100_create_console_sessions', createConsoleSessions],
  ['202611290300_add_campaign_format', addCampaignFormat],
  ['202611290400_add_campaign_ab_tests', addCampaignAbTests],
  ['202611290500_create_flow_webhook_attempts', createFlowWebhookAttempts],
  ['202611290600_partition_events_by_month', partitionEventsByMonth],
  ['202611300100_compress_message_html_with_lz4', compressMessageHtmlWithLz4],
  ['202611300200_create_campaign_split_keys', createCampaignSplitKeys],
  ['202612020100_add_workspace_currency', addWorkspaceCurrency],
  ['202612020200_create_contact_identities', createContactIdentities],
  ['202612020210_allow_orders_without_contact', allowOrdersWithoutContact],
  ['202612020300_add_refund_times_and_test_orders', addRefundTimesAndTestOrders],
];
