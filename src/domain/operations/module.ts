import type { AttributionService } from '../attribution/attribution-service.js';
import type { CampaignService } from '../campaigns/campaign-service.js';
import { createConsoleService } from '../console/console-service.js';
import type { ContactIdentityService } from '../contact-identities/contact-identity-service.js';
import type { ContactLookup } from '../contacts/contact-lookup.js';
import { createDataRightsService } from '../data-rights/data-rights-service.js';
import type { EventService } from '../events/event-service.js';
import type { FlowService } from '../flows/flow-service.js';
import type { JobHandlers } from '../jobs/job-queue.js';
import type { MessageService } from '../messages/message-service.js';
import type { OrderLookup } from '../orders/order-lookup.js';
import type { OrderService } from '../orders/order-service.js';
import { createRateLimiterFor } from '../rate-limits/rate-limiter.js';
import type { ProductActivity } from '../recommendations/product-activity.js';
import { createReportService } from '../reports/report-service.js';
import type { Runtime } from '../runtime/module.js';
import type { SegmentService } from '../segments/segment-service.js';
import type { Clock } from '../shared/time.js';
import { createStatusService } from '../status/status-service.js';

/**
 * Operations: the revenue report, a person's data rights (erasure, export), the request rate limits, the
 * operator's status of the shared queues and the read model of the operator's console.
 */
export function createOperationsModule(
  runtime: Runtime,
  deps: {
    clock: Clock | undefined;
    contactLookup: ContactLookup;
    contactIdentities: ContactIdentityService;
    orderLookup: OrderLookup;
    campaigns: CampaignService;
    flows: FlowService;
    segments: SegmentService;
    attribution: AttributionService;
    events: EventService;
    orders: OrderService;
    messages: MessageService;
    productActivity: ProductActivity;
    jobHandlers: JobHandlers;
  },
) {
  const reports = createReportService({ ...runtime, orders: deps.orderLookup, campaigns: deps.campaigns, flows: deps.flows, messages: deps.messages });
  const dataRights = createDataRightsService({
    ...runtime,
    contactLookup: deps.contactLookup,
    lists: { events: deps.events, orders: deps.orders, messages: deps.messages },
    activity: deps.productActivity,
    identities: deps.contactIdentities,
  });
  const rateLimiter = createRateLimiterFor(runtime.db, deps.clock);
  // On the wall clock, as the job queue's claims are: the hand-moved clock of tests would age jobs wrongly.
  const status = createStatusService({ ...runtime, messages: deps.messages, events: deps.events, jobKinds: Object.keys(deps.jobHandlers) });
  const consoleView = createConsoleService({ ...runtime, ...deps, reports, status });
  return { reports, dataRights, rateLimiter, status, consoleView };
}
