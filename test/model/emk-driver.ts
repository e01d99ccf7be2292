import { createHmac } from 'node:crypto';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { inject } from 'vitest';
import { runDueJobs, workerOptionsFor } from '../../src/worker/worker.js';
import { runEmk } from '../helpers/cli.js';
import type { Harness, TestWorkspace } from '../helpers/harness.js';
import { isPlatformOperation, type Burst, type Operation, type Platform, type PlatformOperation, type SyncRow } from './operations.js';
import { PlatformPayloads } from './platform-payloads.js';
import { FLOWS, PLATFORM_DOMAINS, VISIT_EVENT, emailKey, type ImportAnswer } from './reference-model.js';
import { directOrderLine, reportWindows, revenueLine, type ContactView, type OrderView, type Snapshot } from './snapshot.js';

const PER_PAGE = 500;
const LINK = 'https://shop.test/spring';
const AB_METRICS = ['unique_opens', 'unique_clicks', 'revenue'] as const;
const cents = (amount: unknown) => Math.round(Number(amount) * 100);

interface SentMessage {
  id: string;
  openPath: string;
  clickPath: string;
}

/**
 * Applies the model's operations to a real emk through its HTTP routes (fastify inject) and its CLI, and reads
 * back what the model predicts. It keeps only the mapping from symbols to emk's ids, never emk's answers as truth.
 */
export class EmkDriver {
  /** Requests that failed (5xx, or an answer no rule allows): each is a discrepancy too. */
  readonly problems: string[] = [];
  private readonly contactIds = new Map<string, string>();
  private readonly contactKeys = new Map<string, string>();
  private readonly generations = new Map<string, number>();
  private readonly senderIds = new Map<string, string>();
  private readonly senderNames = new Map<string, string>();
  private readonly messages = new Map<string, SentMessage>();
  private readonly knownMessageIds = new Set<string>();
  private readonly tokens = new Map<string, string>();
  private readonly sent = new Set<string>();
  private readonly tmpDir: string;
  private cliFiles = 0;
  /** The workspace's Shopify and WooCommerce integrations: id and webhook secret. */
  private readonly integrations = new Map<Platform, { id: string; secret: string }>();
  private readonly payloads: PlatformPayloads;
  /** Platform delivery ids sent in earlier bursts: a copy now must be answered `duplicate`. */
  private readonly deliveredIds = new Set<string>();

  private constructor(
    private readonly h: Harness,
    private readonly ws: TestWorkspace,
    /** emk's clock at the run's start: model time 0. */
    private readonly start: number,
  ) {
    this.tmpDir = mkdtempSync(join(inject('tmpDir'), 'model-'));
    this.payloads = new PlatformPayloads((at) => this.start + at);
  }

  static async create(h: Harness): Promise<EmkDriver> {
    const driver = new EmkDriver(h, await h.workspace('Model shop'), h.clock());
    for (const [name, flow] of Object.entries(FLOWS)) {
      const reply = await driver.api('POST', '/flows', {
        name,
        status: 'live',
        trigger: { type: 'event', event_name: flow.event },
        steps: [{ type: 'email', subject: 'Hello', html: `<p>Hi</p><a href="${LINK}">Shop</a>` }],
        message_type: flow.marketing ? 'marketing' : 'transactional',
      });
      if (reply.statusCode !== 201) throw new Error(`flow: ${reply.body}`);
      driver.senderIds.set(name, reply.json().id);
      driver.senderNames.set(reply.json().id, name);
    }
    for (const platform of ['shopify', 'woocommerce'] as const) {
      const secret = `model-${platform}-secret`;
      const reply = await driver.api('POST', '/integrations', { platform, secret, shop_domain: PLATFORM_DOMAINS[platform] });
      if (reply.statusCode !== 201) throw new Error(`${platform} integration: ${reply.statusCode} ${reply.body}`);
      driver.integrations.set(platform, { id: reply.json().id, secret });
    }
    return driver;
  }

