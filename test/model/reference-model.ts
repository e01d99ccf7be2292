import { DAY_MS, type Operation, type SubscriptionStatus, type SyncRow, type WebhookOrder } from './operations.js';
import { directOrderLine, reportWindows, revenueLine, type ContactView, type OrderView, type Snapshot } from './snapshot.js';

/**
 * What the spec, the contract and docs/ say emk does with money and identity, in plain TypeScript: no database,
 * no emk code. docs/model-test.md lists its decisions where the spec is silent.
 */

/** The domain of the Website integration the driver's workspace is created with. */
export const SHOP_DOMAIN = 'shop.test';
/** Flows the driver creates: one marketing flow (subscribed contacts only), one transactional. */
export const FLOWS = { 'flow:1': { event: 'model_nudge', marketing: true }, 'flow:2': { event: 'model_receipt', marketing: false } } as const;
export type FlowName = keyof typeof FLOWS;
/** The custom event anonymous visits are recorded as. */
export const VISIT_EVENT = 'model_visit';

export const emailKey = (email: string) => email.trim().toLowerCase();

interface ModelContact {
  key: string;
  email: string;
  status: SubscriptionStatus;
  source: string;
  anonymousIds: Set<string>;
  visits: number;
  erased: boolean;
}

/** An upserted order as the model keeps it: what emk must show. */
type ModelOrder = OrderView;

interface DirectOrder {
  owner: string;
  externalId: string | null;
  total: number;
  currency: string;
  orderedAt: number;
}

interface Engagement {
  at: number;
  kind: 'open' | 'click';
  sender: string;
}

interface Message {
  sender: string;
  contact: string;
}

/** An order's total and what was refunded of it: never less than nothing, never more than the total. */
function setTotal(order: ModelOrder, total: number, refunded: number): void {
  order.total = total;
  order.refunded = Math.min(Math.max(refunded, 0), total);
}

export class ReferenceModel {
  /** Milliseconds since the run's start: what emk's clock reads, minus its start. */
  now = 0;
  clickDays = 5;
  openDays = 3;
  /** The workspace's `contact_limit` on live contacts; null: none. */
  contactLimit: number | null = null;
  readonly contacts = new Map<string, ModelContact>();
  /** Email key → the live contact's model key. */
  readonly liveByEmail = new Map<string, string>();
  private readonly generations = new Map<string, number>();
  readonly orders = new Map<string, ModelOrder>();
  readonly directOrders: DirectOrder[] = [];
  private readonly engagements = new Map<string, Engagement[]>();
  readonly messages = new Map<string, Message>();
  /** Identity tokens minted by clicks: the clicked message → its contact. */
  readonly tokens = new Map<string, string>();
  /** Webhook retry keys seen: `<event_type>|<key>`. */
  private readonly retryKeys = new Set<string>();
  private readonly anonymousOwners = new Map<string, string>();

  /** The contact that claimed an anonymous id, while it lives (an erasure frees the id). */
  ownerOfAnonymous(anonymousId: string): string | undefined {
    return this.anonymousOwners.get(anonymousId);
  }
  private readonly anonymousVisits = new Map<string, number>();
  readonly recipients = new Map<string, number>();
  readonly campaignsSent = new Set<string>();

  isLive = (contact: string) => this.contacts.get(contact)?.erased === false;
  liveContacts = () => [...this.contacts.values()].filter((c) => !c.erased);
  /** The live contact of an email, if any. */
  contactOf = (email: string) => this.liveByEmail.get(emailKey(email));
  engagementsOf = (contact: string): readonly Engagement[] => this.engagements.get(contact) ?? [];

  /**
   * Reconcile by email: an existing contact never changes status here; a new one takes the writer's status and
   * source, unless the workspace's contact limit is reached (undefined then).
   */
  private ensureContact(email: string, status: SubscriptionStatus, source: string): string | undefined {
    const k = emailKey(email);
    const live = this.liveByEmail.get(k);
    if (live) return live;
    if (this.contactLimit !== null && this.liveByEmail.size >= this.contactLimit) return undefined;
    const generation = (this.generations.get(k) ?? 0) + 1;
    this.generations.set(k, generation);
    const key = `${k}#${generation}`;
    this.contacts.set(key, { key, email: email.trim(), status, source, anonymousIds: new Set(), visits: 0, erased: false });
    this.liveByEmail.set(k, key);
    return key;
  }

  /** Last touch: the latest click within the click window up to `orderedAt`, else the latest open within the open window. */
  private attribute(contact: string, orderedAt: number): string | null {
    const touches = this.engagements.get(contact) ?? [];
    for (const [kind, days] of [['click', this.clickDays], ['open', this.openDays]] as const) {
      const inWindow = touches.filter((e) => e.kind === kind && e.at <= orderedAt && e.at >= orderedAt - days * DAY_MS);
      if (inWindow.length > 0) return inWindow.reduce((a, b) => (b.at >= a.at ? b : a)).sender;
    }
    return null;
  }

