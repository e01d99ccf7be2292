import Fastify, { type FastifyInstance, type RouteOptions } from 'fastify';
import type { EmkConfig, TrustProxy } from '../domain/config.js';
import type { Services } from '../domain/create-services.js';
import { EMK_VERSION } from '../domain/shared/package.js';
import { registerApiKeyAuth, requireOwner } from './plugins/api-key-auth.js';
import { registerCors } from './plugins/cors.js';
import { DrainGate } from './plugins/drain.js';
import { answerRoutingError, registerErrorHandling } from './plugins/errors.js';
import { registerJsonBody } from './plugins/json-body.js';
import { createEmkMetrics } from './metrics/emk-metrics.js';
import { registerOpenApi } from './openapi/openapi-plugin.js';
import { registerRateLimits } from './plugins/rate-limit.js';
import { registerSecurityHeaders } from './plugins/security-headers.js';
import { requestIdOf, registerRequestId } from './plugins/request-id.js';
import { registerRequestMetrics } from './plugins/request-metrics.js';
import { apiKeyRoutes } from './routes/api-keys/api-key-routes.js';
import { authRoutes } from './routes/auth/auth-routes.js';
import { collectRoutes } from './routes/collect/collect-routes.js';
import { sdkRoutes } from './routes/sdk/sdk-routes.js';
import { shopifyPixelRoutes } from './routes/sdk/shopify-pixel-routes.js';
import { contactRoutes } from './routes/contacts/contact-routes.js';
import { eventRoutes } from './routes/events/event-routes.js';
import { shipmentRoutes } from './routes/events/shipment-routes.js';
import { orderRoutes } from './routes/orders/order-routes.js';
import { webhookRoutes } from './routes/webhook/webhook-routes.js';
import { platformWebhookRoutes } from './routes/platform-webhooks/platform-webhook-routes.js';
import { integrationRoutes } from './routes/integrations/integration-routes.js';
import { settingsRoutes } from './routes/settings/settings-routes.js';
import { productRoutes } from './routes/products/product-routes.js';
import { feedRoutes } from './routes/feeds/feed-routes.js';
import { healthRoutes } from './routes/health/health-routes.js';
import { metricsRoutes } from './routes/metrics/metrics-routes.js';
import { campaignRoutes } from './routes/campaigns/campaign-routes.js';
import { flowRoutes } from './routes/flows/flow-routes.js';
import { starterRoutes } from './routes/starters/starter-routes.js';
import { segmentRoutes } from './routes/segments/segment-routes.js';
import { messageRoutes } from './routes/messages/message-routes.js';
import { suppressionRoutes } from './routes/suppressions/suppression-routes.js';
import { reportRoutes } from './routes/reports/report-routes.js';
import { trackingRoutes } from './routes/tracking/tracking-routes.js';
import { consentRoutes } from './routes/consent/consent-routes.js';
import { segmentIngestRoutes } from './routes/segment-ingest/segment-ingest-routes.js';
import { senderRoutes } from './routes/senders/sender-routes.js';
import { userRoutes } from './routes/users/user-routes.js';
import { relayWebhookRoutes } from './routes/relay-webhooks/relay-webhook-routes.js';
import { espRoutes } from './routes/esp/esp-routes.js';
import { dataRequestRoutes } from './routes/data-rights/data-request-routes.js';
import { consoleRoutes } from './routes/console/console-routes.js';
import { landingRoutes } from './routes/landing/landing-routes.js';

/** Bodies above 5 MiB are refused with 413 (docs/api/errors.md). */
export const BODY_LIMIT_BYTES = 5 * 1024 * 1024;

export interface AppOptions {
  services: Services;
  config: EmkConfig;
  drain?: DrainGate;
  logLevel?: string;
  /** Told of every route as it is registered (the test that every route is in the OpenAPI document). */
  onRoute?: (route: RouteOptions) => void;
}

/**
 * Fastify's `trustProxy`. A hop count is a function: Fastify 5.12 reads a number as "trust nothing" (it cannot
 * tell a proxy from a client that connects directly), so `i < hops` trusts the socket's peer and the entries
 * the proxies in front appended, never what the client wrote further left (docs/operations.md).
 */
