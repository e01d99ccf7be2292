import { runDueJobs, workerOptionsFor } from '../../src/worker/worker.js';
import type { Harness, TestWorkspace } from './harness.js';

/** What tests of the sending half share: contacts, a campaign, its send, and the worker run to the end. */
export function sendingHelpers(h: () => Harness) {
  const api = (ws: TestWorkspace, method: 'GET' | 'POST' | 'PUT' | 'PATCH' | 'DELETE', url: string, json?: unknown) =>
    h().request({ method, url: `/api/v1${url}`, key: ws.apiKey, ...(json === undefined ? {} : { json }) });

  const work = () => runDueJobs(workerOptionsFor(h().services, { onFailure: () => {}, pollMs: 50 }));
  const messagesOf = async (ws: TestWorkspace, query: string) =>
    (await api(ws, 'GET', `/messages?perPage=500&${query}`)).json().data as Array<Record<string, any>>;

  let contactCount = 0;
  return {
    api,
    /** A contact with this status (and properties); its id. */
    async contact(ws: TestWorkspace, status: string, properties: Record<string, unknown> = {}, email?: string): Promise<string> {
      const address = email ?? `person${++contactCount}.${status}@example.com`;
      const reply = await api(ws, 'POST', '/contacts', { email: address, subscription_status: status, properties });
      if (reply.statusCode >= 300) throw new Error(reply.body);
      return reply.json().id;
    },
    async campaign(ws: TestWorkspace, fields: Record<string, unknown> = {}): Promise<string> {
      const reply = await api(ws, 'POST', '/campaigns', { name: 'Spring sale', subject: 'Hi {{ contact.first_name }}', html: '<p>Hello {{ contact.first_name }}</p>', ...fields });
      if (reply.statusCode !== 201) throw new Error(reply.body);
      return reply.json().id;
    },
    /** Runs every due job (and what they enqueue) in this process, as `emk worker --once` does. */
    work,
    messagesOf,
    /** A captured campaign message (with the links of `html`) to one new subscriber. */
    async sentMessage(ws: TestWorkspace, html: string) {
      const email = `reader${Math.random().toString(36).slice(2)}@example.com`;
      const contactId = await this.contact(ws, 'subscribed', { first_name: 'Reader' }, email);
      const campaignId = await this.campaign(ws, { name: `Campaign ${email}`, html });
      await api(ws, 'POST', `/campaigns/${campaignId}/send`);
      await work();
      // Earlier subscribers of the workspace get the campaign too: take this reader's message.
      const [message] = await messagesOf(ws, `campaign_id=${campaignId}&contact_id=${contactId}`);
      return { email, contactId, campaignId, message: message! };
    },
  };
}