  private createOrder(externalId: string, owner: string, fields: Omit<ModelOrder, 'owner' | 'credit'>): void {
    this.orders.set(externalId, { owner, ...fields, credit: this.attribute(owner, fields.orderedAt) });
  }

  private webhookOrder(op: Extract<Operation, { kind: 'webhook-order' }>): void {
    const o: WebhookOrder | null = op.order;
    const key = op.eventId !== undefined ? String(op.eventId).trim() : o && o.externalId !== '' ? o.externalId : null;
    if (key !== null) {
      const retryKey = `${op.eventType}|${key}`;
      if (this.retryKeys.has(retryKey)) return;
      this.retryKeys.add(retryKey);
    }
    // Rule 3: without an order nothing is stored, not even a contact.
    if (o === null || o.externalId === '') return;
    let owner: string | undefined;
    if (op.email !== undefined) owner = this.ensureContact(op.email, 'subscribed', `website:${SHOP_DOMAIN}`);
    else if (op.token !== undefined) {
      const named = this.tokens.get(op.token);
      owner = named !== undefined && this.isLive(named) ? named : undefined;
    }
    if (owner === undefined) return; // rule 5
    const existing = this.orders.get(o.externalId);
    if (!existing) {
      if (o.total === undefined) return;
      if (o.orderedAt === undefined) throw new Error('the generator always sends ordered_at for a new order');
      this.createOrder(o.externalId, owner, {
        total: o.total,
        currency: o.currency ?? '',
        orderedAt: o.orderedAt,
        platform: 'website',
        cancelled: op.eventType === 'cancelled_order',
        refunded: op.eventType === 'refunded_order' ? Math.min(o.refundedAmount ?? o.refundAmount ?? o.total, o.total) : 0,
      });
      return;
    }
    // Rule 6: an existing order keeps its owner; it is updated in place and never re-attributed.
    const total = o.total ?? existing.total;
    if (o.currency !== undefined) existing.currency = o.currency;
    if (op.eventType === 'cancelled_order') existing.cancelled = true;
    const refunded =
      op.eventType !== 'refunded_order' ? existing.refunded
      : o.refundedAmount ?? (o.refundAmount !== undefined ? existing.refunded + o.refundAmount : total);
    setTotal(existing, total, refunded);
  }

  private sync(rows: SyncRow[]): void {
    // New contacts are made in email-key order (what decides who gets the last places under a contact limit).
    const byKey = new Map<string, string>();
    for (const row of rows) if (!byKey.has(emailKey(row.email))) byKey.set(emailKey(row.email), row.email);
    for (const k of [...byKey.keys()].sort()) this.ensureContact(byKey.get(k)!, 'non_subscribed', 'sync');
    rows.forEach((row) => {
      const owner = this.contactOf(row.email);
      if (owner === undefined) return; // refused: contact limit reached
      const existing = this.orders.get(row.externalId);
      if (existing) {
        setTotal(existing, row.total, existing.refunded);
        existing.currency = row.currency;
      } else {
        this.createOrder(row.externalId, owner, {
          total: row.total,
          currency: row.currency,
          orderedAt: row.orderedAt,
          platform: 'sync',
          cancelled: false,
          refunded: 0,
        });
      }
    });
  }

  private identify(email: string, anonymousId: string | undefined): void {
    const contact = this.ensureContact(email, 'non_subscribed', 'collect');
    if (contact === undefined) return;
    // An anonymous id belongs to the first contact that identifies with it; its visits come along.
    if (anonymousId === undefined || this.anonymousOwners.has(anonymousId)) return;
    this.anonymousOwners.set(anonymousId, contact);
    const c = this.contacts.get(contact)!;
    c.anonymousIds.add(anonymousId);
    c.visits += this.anonymousVisits.get(anonymousId) ?? 0;
    this.anonymousVisits.delete(anonymousId);
  }

  private erase(contact: string): void {
    const c = this.contacts.get(contact);
    if (!c || c.erased) return;
    c.erased = true;
    this.liveByEmail.delete(emailKey(c.email));
    for (const id of c.anonymousIds) this.anonymousOwners.delete(id);
    // Its events, messages and engagements go; its orders stay on the tombstone.
    this.engagements.delete(contact);
  }

  private message(sender: string, contact: string): void {
    let n = 1;
    while (this.messages.has(`${sender}/${contact}/${n}`)) n++;
    this.messages.set(`${sender}/${contact}/${n}`, { sender, contact });
  }

  /** The contact a message was sent to, while its contact lives (erasure deletes the messages). */
  liveMessage(id: string): Message | null {
    const message = this.messages.get(id);
    return message && this.isLive(message.contact) ? message : null;
  }

  advance(ms: number): void {
    this.now += ms;
  }