const fastifyTrustProxy = (trust: TrustProxy) =>
  trust === false ? false : 'hops' in trust ? (_address: string, hop: number) => hop < trust.hops : trust.addresses;

/** The HTTP face of emk. Thin: every route validates, calls one domain function and shapes the reply. */
export async function buildApp(options: AppOptions): Promise<FastifyInstance> {
  const { services, config } = options;
  const drain = options.drain ?? new DrainGate();
  const app = Fastify({
    bodyLimit: BODY_LIMIT_BYTES,
    // Tracking tokens carry the link they lead to (up to 2,000 bytes): longer than the router's default of 100.
    routerOptions: { maxParamLength: 3_000 },
    trustProxy: fastifyTrustProxy(config.trustProxy),
    genReqId: requestIdOf,
    // Draining is answered by the DrainGate, with the body and Retry-After the contract asks for.
    return503OnClosing: false,
    // URLs the router cannot take apart still answer in the contract's envelope, with X-Request-Id.
    frameworkErrors: answerRoutingError,
    // pino: one JSON line per entry, each request's carrying its id (`reqId`: X-Request-Id, or a fresh one).
    logger: { level: options.logLevel ?? config.logLevel },
  });

  if (options.onRoute) app.addHook('onRoute', options.onRoute);
  registerErrorHandling(app);
  registerRequestId(app);
  // A registry per app, not prom-client's global one: each app counts its own requests (tests build several).
  const metrics = createEmkMetrics(services);
  registerRequestMetrics(app, metrics);
  // CORS first: a draining server's 503 (and its Retry-After) must be readable by the SDK on a shop's page.
  registerCors(app, ['/collect/', '/v1/']);
  drain.register(app);
  await registerSecurityHeaders(app);
  registerRateLimits(app, services.rateLimiter, config.limits);
  registerJsonBody(app);
  // The API's version in the OpenAPI document: the package's.
  await registerOpenApi(app, EMK_VERSION);

  await app.register(healthRoutes(services));
  await app.register(metricsRoutes(metrics, config.metricsToken));
  await app.register(collectRoutes(services));
  await app.register(segmentIngestRoutes(services));
  await app.register(sdkRoutes());
  await app.register(shopifyPixelRoutes(services, config.baseUrl));
  await app.register(webhookRoutes(services));
  // `/ecom/shopify/…` and `/ecom/woocommerce/…`: the router prefers these static segments to the webhook's `:platform`.
  await app.register(platformWebhookRoutes(services));
  await app.register(trackingRoutes(services));
  await app.register(consentRoutes(services));
  await app.register(espRoutes(services));
  await app.register(authRoutes(services, config), { prefix: '/api/v1/auth' });
  await app.register(landingRoutes(services));
  await app.register(consoleRoutes(services, config));
  await app.register(
    async (api) => {
      registerApiKeyAuth(api, services.apiKeys, services.users);
      await api.register(eventRoutes(services));
      await api.register(shipmentRoutes(services));
      await api.register(orderRoutes(services));
      await api.register(productRoutes(services));
      await api.register(feedRoutes(services));
      await api.register(contactRoutes(services));
      // Owners (and API keys) only: a member gets 403 `forbidden`.
      await api.register(async (owners) => {
        requireOwner(owners);
        await owners.register(apiKeyRoutes(services));
        await owners.register(integrationRoutes(services));
        await owners.register(settingsRoutes(services));
        await owners.register(userRoutes(services));
        await owners.register(senderRoutes(services));
        await owners.register(relayWebhookRoutes(services));
        await owners.register(dataRequestRoutes(services));
      });
      await api.register(campaignRoutes(services));
      await api.register(flowRoutes(services));
      await api.register(starterRoutes(services));
      await api.register(segmentRoutes(services));
      await api.register(messageRoutes(services));
      await api.register(suppressionRoutes(services));
      await api.register(reportRoutes(services));
    },
    { prefix: '/api/v1' },
  );
  return app;
}
