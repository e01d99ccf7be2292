import type { AttributionService } from '../attribution/attribution-service.js';
import { createConsentService } from '../consent/consent-service.js';
import type { ContactLookup } from '../contacts/contact-lookup.js';
import type { ContactService } from '../contacts/contact-service.js';
import type { EmkConfig } from '../config.js';
import { createDomainPacer } from '../delivery/domain-pacing.js';
import { createTransport } from '../delivery/transport.js';
import type { EventService } from '../events/event-service.js';
import type { IdentityTokenService } from '../identity-tokens/identity-token-service.js';
import type { IntegrationService } from '../integrations/integration-service.js';
import { createMessageLookup } from '../messages/message-lookup.js';
import { createMessageService } from '../messages/message-service.js';
import type { OrderLookup } from '../orders/order-lookup.js';
import type { Runtime } from '../runtime/module.js';
import type { SenderService } from '../senders/sender-service.js';
import type { SettingsService } from '../settings/settings-service.js';
import type { Clock } from '../shared/time.js';
import type { SuppressionService } from '../suppressions/suppression-service.js';
import type { TemplateLimits, Templates } from '../templates/template-engine.js';
import { createTrackingService } from '../tracking/tracking-service.js';
import { createRelayWebhookService } from '../relay-webhooks/relay-webhook-service.js';
import type { RelayFetch } from '../relay-webhooks/relay-signatures.js';
import type { WorkspaceService } from '../workspaces/workspace-service.js';
import type { WebhookOptions } from '../flows/webhook-client.js';

/** How mail leaves and where its links point (docs/email.md, Delivery). */
export interface EmailOptions {
  /** The public root of tracking, unsubscribe and preferences links. */
  baseUrl: string;
  /** Unset: every message is captured in the database. */
  smtpUrl?: string | undefined;
  smtpRatePerSecond?: number;
  smtpMaxConnections?: number;
  /** A template part's deadline and output cap (unset: 1 s and 1 MiB). */
  templateLimits?: TemplateLimits;
  /** How relay webhooks fetch SNS certificates and subscription links (unset: HTTPS with a timeout; tests give their own). */
  relayFetch?: RelayFetch;
  /** The envelope sender (Return-Path) of every mail; unset: the From address. */
  smtpReturnPath?: string | undefined;
  /** Flow webhook steps' outbound calls (EMK_WEBHOOK_*; unset: no host allowed, 10 s, 1 min). */
  webhooks?: WebhookOptions;
}

export const DEFAULT_EMAIL: EmailOptions = { baseUrl: 'http://localhost:8080' };

export const emailOptionsOf = (config: EmkConfig): EmailOptions => ({
  baseUrl: config.baseUrl,
  smtpUrl: config.smtpUrl,
  smtpRatePerSecond: config.smtpRatePerSecond,
  smtpMaxConnections: config.smtpMaxConnections,
  templateLimits: { timeoutMs: config.templateTimeoutMs, maxBytes: config.templateMaxBytes },
  smtpReturnPath: config.smtpReturnPath,
  webhooks: config.webhooks,
});

/**
 * Sending: the render → deliver pipeline of messages, the relay, tracking of opens and clicks, and
 * the consent pages every marketing message links to, and the relays' bounce and complaint webhooks.
 */
export function createSendingModule(
  runtime: Runtime,
  deps: {
    email: EmailOptions;
    clock: Clock | undefined;
    workspaces: WorkspaceService;
    settings: SettingsService;
    senders: Pick<SenderService, 'signingKeyFor'>;
    integrations: IntegrationService;
    contactLookup: ContactLookup;
    contacts: ContactService;
    suppressions: SuppressionService;
    identityTokens: IdentityTokenService;
    events: EventService;
    attribution: AttributionService;
    orderLookup: OrderLookup;
    templates: Templates;
  },
) {
  const { email, workspaces, settings, identityTokens, attribution } = deps;
  const { templates } = deps;
  const transport = createTransport({
    smtpUrl: email.smtpUrl,
    ratePerSecond: email.smtpRatePerSecond,
    maxConnections: email.smtpMaxConnections,
    returnPath: email.smtpReturnPath,
  });
  const tracking = createTrackingService({
    ...runtime,
    baseUrl: email.baseUrl,
    messages: createMessageLookup(runtime.dialect),
    identityTokens,
    attribution,
    events: deps.events,
    settings,
    integrations: deps.integrations,
    clock: deps.clock,
  });
  const messages = createMessageService({
    ...runtime,
    templates,
    transport,
    signingKeyFor: deps.senders.signingKeyFor,
    tracking,
    suppressions: deps.suppressions,
    settings,
    workspaces,
    reporting: {
      engagementCounts: attribution.engagementCounts,
      attributedTotals: deps.orderLookup.attributedTotals,
      revenueByVariant: deps.orderLookup.revenueByVariant,
      unsubscribeCounts: deps.contactLookup.unsubscribeCounts,
    },
    baseUrl: email.baseUrl,
    inFlight: email.smtpMaxConnections,
    pacer: createDomainPacer(deps.clock),
  });
  const consent = createConsentService({ ...runtime, tracking, contactLookup: deps.contactLookup, contacts: deps.contacts, workspaces });
  const relayWebhooks = createRelayWebhookService({
    ...runtime,
    messages: createMessageLookup(runtime.dialect),
    contactLookup: deps.contactLookup,
    contacts: deps.contacts,
    suppressions: deps.suppressions,
    baseUrl: email.baseUrl,
    fetchText: email.relayFetch,
    clock: deps.clock,
  });
  return { transport, tracking, messages, consent, relayWebhooks };
}
