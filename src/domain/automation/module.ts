import { createCampaignService } from '../campaigns/campaign-service.js';
import type { CartService } from '../carts/cart-service.js';
import type { ContactLookup } from '../contacts/contact-lookup.js';
import type { ContactService } from '../contacts/contact-service.js';
import { DEFAULT_WEBHOOK_OPTIONS, type WebhookOptions } from '../flows/webhook-client.js';
import type { EventPruner } from '../events/event-pruner.js';
import type { EventRecords } from '../events/event-records.js';
import { createFlowEngine } from '../flows/flow-engine.js';
import { createFlowService } from '../flows/flow-service.js';
import { createTriggerContexts } from '../flows/trigger-context.js';
import type { MessageService } from '../messages/message-service.js';
import type { OrderLookup } from '../orders/order-lookup.js';
import type { Runtime } from '../runtime/module.js';
import { createSegmentService } from '../segments/segment-service.js';
import type { FeedService } from '../feeds/feed-service.js';
import { createStarterService } from '../starters/starter-service.js';
import type { SenderService } from '../senders/sender-service.js';
import type { Clock } from '../shared/time.js';
import type { Templates } from '../templates/template-engine.js';
import { createOutboxPruner } from '../triggers/outbox-pruner.js';
import { createTriggerDispatcher, type FactSetAside } from '../triggers/trigger-dispatcher.js';

/**
 * Automation: segments, campaigns and flows, and what the worker runs for them: their job handlers, and the
 * outbox consumer that hands each trigger fact to the nouns that act on it (segments re-evaluate, flows enrol).
 */
export function createAutomationModule(
  runtime: Runtime,
  deps: {
    clock: Clock | undefined;
    /** Where a trigger fact that cannot be consumed is reported (the host's log). */
    onFactSetAside: FactSetAside | undefined;
    contactLookup: ContactLookup;
    eventRecords: EventRecords;
    /** Drained after the outbox pruner, whose removed facts free the events they named. */
    eventPruner: EventPruner;
    orderLookup: OrderLookup;
    carts: CartService;
    messages: MessageService;
    templates: Templates;
    /** Where a campaign's or flow step's `from_email` may be. */
    senders: SenderService;
    /** What flows' `update_contact` steps write through, and webhook steps post. */
    contacts: ContactService;
    webhooks: WebhookOptions | undefined;
    /** Where a starter's product block gets its feed. */
    feeds: Pick<FeedService, 'create'>;
  },
) {
  const { contactLookup, messages, templates, senders } = deps;
  const segments = createSegmentService({ ...runtime, clock: deps.clock });
  const campaigns = createCampaignService({ ...runtime, messages, templates, senders, contactLookup, segmentExists: segments.exists });
  const contexts = createTriggerContexts({ eventRecords: deps.eventRecords, orders: deps.orderLookup, carts: deps.carts });
  const webhooks = deps.webhooks ?? DEFAULT_WEBHOOK_OPTIONS;
  const flowEngine = createFlowEngine({ ...runtime, contexts, contactLookup, messages, segments, contacts: deps.contacts, webhooks });
  const flows = createFlowService({ ...runtime, engine: flowEngine, templates, senders, segments, messages, webhooks, contactLookup });
  const starters = createStarterService({ flows, campaigns, segments, feeds: deps.feeds });
  const dispatcher = createTriggerDispatcher({
    ...runtime,
    consumers: [segments.consumeFacts, flowEngine.consumeFacts],
    onFailure: deps.onFactSetAside,
  });
  const outboxPruner = createOutboxPruner({ ...runtime, oldestFactInUse: flowEngine.oldestFactInUse, clock: deps.clock });
  return {
    segments,
    campaigns,
    flows,
    starters,
    dispatcher,
    outboxPruner,
    /** The oldest trigger fact a waiting flow job reads again (the event pruner keeps its event and those after). */
    oldestFactInUse: flowEngine.oldestFactInUse,
    /** What the worker runs, by job kind: each noun's handlers. */
    jobHandlers: { ...campaigns.handlers, ...segments.handlers, ...flowEngine.handlers },
    /**
     * What the worker drains before each claim: the trigger outbox, then its consumed facts once unneeded, then
     * events past their workspace's retention.
     */
    workerPumps: [() => dispatcher.drainOnce(), () => outboxPruner.pruneOnce(), () => deps.eventPruner.pruneOnce(flowEngine.oldestFactInUse)],
  };
}
