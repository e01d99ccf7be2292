import {
  DAY_MS,
  type ContactlessBuyer,
  type Operation,
  type Platform,
  type PlatformOperation,
  type PlatformOrderSnapshot,
  type ShopifyConsentState,
  type SubscriptionStatus,
  type SyncRow,
  type WebhookOrder,
} from './operations.js';
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

/** The shops of the driver's Shopify and WooCommerce integrations (`shop_domain`). */
export const PLATFORM_DOMAINS: Record<Platform, string> = { shopify: 'model-shop.myshopify.com', woocommerce: 'woo.model.test' };
/** The source of what a platform's deliveries create (design 34: `<platform>:<domain>`). */
export const platformSource = (platform: Platform) => `${platform}:${PLATFORM_DOMAINS[platform]}`;

/** Shopify's consent states in emk's terms (design 34). */
export const consentStatus = (state: ShopifyConsentState): SubscriptionStatus =>
  state === 'subscribed' ? 'subscribed' : state === 'unsubscribed' ? 'unsubscribed' : 'non_subscribed';

/**
 * The consent a platform delivery carries: the status a new contact takes, and the platform's consent time (only a
 * timed consent can change an existing contact). Shopify (docs/platforms/shopify.md): the customer's
 * `email_marketing_consent` when it has a time, else a ticked `buyer_accepts_marketing` (subscribed at the order's
 * `processed_at`, which the shop sends as its creation), else the customer's consent without a time; an unticked box
 * is no consent given. WooCommerce core has none.
 */
export function deliveredConsent(op: PlatformOperation): { status: SubscriptionStatus; at: number | null } | null {
  if (op.kind === 'platform-customer') return op.consent && { status: consentStatus(op.consent.state), at: op.consent.at };
  if (op.kind !== 'platform-order' || op.platform !== 'shopify') return null;
  const customer = op.order.customer;
  const record = customer && { status: consentStatus(customer.consent.state), at: customer.consent.at };
  if (record?.at != null) return record;
  if (op.order.buyerAcceptsMarketing) return { status: 'subscribed', at: op.order.createdAt };
  return record;
}

/** WooCommerce statuses of orders not placed (design 34): nothing new is stored, a stored order is updated. */
const WOO_NOT_PLACED = new Set(['pending', 'failed', 'checkout-draft']);
export const isPlaced = (platform: Platform, status: string) => platform === 'shopify' || !WOO_NOT_PLACED.has(status);
/** Shopify: `cancelled_at` set; WooCommerce: `cancelled`, or `trash` (a trashed order). */
const isCancelled = (platform: Platform, o: PlatformOrderSnapshot) =>
  platform === 'shopify' ? o.cancelledAt !== null : o.status === 'cancelled' || o.status === 'trash';

/**
 * The refunds a snapshot lists, by id: Shopify's successful refund transactions summed per refund; WooCommerce's
 * `refunds[]`; a WooCommerce order `refunded` with none listed is refunded in full under the id `status:refunded`.
 */
function refundsOf(platform: Platform, o: PlatformOrderSnapshot): Array<{ id: string; amount: number }> {
  if (platform === 'woocommerce' && o.status === 'refunded' && o.refunds.length === 0) return [{ id: 'status:refunded', amount: o.total }];
  return o.refunds.map((r) => ({ id: r.id, amount: r.amounts.reduce((a, b) => a + b, 0) }));
}

/** A multi-currency order's presentment as emk shows it: the paid total, its shop total at the order's rate. */
const presentmentOf = (o: PlatformOrderSnapshot): Pick<OrderView, 'presentmentCurrency' | 'presentmentTotal'> =>
  o.presentment === null ? {} : { presentmentCurrency: o.presentment.currency, presentmentTotal: Math.round(o.total * o.presentment.rate) };

/**
 * What an import (a sync or an event batch) must answer: the rows it refuses, and the exit code of the CLI's import
 * of the same rows (docs/cli.md, exit codes of an import: 1 when every row of a file was refused, an empty file
 * refusing nothing; else 0). The model's files never exceed `--max-errors`, which the driver does not pass.
 */
export interface ImportAnswer {
  refused: number;
  exitCode: 0 | 1;
}

const importAnswer = (rows: number, refused: number): ImportAnswer => ({ refused, exitCode: rows > 0 && refused === rows ? 1 : 0 });

/**
 * A platform consent time must be this much later than a contact's last status change to count as later for sure
 * (emk may keep its own times to the second); one at or before it is not later whatever emk keeps.
 */
export const CONSENT_MARGIN_MS = 1000;

