import type { Services } from '../../../domain/create-services.js';
import type { MessageRecord } from '../../../domain/messages/message.schema.js';
import { MAX_PER_PAGE } from '../../../domain/shared/paging.js';
import { runDueJobs, workerOptionsFor } from '../../../worker/worker.js';
import { FixtureError, type FixtureStory } from './fixture-set.js';

/** What the story did: the campaign it sent, and the opens, clicks and orders it added (0 on a re-run). */
export interface StoryOutcome {
  campaign_id: string;
  sent: number;
  opened: number;
  clicked: number;
  orders: number;
}

/** Every message of a campaign, in a stable order (by address): the story picks its readers by position. */
async function messagesOf(services: Services, workspaceId: string, campaignId: string): Promise<MessageRecord[]> {
  const all: MessageRecord[] = [];
  for (let page = 1; ; page++) {
    const { data, meta } = await services.messages.list(workspaceId, { campaign_id: campaignId }, { page, perPage: MAX_PER_PAGE });
    all.push(...data);
    if (page * MAX_PER_PAGE >= meta.total) break;
  }
  return all.sort((a, b) => a.to.localeCompare(b.to) || a.id.localeCompare(b.id));
}

/** The tracking token of the message's open pixel or first tracked link, as the recipient's mail client would follow it. */
function trackingToken(message: MessageRecord, kind: 'o' | 'c'): string {
  const token = new RegExp(`/t/${kind}/([^"'\\s<>?#]+)`).exec(message.html ?? '')?.[1];
  if (!token) throw new FixtureError(`story: message ${message.id} has no tracked ${kind === 'o' ? 'open pixel' : 'link'}`);
  return token;
}

/**
 * The demo's story after its history: the set's campaign is sent now (through the transport, which must capture:
 * no demo mail leaves), some recipients open it and some click (through the tracking routes' own service, as a
 * mail client following the pixel and a link would), and some of them then buy (a historical sync order at the
 * moment of their engagement, attributed by the normal last-touch rules). Who does what is fixed by position in
 * every `every` messages, so a re-run finds each step done and changes nothing.
 */
export async function tellStory(services: Services, workspaceId: string, story: FixtureStory): Promise<StoryOutcome | null> {
  if (!services.transport.captures) return null;
  const { data: campaigns } = await services.campaigns.list(workspaceId, { page: 1, perPage: MAX_PER_PAGE });
  const campaign = campaigns.find((c) => c.name === story.campaign);
  if (!campaign) throw new FixtureError(`story: no campaign named ${JSON.stringify(story.campaign)}`);
  if (campaign.status === 'draft') {
    await services.campaigns.send(workspaceId, campaign.id);
    // The send's batches, due now, worked through in this process.
    await runDueJobs(workerOptionsFor(services));
  }
  const messages = await messagesOf(services, workspaceId, campaign.id);
  const outcome: StoryOutcome = { campaign_id: campaign.id, sent: messages.length, opened: 0, clicked: 0, orders: 0 };
  const orders: Record<string, unknown>[] = [];
  for (const [index, message] of messages.entries()) {
    const at = index % story.every;
    if (at >= story.opened) continue;
    if (message.opened_at === null) {
      await services.tracking.open(trackingToken(message, 'o'));
      outcome.opened++;
    }
    if (at < story.clicked && message.clicked_at === null) {
      await services.tracking.click(trackingToken(message, 'c'));
      outcome.clicked++;
    }
    const buys = at < story.ordered_after_click || (at >= story.clicked && at < story.clicked + story.ordered_after_open);
    if (!buys) continue;
    // At the moment of the engagement that earns it (both ends of the window count), read back as stored.
    const engaged = (await services.messages.get(workspaceId, message.id))[at < story.clicked ? 'clicked_at' : 'opened_at'];
    const item = story.items[index % story.items.length]!;
    orders.push({
      email: message.to,
      external_id: `${story.order_prefix}${String(index + 1).padStart(5, '0')}`,
      order_number: `${story.order_prefix}${index + 1}`,
      total_amount: Math.round(item.price * item.quantity * 100) / 100,
      currency: story.currency,
      status: 'paid',
      ordered_at: engaged,
      items: [item],
    });
  }
  if (orders.length > 0) {
    const synced = await services.orders.sync(workspaceId, { orders });
    const refused = synced.errors[0];
    if (refused) throw new FixtureError(`story: order ${JSON.stringify(orders[refused.index]?.external_id)}: ${refused.error}`);
    outcome.orders = synced.inserted;
  }
  return outcome;
}