  private iso = (at: number) => new Date(this.start + at).toISOString();

  private api(method: 'GET' | 'POST' | 'PATCH' | 'DELETE', url: string, json?: unknown) {
    return this.h.request({ method, url: `/api/v1${url}`, key: this.ws.apiKey, ...(json === undefined ? {} : { json }) });
  }

  /** Every record of a management list. */
  private async all(url: string): Promise<Array<Record<string, any>>> {
    const out: Array<Record<string, any>> = [];
    for (let page = 1; ; page++) {
      const reply = await this.api('GET', `${url}${url.includes('?') ? '&' : '?'}perPage=${PER_PAGE}&page=${page}`);
      if (reply.statusCode !== 200) throw new Error(`GET ${url}: ${reply.statusCode} ${reply.body}`);
      const { data, meta } = reply.json();
      out.push(...data);
      if (data.length < PER_PAGE || out.length >= meta.total) return out;
    }
  }

  private expect(what: string, status: number, allowed: number[], body: string) {
    if (!allowed.includes(status)) this.problems.push(`${what} answered ${status}: ${body.slice(0, 300)}`);
  }

  /** The model key of an emk contact id; a contact id seen for the first time is the next generation of its email. */
  private keyOf(id: string, email: string): string {
    const known = this.contactKeys.get(id);
    if (known) return known;
    const k = emailKey(email);
    const generation = (this.generations.get(k) ?? 0) + 1;
    this.generations.set(k, generation);
    const key = `${k}#${generation}`;
    this.contactIds.set(key, id);
    this.contactKeys.set(id, key);
    return key;
  }

  /** Learns the ids of the contacts these addresses name now. */
  private async learnContacts(emails: string[]): Promise<void> {
    for (const address of new Set(emails.map(emailKey))) {
      const reply = await this.api('GET', `/contacts?email=${encodeURIComponent(address)}`);
      for (const c of reply.json().data ?? []) this.keyOf(c.id, c.email);
    }
  }

  /** Sends a burst; `expected`: the model's answers to its imports, one per operation. */
  async run(burst: Burst, expected: Array<ImportAnswer | void>): Promise<void> {
    this.h.clock.advance(burst.advanceMs);
    const answers = await Promise.all(burst.operations.map((op, i) => this.apply(op, expected[i])));
    const ops = burst.operations;
    this.checkDeliveryAnswers(ops, answers);
    if (ops.some((op) => op.kind === 'send-campaign' || op.kind === 'flow-trigger')) {
      const work = () => runDueJobs(workerOptionsFor(this.h.services, { onFailure: (job, error) => this.problems.push(`job ${job.kind}: ${String(error)}`), pollMs: 20 }));
      await work();
      const abCampaigns = ops.filter((op) => op.kind === 'send-campaign' && op.ab !== undefined);
      if (abCampaigns.length > 0) {
        // The model has a campaign reach everyone in its burst: the test's wait is cut short, so the winner goes now
        // (due by the harness's clock and the wall clock alike).
        await this.h.services.db.knex('jobs').where({ kind: 'campaign.ab_winner' }).update({ run_at: Math.min(Date.now(), this.h.clock()) });
        await work();
        for (const op of abCampaigns) await this.checkAbTest(op as Extract<Operation, { kind: 'send-campaign' }>);
      }
      for (const op of ops) {
        if (op.kind === 'send-campaign') await this.learnMessages(op.campaign, `campaign_id=${this.senderIds.get(op.campaign)}`);
        if (op.kind === 'flow-trigger' && this.contactIds.has(op.contact)) {
          await this.learnMessages(op.flow, `flow_id=${this.senderIds.get(op.flow)}&contact_id=${this.contactIds.get(op.contact)}`);
        }
      }
    }
    await this.learnContacts(ops.flatMap(emailsOf));
  }