interface ModelContact {
  key: string;
  email: string;
  status: SubscriptionStatus;
  source: string;
  anonymousIds: Set<string>;
  visits: number;
  erased: boolean;
  /**
   * When the status last changed in emk, as bounds: a change whose time the design leaves open (emk's clock or the
   * platform's consent time; a write of the same status) widens them. The generator draws platform consent times
   * outside them, so "later than the last status change" has one answer.
   */
  statusChange: { lo: number; hi: number };
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
  /** Webhook retry keys seen: `<event_type>|<key>`, and platform delivery ids as `<platform>|<id>`. */
  private readonly retryKeys = new Set<string>();
  /** Stored platform orders: the platform time of the snapshot applied. */
  private readonly platformUpdates = new Map<string, number>();
  /**
   * Platform refunds by order id, then refund id: kept whichever delivery brings them first, also before the order
   * is stored (a `refunds/create` that overtook its order counts once the order arrives).
   */
  private readonly platformRefunds = new Map<string, Map<string, number>>();
  private readonly anonymousOwners = new Map<string, string>();
  /**
   * The contact each platform customer id and phone number names (docs/platforms/README.md, Orders without an
   * email), by `shopify:<email key>` / `woocommerce:<email key>` / `phone:<email key>`: each address of the run has
   * one customer id per shop and one phone number. The contact last written with it; an erased one names nobody.
   */
  private readonly identities = new Map<string, string>();
  /** Stored orders without a contact that name a platform customer id: order id → identity key. */
  private readonly contactless = new Map<string, string>();
  /** How many orders without a contact joined one (the coverage of `npm test` reads it). */
  joins = 0;

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
  /** Live contacts that opened or clicked something. */
  engagedContacts = () => [...this.engagements.keys()].filter(this.isLive);
  statusChangeOf = (contact: string) => this.contacts.get(contact)!.statusChange;
  /** The live contact an identity (`<platform|phone>:<email key>`) names, if any. */
  holderOf = (identity: string) => {
    const holder = this.identities.get(identity);
    return holder !== undefined && this.isLive(holder) ? holder : undefined;
  };
  /** The platform time of the snapshot a stored platform order was last updated from; undefined: not stored. */
  platformUpdatedAt = (externalId: string) => this.platformUpdates.get(externalId);