  apply(op: Operation): void {
    switch (op.kind) {
      case 'webhook-order':
        return this.webhookOrder(op);
      case 'webhook-customer': {
        const retryKey = `customer_updated|${op.eventId}`;
        if (this.retryKeys.has(retryKey)) return;
        this.retryKeys.add(retryKey);
        this.ensureContact(op.email, 'subscribed', `website:${SHOP_DOMAIN}`);
        return;
      }
      case 'direct-order':
        // No dedupe, no attribution; an unknown (or erased) contact is a 404.
        if (this.isLive(op.contact)) {
          this.directOrders.push({ owner: op.contact, externalId: op.externalId ?? null, total: op.total, currency: op.currency, orderedAt: op.orderedAt });
        }
        return;
      case 'sync':
        return this.sync(op.rows);
      case 'identify':
        return this.identify(op.email, op.anonymousId);
      case 'anonymous-visit': {
        const owner = this.anonymousOwners.get(op.anonymousId);
        if (owner !== undefined) this.contacts.get(owner)!.visits++;
        else this.anonymousVisits.set(op.anonymousId, (this.anonymousVisits.get(op.anonymousId) ?? 0) + 1);
        return;
      }
      case 'event-batch':
        // Matched case-insensitively to live contacts; an unknown email is a row error, never a new contact.
        for (const email of op.emails) {
          const owner = this.contactOf(email);
          if (owner !== undefined) this.contacts.get(owner)!.visits++;
        }
        return;
      case 'upsert-contact':
        this.ensureContact(op.email, op.status ?? 'non_subscribed', 'api');
        return;
      case 'set-status':
        if (this.isLive(op.contact)) this.contacts.get(op.contact)!.status = op.status;
        return;
      case 'erase':
        return this.erase(op.contact);
      case 'send-campaign': {
        const recipients = this.liveContacts().filter((c) => c.status === 'subscribed');
        for (const c of recipients) this.message(op.campaign, c.key);
        this.recipients.set(op.campaign, recipients.length);
        this.campaignsSent.add(op.campaign);
        return;
      }
      case 'flow-trigger': {
        const c = this.contacts.get(op.contact);
        if (!c || c.erased) return;
        if (!FLOWS[op.flow as FlowName].marketing || c.status === 'subscribed') this.message(op.flow, c.key);
        return;
      }
      case 'open':
      case 'click': {
        const message = this.liveMessage(op.message);
        if (!message) return;
        const list = this.engagements.get(message.contact) ?? [];
        list.push({ at: this.now, kind: op.kind, sender: message.sender });
        this.engagements.set(message.contact, list);
        if (op.kind === 'click') this.tokens.set(op.message, message.contact);
        return;
      }
      case 'windows':
        this.clickDays = op.clickDays;
        this.openDays = op.openDays;
        return;
      case 'contact-limit':
        this.contactLimit = op.limit;
        return;
    }
  }

  /** What emk must answer now. */
  snapshot(): Snapshot {
    const net = (o: { total: number; refunded: number; cancelled: boolean }) => (o.cancelled ? 0 : o.total - o.refunded);
    const contacts: Record<string, ContactView> = {};
    for (const c of this.liveContacts()) {
      contacts[c.key] = {
        email: c.email,
        status: c.status,
        source: c.source,
        anonymousIds: [...c.anonymousIds].sort(),
        revenue: 0,
        orders: 0,
        visits: c.visits,
      };
    }
    const count = (owner: string, revenue: number) => {
      const view = contacts[owner];
      if (!view) return;
      view.revenue += revenue;
      view.orders += 1;
    };
    const orders: Record<string, OrderView> = {};
    const senderReports: Record<string, { orders: number; revenue: number }> = {};
    for (const sender of [...this.campaignsSent, ...Object.keys(FLOWS)]) senderReports[sender] = { orders: 0, revenue: 0 };
    const revenueRows = new Map<string, { orders: number; revenue: number }>();
    const windows = reportWindows(this.now);
    for (const [externalId, o] of this.orders) {
      orders[externalId] = { ...o };
      count(o.owner, net(o));
      if (o.credit === null) continue;
      const report = (senderReports[o.credit] ??= { orders: 0, revenue: 0 });
      report.orders++;
      report.revenue += net(o);
      for (const w of windows) {
        if (o.orderedAt < w.from || o.orderedAt >= w.to) continue;
        const key = `${w.name}\u0000${o.credit}\u0000${o.currency}`;
        const row = revenueRows.get(key) ?? { orders: 0, revenue: 0 };
        row.orders++;
        row.revenue += net(o);
        revenueRows.set(key, row);
      }
    }
    for (const o of this.directOrders) count(o.owner, o.total);
    return {
      contacts,
      orders,
      directOrders: this.directOrders.map((o) => directOrderLine(o.owner, o.externalId, o.total, o.currency, o.orderedAt, null)).sort(),
      senderReports,
      revenueReport: [...revenueRows].map(([key, row]) => {
        const [window, sender, currency] = key.split('\u0000') as [string, string, string];
        return revenueLine(window, sender, currency, row.orders, row.revenue);
      }).sort(),
      recipients: Object.fromEntries(this.recipients),
      anonymousVisits: [...this.anonymousVisits.values()].reduce((a, b) => a + b, 0),
    };
  }
}