  /**
   * An A/B campaign once its winner went: sent, the winner named, every message naming a variant, the test group
   * round(share × recipients) split evenly, everyone else given the winner.
   */
  private async checkAbTest(op: Extract<Operation, { kind: 'send-campaign' }>): Promise<void> {
    const id = this.senderIds.get(op.campaign);
    if (!id || !op.ab) return;
    const record = (await this.api('GET', `/campaigns/${id}`)).json();
    const winner = record.ab_test?.winner;
    if (record.status !== 'sent' || typeof winner !== 'number') return void this.problems.push(`${op.campaign}: A/B test ended ${record.status}, winner ${winner}`);
    const counts = Array.from({ length: op.ab.variants }, () => 0);
    const messages = await this.all(`/messages?campaign_id=${id}`);
    for (const m of messages) counts[m.variant] = (counts[m.variant] ?? 0) + 1;
    const test = op.ab.testShare >= 1 ? messages.length : Math.round(op.ab.testShare * messages.length);
    const expected = counts.map((_, i) => Math.floor(test / op.ab!.variants) + (i < test % op.ab!.variants ? 1 : 0) + (i === winner ? messages.length - test : 0));
    if (counts.length !== op.ab.variants || counts.join() !== expected.join()) {
      this.problems.push(`${op.campaign}: messages per variant ${JSON.stringify(counts)}, expected ${JSON.stringify(expected)} (winner ${winner})`);
    }
  }

  /** Names new messages `<sender>/<contact key>/<n>`, in the order they were created. */
  private async learnMessages(sender: string, query: string): Promise<void> {
    const fresh = (await this.all(`/messages?${query}`)).filter((m) => !this.knownMessageIds.has(m.id));
    fresh.sort((a, b) => (a.created_at < b.created_at ? -1 : a.created_at > b.created_at ? 1 : a.id < b.id ? -1 : 1));
    for (const m of fresh) {
      this.knownMessageIds.add(m.id);
      const contact = this.contactKeys.get(m.contact_id) ?? `unknown:${m.contact_id}`;
      let n = 1;
      while (this.messages.has(`${sender}/${contact}/${n}`)) n++;
      const path = (pattern: RegExp) => new URL(pattern.exec(m.html)![1]!.replace(/&amp;/g, '&')).pathname;
      this.messages.set(`${sender}/${contact}/${n}`, { id: m.id, openPath: path(/<img src="([^"]+\/t\/o\/[^"]+)"/), clickPath: path(/href="([^"]+\/t\/c\/[^"]+)"/) });
    }
  }

  private webhookBody(op: Extract<Operation, { kind: 'webhook-order' }>): Record<string, unknown> {
    const o = op.order;
    const body: Record<string, unknown> = { event_type: op.eventType };
    if (op.email !== undefined) body.email = op.email;
    if (op.token !== undefined) body.identity_token = this.tokens.get(op.token) ?? 'forged-token-that-is-not-ours';
    if (op.eventId !== undefined) body[op.idField ?? 'external_id'] = op.eventId;
    if (o === null) return body;
    const order: Record<string, unknown> = { external_id: o.externalId };
    if (o.total !== undefined) order.total_amount = o.total / 100;
    if (o.currency !== undefined) order.currency = o.currency;
    if (o.status !== undefined) order.status = o.status;
    if (o.orderedAt !== undefined) order.ordered_at = o.plainTime ? this.iso(o.orderedAt).slice(0, 19).replace('T', ' ') : this.iso(o.orderedAt);
    if (o.refundAmount !== undefined) order.refund_amount = o.refundAmount / 100;
    if (o.refundedAmount !== undefined) order.refunded_amount = o.refundedAmount / 100;
    body.order = order;
    return body;
  }

  private async webhook(body: Record<string, unknown>): Promise<void> {
    const reply = await this.h.request({
      method: 'POST',
      url: `/ecom/website/${this.ws.integrationId}`,
      headers: { authorization: `Bearer ${this.ws.integrationKey}` },
      json: body,
    });
    this.expect(`webhook ${body.event_type}`, reply.statusCode, [200], reply.body);
  }