  /**
   * Reconcile by email: an existing contact never changes status here; a new one takes the writer's status and
   * source, unless the workspace's contact limit is reached (undefined then).
   */
  private ensureContact(email: string, status: SubscriptionStatus, source: string, statusAt: number | null = null): string | undefined {
    const k = emailKey(email);
    const live = this.liveByEmail.get(k);
    if (live) return live;
    if (this.contactLimit !== null && this.liveByEmail.size >= this.contactLimit) return undefined;
    const generation = (this.generations.get(k) ?? 0) + 1;
    this.generations.set(k, generation);
    const key = `${k}#${generation}`;
    // A contact made `non_subscribed` by default decided nothing (docs/platforms/README.md): a platform's consent of
    // any time changes it, as if its last status change were before every time.
    const undecided = status === 'non_subscribed' && statusAt === null;
    const statusChange = undecided ? { lo: -Infinity, hi: -Infinity } : { lo: Math.min(statusAt ?? this.now, this.now), hi: Math.max(statusAt ?? this.now, this.now) };
    this.contacts.set(key, { key, email: email.trim(), status, source, anonymousIds: new Set(), visits: 0, erased: false, statusChange });
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

  private sync(rows: SyncRow[]): ImportAnswer {
    // New contacts are made in email-key order (what decides who gets the last places under a contact limit).
    const byKey = new Map<string, string>();
    for (const row of rows) if (!byKey.has(emailKey(row.email))) byKey.set(emailKey(row.email), row.email);
    for (const k of [...byKey.keys()].sort()) this.ensureContact(byKey.get(k)!, 'non_subscribed', 'sync');
    let refused = 0;
    rows.forEach((row) => {
      const owner = this.contactOf(row.email);
      if (owner === undefined) return void refused++; // contact limit reached
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
    return importAnswer(rows.length, refused);
  }

  /** A first delivery of a platform's, or one without an id (applied each time); a known id is a duplicate. */
  private firstDelivery(platform: Platform, deliveryId: string | null): boolean {
    if (deliveryId === null) return true;
    const key = `${platform}|${deliveryId}`;
    if (this.retryKeys.has(key)) return false;
    this.retryKeys.add(key);
    return true;
  }

  /**
   * The contact of a platform delivery's email: an existing one changes status only for a platform consent time
   * later than its last status change in emk; a new one takes the delivery's consent (else `non_subscribed`).
   */
  private platformContact(op: PlatformOperation & { email: string; platform: Platform }): string | undefined {
    const contact = this.platformContactStatus(op);
    if (contact !== undefined) this.writeIdentities(op, contact);
    return contact;
  }

  /**
   * The identities a delivery writes on its contact: a WooCommerce customer or order its `customer_id` and billing
   * phone; a Shopify customer, or an order's `customer` object, its id and phone. Orders kept without a contact that
   * name the customer id join it.
   */
  private writeIdentities(op: PlatformOperation & { email: string; platform: Platform }, contact: string): void {
    if (op.platform === 'shopify' && op.kind === 'platform-order' && op.order.customer === null) return;
    const k = emailKey(op.email);
    const ref = `${op.platform}:${k}`;
    this.identities.set(ref, contact);
    this.identities.set(`phone:${k}`, contact);
    for (const [orderId, named] of this.contactless) {
      if (named !== ref) continue;
      // Joined: the contact's revenue includes it; it stays uncredited (the sale is not new).
      this.orders.get(orderId)!.owner = contact;
      this.contactless.delete(orderId);
      this.joins++;
    }
  }

  /** The contact of an order without an email: its customer id's, else its phone's; undefined: none. */
  private contactlessOwner(platform: Platform, buyer: ContactlessBuyer): string | undefined {
    return (
      (buyer.customerOf !== null ? this.holderOf(`${platform}:${emailKey(buyer.customerOf)}`) : undefined) ??
      (buyer.phoneOf !== null ? this.holderOf(`phone:${emailKey(buyer.phoneOf)}`) : undefined)
    );
  }

  private platformContactStatus(op: PlatformOperation & { email: string; platform: Platform }): string | undefined {
    const consent = deliveredConsent(op);
    const live = this.contactOf(op.email);
    if (live === undefined) return this.ensureContact(op.email, consent?.status ?? 'non_subscribed', platformSource(op.platform), consent?.at ?? null);
    if (consent === null || consent.at === null) return live;
    const c = this.contacts.get(live)!;
    const { lo, hi } = c.statusChange;
    if (consent.at <= lo) return live; // not later than the last change, whichever time emk kept
    if (consent.status === c.status) {
      // Applied or not, the status stays: the last change is now one of the times seen so far.
      c.statusChange = { lo, hi: Math.max(hi, consent.at, this.now) };
      return live;
    }
    if (consent.at < hi + CONSENT_MARGIN_MS) throw new Error(`the generator drew a consent time the design leaves open: ${consent.at} near ${JSON.stringify(c.statusChange)}`);
    c.status = consent.status;
    c.statusChange = { lo: Math.min(consent.at, this.now), hi: Math.max(consent.at, this.now) };
    return live;
  }

  /** Refunds add up by id and never count twice; a stored order's refunded is their sum, capped at its total. */
  private settleRefunds(externalId: string, refunds: Array<{ id: string; amount: number }>): void {
    const known = this.platformRefunds.get(externalId) ?? new Map<string, number>();
    this.platformRefunds.set(externalId, known);
    for (const r of refunds) if (!known.has(r.id)) known.set(r.id, r.amount);
    const order = this.orders.get(externalId);
    if (order && this.platformUpdates.has(externalId)) setTotal(order, order.total, [...known.values()].reduce((a, b) => a + b, 0));
  }

  /**
   * A platform order snapshot (design 34): a placed order is stored when first seen (attributed from its creation
   * time, owned by its email's contact); an unplaced one stores nothing new. A stored order takes a snapshot's
   * fields unless the snapshot is older than the one applied, and always its unseen refunds and its cancellation
   * (which sticks). The owner never changes.
   */
  private platformOrder(op: Extract<Operation, { kind: 'platform-order' }>): void {
    if (!this.firstDelivery(op.platform, op.deliveryId)) return;
    const o = op.order;
    const existing = this.orders.get(o.id);
    const placed = isPlaced(op.platform, o.status);
    if (!existing && !placed) return this.settleRefunds(o.id, refundsOf(op.platform, o));
    // An unplaced snapshot of a stored order only updates it (the generator keeps its email's contact alive then).
    const owner = !placed ? undefined : op.email !== null ? this.platformContact({ ...op, email: op.email }) : this.contactlessOwner(op.platform, o.buyer!);
    if (!existing) {
      // Rule 5: the contact limit refused the contact of an email; an order without one is kept without a contact.
      if (owner === undefined && op.email !== null) return this.settleRefunds(o.id, refundsOf(op.platform, o));
      const fields = {
        total: o.total,
        currency: o.currency,
        orderedAt: o.createdAt,
        platform: op.platform,
        cancelled: isCancelled(op.platform, o),
        refunded: 0,
        status: o.status,
        orderNumber: o.number,
        ...presentmentOf(o),
      };
      if (owner !== undefined) this.createOrder(o.id, owner, fields);
      else {
        this.orders.set(o.id, { owner: null, ...fields, credit: null });
        if (o.buyer!.customerOf !== null) this.contactless.set(o.id, `${op.platform}:${emailKey(o.buyer!.customerOf)}`);
      }
      this.platformUpdates.set(o.id, o.updatedAt);
      return this.settleRefunds(o.id, refundsOf(op.platform, o));
    }
    if (isCancelled(op.platform, o)) existing.cancelled = true;
    if (o.updatedAt >= this.platformUpdates.get(o.id)!) {
      this.platformUpdates.set(o.id, o.updatedAt);
      existing.total = o.total;
      existing.currency = o.currency;
      existing.status = o.status;
      existing.orderNumber = o.number;
      Object.assign(existing, presentmentOf(o));
    }
    this.settleRefunds(o.id, refundsOf(op.platform, o));
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

  /** Applies one operation; an import's answer is returned, for the driver to hold emk's answer to. */
  apply(op: Operation): ImportAnswer | void {
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
      case 'event-batch': {
        // Matched case-insensitively to live contacts; an unknown email is a row error, never a new contact.
        let refused = 0;
        for (const email of op.emails) {
          const owner = this.contactOf(email);
          if (owner !== undefined) this.contacts.get(owner)!.visits++;
          else refused++;
        }
        return importAnswer(op.emails.length, refused);
      }
      case 'upsert-contact':
        this.ensureContact(op.email, op.status ?? 'non_subscribed', 'api');
        return;
      case 'set-status': {
        const c = this.contacts.get(op.contact);
        if (!c || c.erased) return;
        // Setting the status it has may or may not count as a change: the bounds take both.
        c.statusChange = c.status === op.status ? { lo: c.statusChange.lo, hi: this.now } : { lo: this.now, hi: this.now };
        c.status = op.status;
        return;
      }
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
      case 'platform-order':
        return this.platformOrder(op);
      case 'platform-refund':
        // Shopify's `refunds/create`: the refund counts for its order, now or once the order is stored.
        if (this.firstDelivery('shopify', op.deliveryId)) {
          this.settleRefunds(op.orderId, [{ id: op.refund.id, amount: op.refund.amounts.reduce((a, b) => a + b, 0) }]);
        }
        return;
      case 'platform-order-deleted':
        // WooCommerce's trash: a stored order is cancelled; its status stays as last sent.
        if (this.firstDelivery('woocommerce', op.deliveryId) && this.platformUpdates.has(op.orderId)) this.orders.get(op.orderId)!.cancelled = true;
        return;
      case 'platform-customer':
        if (this.firstDelivery(op.platform, op.deliveryId)) this.platformContact(op);
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
    const count = (owner: string | null, revenue: number) => {
      const view = owner === null ? undefined : contacts[owner];
      if (!view) return;
      view.revenue += revenue;
      view.orders += 1;
    };
    const orders: Record<string, OrderView> = {};
    const senderReports: Record<string, { orders: number; revenue: number }> = {};
    for (const sender of [...this.campaignsSent, ...Object.keys(FLOWS)]) senderReports[sender] = { orders: 0, revenue: 0 };
    const revenueRows = new Map<string, { orders: number; revenue: number }>();
    const windows = reportWindows(this.now);
    const addRow = (sender: string, currency: string, orderedAt: number, revenue: number) => {
      for (const w of windows) {
        if (orderedAt < w.from || orderedAt >= w.to) continue;
        const key = `${w.name}\u0000${sender}\u0000${currency}`;
        const row = revenueRows.get(key) ?? { orders: 0, revenue: 0 };
        row.orders++;
        row.revenue += revenue;
        revenueRows.set(key, row);
      }
    };
    // The store's total: every order, with a contact or without one, credited or not.
    for (const o of this.orders.values()) addRow('total', o.currency, o.orderedAt, net(o));
    for (const o of this.directOrders) addRow('total', o.currency, o.orderedAt, o.total);
    for (const [externalId, o] of this.orders) {
      orders[externalId] = { ...o };
      count(o.owner, net(o));
      if (o.credit === null) continue;
      const report = (senderReports[o.credit] ??= { orders: 0, revenue: 0 });
      report.orders++;
      report.revenue += net(o);
      addRow(o.credit, o.currency, o.orderedAt, net(o));
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
