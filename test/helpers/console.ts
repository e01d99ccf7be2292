import type { Harness, TestWorkspace } from './harness.js';
import { sendingHelpers } from './sending.js';

/** A campaign name a stranger could choose: shown inert, never run. */
export const HOSTILE_NAME = '<script>alert("x")</script> Autumn & co';
export const CONSOLE_PASSWORD = 'correct horse battery';

export interface ConsoleShop {
  ws: TestWorkspace;
  email: string;
  password: string;
  campaignId: string;
  flowId: string;
  segmentId: string;
  messageId: string;
}

/**
 * A workspace with something on every console page: an owner who can sign in, three subscribers in a segment, a
 * sent campaign (hostile name) with an open, a click and an attributed order, and a live flow with one enrolment
 * waiting at its first step.
 */
export async function consoleShop(h: () => Harness, email = 'owner@example.com'): Promise<ConsoleShop> {
  const sending = sendingHelpers(h);
  const { api } = sending;
  const ws = await h().workspace('Console shop');
  const added = await h().services.users.add(ws.id, { email, role: 'owner' });
  await h().services.users.setPassword({ token: added.set_password_token, password: CONSOLE_PASSWORD });
  const contacts = [];
  for (const name of ['Ann', 'Bob', 'Cy']) contacts.push(await sending.contact(ws, 'subscribed', { first_name: name }, `${name.toLowerCase()}@example.com`));
  const segment = await api(ws, 'POST', '/segments', { name: 'Subscribers <b>all</b>', conditions: { all: [{ subscription_status: 'subscribed' }] } });
  if (segment.statusCode !== 201) throw new Error(segment.body);
  const campaignId = await sending.campaign(ws, {
    name: HOSTILE_NAME,
    subject: 'Autumn <i>favourites</i>',
    html: '<h1 style="color:#c2410c">Autumn favourites</h1><p>Hello {{ contact.first_name }}</p><a href="https://shop.test/p/1">Shop now</a>',
    segment_id: segment.json().id,
  });
  await api(ws, 'POST', `/campaigns/${campaignId}/send`);
  await sending.work();
  const [message] = await sending.messagesOf(ws, `campaign_id=${campaignId}&contact_id=${contacts[0]}`);
  const path = (url: string) => new URL(url).pathname;
  await h().request({ method: 'GET', url: path(/<img src="([^"]+)"/.exec(message!.html)![1]!) });
  await h().request({ method: 'GET', url: path(/href="([^"]+)"/.exec(message!.html)![1]!.replace(/&amp;/g, '&')) });
  const order = await h().request({
    method: 'POST',
    url: `/ecom/website/${ws.integrationId}`,
    headers: { authorization: `Bearer ${ws.integrationKey}` },
    json: { event_type: 'order_placed', external_id: 'c-1', email: 'ann@example.com', order: { external_id: 'c-1', total_amount: 42.5, currency: 'EUR', items: [] } },
  });
  if (order.statusCode !== 200) throw new Error(order.body);
  const flow = await api(ws, 'POST', '/flows', {
    name: 'Browse <abandon>',
    status: 'live',
    trigger: { type: 'event', event_name: 'product_viewed' },
    steps: [{ type: 'delay', minutes: 600 }, { type: 'email', subject: 'Still looking?', html: '<p>Come back</p>' }],
  });
  if (flow.statusCode !== 201) throw new Error(flow.body);
  await api(ws, 'POST', '/events', { contact_id: contacts[1], event_name: 'product_viewed' });
  await sending.work();
  return { ws, email, password: CONSOLE_PASSWORD, campaignId, flowId: flow.json().id, segmentId: segment.json().id, messageId: message!.id };
}