  private syncRow = (row: SyncRow) => ({
    email: row.email,
    external_id: row.externalId,
    order_number: row.externalId,
    total_amount: row.total / 100,
    currency: row.currency,
    status: row.status,
    ordered_at: this.iso(row.orderedAt),
  });

  /** An import's refused rows: as many as the model refuses, each for the one reason the model refuses it for. */
  private checkRefused(what: string, errors: Array<{ error: string }>, expected: ImportAnswer, reason: string): void {
    if (errors.length !== expected.refused || errors.some((e) => e.error !== reason)) {
      this.problems.push(`${what} refused ${errors.length} rows (${JSON.stringify(errors.slice(0, 5))}), expected ${expected.refused} (${reason})`);
    }
  }

  /**
   * An import through the CLI, a process of its own on the same database: its exit code is the model's (docs/cli.md,
   * exit codes of an import), and its `--json` summary, printed whatever the exit code, refuses the model's rows.
   */
  private async cliImport(args: string[], rows: unknown[], expected: ImportAnswer, reason: string): Promise<void> {
    const file = join(this.tmpDir, `import-${++this.cliFiles}.jsonl`);
    writeFileSync(file, rows.map((row) => JSON.stringify(row)).join('\n') + '\n');
    const what = `emk ${args.join(' ')}`;
    const result = await runEmk([...args, '--db', this.h.database.url, '--workspace', this.ws.id, '--file', file, '--json', '--no-migrate']);
    if (result.code !== expected.exitCode) {
      this.problems.push(`${what} exited ${result.code}, expected ${expected.exitCode} (${expected.refused} of ${rows.length} rows refused): ${result.stderr.slice(0, 300)}`);
    }
    let summary: { errors: Array<{ error: string }> };
    try {
      summary = JSON.parse(result.stdout);
    } catch {
      return void this.problems.push(`${what} printed no JSON summary: ${result.stdout.slice(0, 300)} ${result.stderr.slice(0, 300)}`);
    }
    this.checkRefused(what, summary.errors, expected, reason);
  }

  /**
   * A platform delivery id is processed once: a copy sent in an earlier burst is a `duplicate`, and of the copies
   * sent together exactly one is `processed`. Deliveries without an id are processed each time.
   */
  private checkDeliveryAnswers(ops: Operation[], answers: Array<string | void>): void {
    const processed = new Map<string, number>();
    ops.forEach((op, i) => {
      const status = answers[i];
      if (!isPlatformOperation(op) || status === undefined) return;
      const what = `${describeDelivery(op)} answered ${status}`;
      if (op.deliveryId === null) {
        if (status !== 'processed') this.problems.push(`${what}, expected processed (no delivery id)`);
      } else if (this.deliveredIds.has(op.deliveryId)) {
        if (status !== 'duplicate') this.problems.push(`${what}, expected duplicate (sent in an earlier burst)`);
      } else processed.set(op.deliveryId, (processed.get(op.deliveryId) ?? 0) + (status === 'processed' ? 1 : 0));
    });
    for (const [id, count] of processed) {
      this.deliveredIds.add(id);
      if (count !== 1) this.problems.push(`delivery ${id}: ${count} of its copies in one burst were processed, expected 1`);
    }
  }

  /** Posts a platform delivery, signed as the platform signs it (base64 HMAC-SHA256 of the exact body). Its answer's `status`. */
  private async deliver(op: PlatformOperation): Promise<string | undefined> {
    const delivery = this.payloads.delivery(op, this.h.clock());
    const integration = this.integrations.get(delivery.platform)!;
    const raw = JSON.stringify(delivery.body);
    const signature = createHmac('sha256', integration.secret).update(raw, 'utf8').digest('base64');
    const reply = await this.h.request({
      method: 'POST',
      url: `/ecom/${delivery.platform}/${integration.id}`,
      headers: {
        ...delivery.headers,
        'content-type': 'application/json',
        [delivery.platform === 'shopify' ? 'x-shopify-hmac-sha256' : 'x-wc-webhook-signature']: signature,
      },
      payload: raw,
    });
    this.expect(describeDelivery(op), reply.statusCode, [200], reply.body);
    if (reply.statusCode !== 200) return undefined;
    const { status, topic } = reply.json();
    if (topic !== delivery.topic) this.problems.push(`${describeDelivery(op)} answered topic ${JSON.stringify(topic)}`);
    return status;
  }

  private async apply(op: Operation, expected: ImportAnswer | void): Promise<string | void> {
    switch (op.kind) {
      case 'platform-order':
      case 'platform-refund':
      case 'platform-order-deleted':
      case 'platform-customer':
        return this.deliver(op);
      case 'webhook-order':
        return this.webhook(this.webhookBody(op));
      case 'webhook-customer':
        return this.webhook({ event_type: 'customer_updated', email: op.email, external_id: op.eventId, properties: { seen: true } });
      case 'direct-order': {
        const id = this.contactIds.get(op.contact) ?? 'no-such-contact';
        const reply = await this.api('POST', '/ecommerce/orders', {
          contact_id: id,
          platform: 'pos',
          order_number: 'D',
          total_amount: op.total / 100,
          currency: op.currency,
          status: 'paid',
          ordered_at: this.iso(op.orderedAt),
          ...(op.externalId ? { external_id: op.externalId } : {}),
        });
        this.expect('direct order', reply.statusCode, [201, 404], reply.body);
        return;
      }
      case 'sync': {
        // A sync row is refused only for the contact limit (the model then stores nothing for it).
        const rows = op.rows.map(this.syncRow);
        if (op.via === 'cli') return this.cliImport(['sync-orders'], rows, expected!, 'contact limit reached');
        const reply = await this.api('POST', '/ecommerce/sync-historical-orders', { orders: rows });
        this.expect('sync', reply.statusCode, [200], reply.body);
        if (reply.statusCode === 200) this.checkRefused('sync', reply.json().errors, expected!, 'contact limit reached');
        return;
      }
      case 'identify': {
        const reply = await this.h.request({ method: 'POST', url: '/collect/identify', json: { site_id: this.ws.siteId, email: op.email, ...(op.anonymousId ? { anonymous_id: op.anonymousId } : {}) } });
        this.expect('identify', reply.statusCode, [200, 403], reply.body);
        return;
      }
      case 'anonymous-visit': {
        const reply = await this.h.request({ method: 'POST', url: '/collect/event', json: { site_id: this.ws.siteId, event_name: VISIT_EVENT, anonymous_id: op.anonymousId } });
        this.expect('collect event', reply.statusCode, [200], reply.body);
        return;
      }
      case 'event-batch': {
        // An event of an address without a live contact is refused; none is made for it.
        const rows = op.emails.map((email) => ({ email, event_name: VISIT_EVENT }));
        if (op.via === 'cli') return this.cliImport(['events', 'import'], rows, expected!, 'contact not found');
        const reply = await this.api('POST', '/events/batch', { events: rows });
        this.expect('POST /events/batch', reply.statusCode, [200], reply.body);
        if (reply.statusCode === 200) this.checkRefused('POST /events/batch', reply.json().errors, expected!, 'contact not found');
        return;
      }
      case 'upsert-contact': {
        const reply = await this.api('POST', '/contacts', { email: op.email, ...(op.status ? { subscription_status: op.status } : {}) });
        this.expect('POST /contacts', reply.statusCode, [200, 201, 403], reply.body);
        return;
      }
      case 'set-status': {
        const reply = await this.api('PATCH', `/contacts/${this.contactIds.get(op.contact) ?? 'no-such-contact'}`, { subscription_status: op.status });
        this.expect('PATCH /contacts', reply.statusCode, [200, 404], reply.body);
        return;
      }
      case 'erase': {
        const id = this.contactIds.get(op.contact);
        if (id === undefined) return void this.problems.push(`erase: emk has no contact ${op.contact}`);
        const reply = await this.api('DELETE', `/contacts/${id}`);
        this.expect('DELETE /contacts', reply.statusCode, [204], reply.body);
        return;
      }
      case 'send-campaign': {
        const ab = op.ab && {
          // Even variants change the subject, odd ones the body too: every variant's mail has the tracked link.
          variants: Array.from({ length: op.ab.variants }, (_, i) => (i % 2 === 0 ? { subject: `Sale ${i}` } : { subject: `Sale ${i}`, html: `<p>Sale ${i}</p><a href="${LINK}">Shop</a>` })),
          ab_test: { test_share: op.ab.testShare, metric: AB_METRICS[this.sent.size % AB_METRICS.length], wait_minutes: 1 },
        };
        const created = await this.api('POST', '/campaigns', { name: op.campaign, subject: 'Sale', html: `<p>Sale</p><a href="${LINK}">Shop</a>`, ...ab });
        if (created.statusCode !== 201) return void this.problems.push(`campaign: ${created.body}`);
        this.senderIds.set(op.campaign, created.json().id);
        this.senderNames.set(created.json().id, op.campaign);
        this.sent.add(op.campaign);
        const send = await this.api('POST', `/campaigns/${created.json().id}/send`);
        this.expect('campaign send', send.statusCode, [200, 202], send.body);
        return;
      }
      case 'flow-trigger': {
        const reply = await this.api('POST', '/events', {
          contact_id: this.contactIds.get(op.contact) ?? 'no-such-contact',
          event_name: FLOWS[op.flow as keyof typeof FLOWS].event,
        });
        this.expect('POST /events', reply.statusCode, [201, 404], reply.body);
        return;
      }
      case 'open':
      case 'click': {
        const message = this.messages.get(op.message);
        // A message emk never sent: the recipients comparison tells why.
        if (!message) return;
        const reply = await this.h.request({ method: 'GET', url: op.kind === 'open' ? message.openPath : message.clickPath });
        // A click of an erased contact's message is a 404 (its message is gone: no open redirect, docs/email.md).
        this.expect(op.kind, reply.statusCode, op.kind === 'open' ? [200] : [302, 404], reply.body);
        if (op.kind === 'click' && reply.statusCode === 302) {
          const token = new URL(String(reply.headers.location)).searchParams.get('_ir_id');
          if (token) this.tokens.set(op.message, token);
        }
        return;
      }
      case 'windows': {
        const reply = await this.api('PATCH', '/settings', { click_window_days: op.clickDays, open_window_days: op.openDays });
        this.expect('PATCH /settings', reply.statusCode, [200], reply.body);
        return;
      }
      case 'contact-limit': {
        const reply = await this.api('PATCH', '/settings', { contact_limit: op.limit });
        this.expect('PATCH /settings', reply.statusCode, [200], reply.body);
        return;
      }
    }
  }

  /** What emk answers now, in the model's terms. `now`: model time, for the report windows. */
  async observe(now: number): Promise<Snapshot> {
    const contacts: Record<string, ContactView> = {};
    const visits = new Map<string | null, number>();
    for (const e of await this.all(`/events?event_name=${VISIT_EVENT}`)) visits.set(e.contact_id ?? null, (visits.get(e.contact_id ?? null) ?? 0) + 1);
    for (const c of await this.all('/contacts')) {
      contacts[this.keyOf(c.id, c.email)] = {
        email: c.email,
        status: c.subscription_status,
        source: c.source,
        anonymousIds: [...c.anonymous_ids].sort(),
        revenue: cents(c.lifetime_revenue),
        orders: c.orders_count,
        visits: visits.get(c.id) ?? 0,
      };
    }
    const senderOf = (o: Record<string, any>): string | null => {
      const id = o.attributed_campaign_id ?? o.attributed_flow_id;
      return id ? (this.senderNames.get(id) ?? `unknown:${id}`) : null;
    };
    const orders: Record<string, OrderView> = {};
    const directOrders: string[] = [];
    for (const o of await this.all('/ecommerce/orders')) {
      const owner = o.contact_id === null ? null : (this.contactKeys.get(o.contact_id) ?? `unknown:${o.contact_id}`);
      const orderedAt = Date.parse(o.ordered_at) - this.start;
      if (o.platform === 'pos') {
        directOrders.push(directOrderLine(owner ?? '(none)', o.external_id, cents(o.total_amount), o.currency, orderedAt, senderOf(o)));
        continue;
      }
      const view: OrderView = {
        owner,
        total: cents(o.total_amount),
        refunded: cents(o.refunded_amount),
        cancelled: o.cancelled_at !== null,
        currency: o.currency,
        orderedAt,
        platform: o.platform,
        credit: senderOf(o),
        ...(o.platform === 'shopify' || o.platform === 'woocommerce' ? { status: o.status, orderNumber: o.order_number } : {}),
        ...(o.presentment_currency !== null ? { presentmentCurrency: o.presentment_currency, presentmentTotal: cents(o.presentment_total_amount) } : {}),
      };
      let key = o.external_id;
      while (key in orders) key += ' (again)';
      orders[key] = view;
    }
    const senderReports: Snapshot['senderReports'] = {};
    for (const sender of [...this.sent, ...Object.keys(FLOWS)]) {
      const path = sender.startsWith('flow:') ? 'flows' : 'campaigns';
      const report = (await this.api('GET', `/${path}/${this.senderIds.get(sender)}/report`)).json();
      senderReports[sender] = { orders: report.orders, revenue: cents(report.revenue) };
      // An A/B campaign's orders count once: its revenue is its variants' sum.
      const variantsRevenue = (report.variants ?? []).reduce((sum: number, v: { revenue: number }) => sum + cents(v.revenue), 0);
      if (report.variants && variantsRevenue !== cents(report.revenue)) this.problems.push(`${sender}: revenue ${report.revenue}, its variants' sum ${variantsRevenue / 100}`);
    }
    const revenueReport: string[] = [];
    for (const w of reportWindows(now)) {
      const reply = await this.api('GET', `/reports/revenue?from=${encodeURIComponent(this.iso(w.from))}&to=${encodeURIComponent(this.iso(w.to))}`);
      const { data, total } = reply.json();
      for (const row of data) {
        const sender = this.senderNames.get(row.campaign_id ?? row.flow_id) ?? `unknown:${row.campaign_id ?? row.flow_id}`;
        revenueReport.push(revenueLine(w.name, sender, row.currency, row.orders, cents(row.revenue)));
      }
      for (const row of total) revenueReport.push(revenueLine(w.name, 'total', row.currency, row.orders, cents(row.revenue)));
    }
    const recipients: Snapshot['recipients'] = {};
    for (const campaign of this.sent) recipients[campaign] = (await this.api('GET', `/campaigns/${this.senderIds.get(campaign)}`)).json().recipients;
    return {
      contacts,
      orders,
      directOrders: directOrders.sort(),
      senderReports,
      revenueReport: revenueReport.sort(),
      recipients,
      anonymousVisits: visits.get(null) ?? 0,
    };
  }
}

/** The addresses an operation names (their contacts may be new). */
function emailsOf(op: Operation): string[] {
  switch (op.kind) {
    case 'webhook-order':
      return op.email !== undefined && op.order !== null && op.order.externalId !== '' ? [op.email] : [];
    case 'webhook-customer':
    case 'identify':
    case 'upsert-contact':
    case 'platform-order':
    case 'platform-customer':
      return op.email === null ? [] : [op.email];
    case 'sync':
      return op.rows.map((row) => row.email);
    default:
      return [];
  }
}

function describeDelivery(op: PlatformOperation): string {
  const [platform, topic] =
    op.kind === 'platform-refund' ? ['shopify', 'refunds/create']
    : op.kind === 'platform-order-deleted' ? ['woocommerce', 'order.deleted']
    : [op.platform, op.topic];
  return `${platform} ${topic} delivery ${op.deliveryId ?? '(none)'}`;
}
