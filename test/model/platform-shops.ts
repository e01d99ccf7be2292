import { DAY_MS, type ContactlessBuyer, type Platform, type PlatformOperation, type PlatformOrderSnapshot, type PlatformRefund, type Presentment, type ShopifyConsent, type ShopifyConsentState } from './operations.js';
import type { Random } from './random.js';
import { CONSENT_MARGIN_MS, deliveredConsent, emailKey, isPlaced, type ReferenceModel } from './reference-model.js';

/** An order as its shop holds it; every delivery is a snapshot of it (the snapshot's fields, but its customer). */
interface ShopOrder extends Omit<PlatformOrderSnapshot, 'customer' | 'buyerAcceptsMarketing'> {
  platform: Platform;
  /** The order's address as the shop keeps it; each delivery spells it in a random letter case. Null: none (`buyer` says who). */
  email: string | null;
  /**
   * A fixed total lets refunds add up past it (the cap is tested). Otherwise the total may change (an order edit)
   * but refunds stay within every total the order had: the design leaves open what a cap does when a total later rises.
   */
  fixedTotal: boolean;
  minTotal: number;
  /** Shopify: whether deliveries carry the `customer` object (an app without customer access gets none). */
  withCustomer: boolean;
  emailOnlyInCustomer: boolean;
  /** WooCommerce: the status the order had before the trash (`order.restored` puts it back). */
  beforeTrash: string | null;
}

const SHOPIFY_ORDER_ID = 5_600_000_000_000;
const WOO_ORDER_ID = 7_000;
const CURRENCY: Record<Platform, string> = { shopify: 'USD', woocommerce: 'EUR' };
/** What buyers pay in besides the shop's currency (Shopify Markets, WooPayments multi-currency). */
const PAID_IN: Record<Platform, string[]> = { shopify: ['EUR', 'GBP', 'CAD'], woocommerce: ['USD', 'GBP', 'CHF'] };
/**
 * Rates (units paid per unit of the shop's) that turn a multiple of 20 cents into whole cents and back: a
 * multi-currency order's total and refunds are such multiples, so every conversion emk makes is exact in cents.
 */
const RATES = [0.5, 0.8, 1.25, 1.5, 2];
const PRESENTMENT_UNIT = 20;
/** How a new order is made: in the shop's currency with an email, paid in another, or without an email. */
const NEW_ORDER_SHAPES = { plain: 70, 'other currency': 12, 'no email, customer id': 8, 'no email, phone': 5, 'no email, neither': 5 };
type NewOrderShape = keyof typeof NEW_ORDER_SHAPES;
const sum = (list: number[]) => list.reduce((a, b) => a + b, 0);
const refunded = (o: ShopOrder) => sum(o.refunds.flatMap((r) => r.amounts));
const floorSecond = (ms: number) => Math.floor(ms / 1000) * 1000;
const ceilSecond = (ms: number) => Math.ceil(ms / 1000) * 1000;

/**
 * The two shops of a run: their orders and customers change over time, and each change makes the deliveries the
 * platform would send (Shopify `orders/*`, `refunds/create`, `customers/*`; WooCommerce `order.*`, `customer.*`).
 * Some deliveries wait (`pending`) and go out later, after newer ones: out of order. Platform times are whole
 * seconds, and one order's snapshots never share an `updated_at`.
 */
export class PlatformShops {
  private readonly orders: ShopOrder[] = [];
  /** Shopify customers' consent, by email key. */
  private readonly consents = new Map<string, ShopifyConsent>();
  /** Deliveries made but not sent yet. */
  private readonly pending: PlatformOperation[] = [];
  /** Deliveries sent with an id, for retries in later bursts. */
  private readonly sent: PlatformOperation[] = [];
  private readonly sentIds = new Set<string>();
  private readonly counters = { shopify: 0, woocommerce: 0, refund: 0, delivery: 0 };
  /** The changes each shop has made, by `<platform>:<change>`: every kind is made early in a run (the opening). */
  private readonly made = new Set<string>();
  /** Addresses whose customer id an order without an email named: their customer's account comes soon after. */
  private readonly awaited: Record<Platform, string[]> = { shopify: [], woocommerce: [] };
  /** `<platform>|<address>`: customers who open an account once their order without an email was sent. */
  private readonly accountsToOpen = new Set<string>();

  constructor(
    private readonly random: Random,
    private readonly model: ReferenceModel,
    /** An address of the run, new or known (fresh: new). */
    private readonly address: (fresh?: boolean) => string,
    /** When a new order of this address's contact was placed (model time). */
    private readonly placedAt: (email: string) => number,
  ) {}

  /** A change at a shop: one delivery to send now, or null when none can go now (it waits). */
  orderEvent(platform: Platform): PlatformOperation | null {
    const { random } = this;
    const open = this.orders.filter((o) => o.platform === platform).slice(-30);
    // New orders come oftener while some of their shapes were never made at this shop (the opening).
    const shapesLeft = (Object.keys(NEW_ORDER_SHAPES) as NewOrderShape[]).some((shape) => !this.made.has(`${platform}:new ${shape}`));
    const isNew = open.length === 0 || random.chance(shapesLeft ? 0.7 : 0.35);
    // An order of the opening's shapes goes when it can, never held back on purpose.
    return this.sendOrHold(isNew ? this.newOrder(platform) : this.changeOrder(random.pick(open)), !(isNew && shapesLeft));
  }

  /** A customer account created or changed at a shop (at Shopify, often its consent). */
  customerEvent(platform: Platform): PlatformOperation | null {
    return this.sendOrHold([this.customerDelivery(platform, this.awaitedAddress(platform) ?? this.address())]);
  }

  private customerDelivery(platform: Platform, email: string): PlatformOperation {
    if (platform === 'woocommerce') {
      return { kind: 'platform-customer', platform, topic: this.random.pick(['customer.created', 'customer.updated']), deliveryId: this.deliveryId(platform), email, consent: null };
    }
    const known = this.consents.has(emailKey(email));
    if (this.random.chance(0.7)) this.changeConsent(email);
    return { kind: 'platform-customer', platform, topic: known ? 'customers/update' : 'customers/create', deliveryId: this.deliveryId(platform), email, consent: this.consentOf(email) };
  }

  /**
   * Now and then an address an order without an email named by its customer id while no contact held it: its
   * customer's account (or an order with its email) is what joins that order to a contact.
   */
  private awaitedAddress(platform: Platform): string | null {
    const waiting = (this.awaited[platform] = this.awaited[platform].filter((a) => this.model.holderOf(`${platform}:${emailKey(a)}`) === undefined));
    return waiting.length > 0 && this.random.chance(0.9) ? this.random.pick(waiting) : null;
  }

  /** A delivery that waited, if one can go now. */
  late(): PlatformOperation | null {
    const ready = this.pending.filter((op) => this.deliverable(op));
    if (ready.length === 0) return null;
    // Until a run has seen an order without a contact join one, an account opening goes first.
    const opening = this.model.joins === 0 ? ready.filter((op) => op.kind === 'platform-customer') : [];
    const op = this.random.pick(opening.length > 0 ? opening : ready);
    this.pending.splice(this.pending.indexOf(op), 1);
    return op;
  }

  /** A delivery sent before (with its id): Shopify and WooCommerce retry what was not acknowledged in time. */
  retry(): PlatformOperation | null {
    return this.sent.length === 0 ? null : this.random.pick(this.sent);
  }

  /** The burst took it. */
  accepted(op: PlatformOperation): void {
    const customerOf = op.kind === 'platform-order' ? op.order.buyer?.customerOf : null;
    if (op.kind === 'platform-order' && customerOf && this.accountsToOpen.delete(`${op.platform}|${customerOf}`)) this.hold(this.customerDelivery(op.platform, customerOf));
    if (op.deliveryId === null || this.sentIds.has(op.deliveryId)) return;
    this.sentIds.add(op.deliveryId);
    this.sent.push(op);
    if (this.sent.length > 60) this.sent.shift();
  }

  /** The burst had no room for it (it touches what another operation of the burst does): it goes later. */
  rejected(op: PlatformOperation): void {
    if (op.deliveryId === null || !this.sentIds.has(op.deliveryId)) this.hold(op);
  }

  /**
   * Whether the model has one answer for this delivery now (against the state before its burst; its claims keep
   * the burst from changing what it reads). The design leaves open: a stale or unplaced snapshot of a stored
   * order whose email has no contact (is one made?), one whose contact the contact limit may refuse, a consent
   * time inside a contact's last-change bounds, and a stale snapshot's consent that would otherwise apply (each
   * only where it would change a status).
   */
  private deliverable(op: PlatformOperation): boolean {
    if (op.kind !== 'platform-order' && op.kind !== 'platform-customer') return true;
    // An order without an email makes no contact and changes no status.
    if (op.email === null) return true;
    const live = this.model.contactOf(op.email);
    const storedAt = op.kind === 'platform-order' ? this.model.platformUpdatedAt(op.order.id) : undefined;
    const stale = op.kind === 'platform-order' && storedAt !== undefined && op.order.updatedAt < storedAt;
    if (op.kind === 'platform-order' && storedAt !== undefined && live === undefined) {
      if (stale || !isPlaced(op.platform, op.order.status) || this.model.contactLimit !== null) return false;
    }
    const consent = deliveredConsent(op);
    if (live === undefined || consent === null || consent.at === null) return true;
    const { lo, hi } = this.model.statusChangeOf(live);
    if (consent.at <= lo || consent.status === this.model.contacts.get(live)!.status) return true;
    return consent.at >= hi + CONSENT_MARGIN_MS && !stale;
  }

  private hold(op: PlatformOperation): void {
    this.pending.push(op);
    if (this.pending.length > 40) this.pending.shift();
  }

  /** The first delivery goes now when it can (now and then it waits on purpose); the others wait. */
  private sendOrHold(deliveries: PlatformOperation[], mayWait = true): PlatformOperation | null {
    const [first, ...rest] = deliveries;
    for (const op of rest) this.hold(op);
    if (!first) return null;
    if (this.deliverable(first) && !(mayWait && this.random.chance(0.12))) return first;
    this.hold(first);
    return this.late();
  }

  private deliveryId(platform: Platform): string | null {
    if (this.random.chance(0.06)) return null; // sent without one: applied each time
    const n = ++this.counters.delivery;
    // Shopify's X-Shopify-Webhook-Id is a UUID; WooCommerce's X-WC-Webhook-Delivery-ID a 32-digit hex hash.
    const hex = n.toString(16).padStart(12, '0');
    return platform === 'shopify' ? `5e1f0c7a-0d4b-4c3e-9a51-${hex}` : `9f2c6b1d8e4a7f30${hex.padStart(16, '0')}`;
  }

  private spell(email: string): string {
    return [...email.toLowerCase()].map((ch) => (this.random.chance(0.3) ? ch.toUpperCase() : ch)).join('');
  }

  /** Now, as the platform stamps a change to this order: whole seconds, later than its last snapshot. */
  private stamp(o: ShopOrder): number {
    o.updatedAt = Math.max(floorSecond(this.model.now), o.updatedAt + 1000);
    return o.updatedAt;
  }

  private snapshot(o: ShopOrder): PlatformOrderSnapshot {
    const consent = o.email === null ? { state: 'not_subscribed' as const, at: null } : this.consentOf(o.email);
    return {
      id: o.id,
      number: o.number,
      total: o.total,
      currency: o.currency,
      status: o.status,
      createdAt: o.createdAt,
      updatedAt: o.updatedAt,
      cancelledAt: o.cancelledAt,
      refunds: o.refunds.map((r) => ({ ...r, amounts: [...r.amounts], ...(r.failed ? { failed: [...r.failed] } : {}) })),
      customer: o.platform === 'shopify' && o.withCustomer ? { consent, emailOnlyThere: o.emailOnlyInCustomer } : null,
      buyerAcceptsMarketing: consent.state === 'subscribed',
      presentment: o.presentment,
      buyer: o.buyer,
    };
  }

  private orderDelivery(o: ShopOrder, topic: string): PlatformOperation {
    return { kind: 'platform-order', platform: o.platform, topic, deliveryId: this.deliveryId(o.platform), email: o.email === null ? null : this.spell(o.email), order: this.snapshot(o) };
  }

  /** Who an order without an email names: a customer id (known or not), a phone some contact holds, or neither. */
  private contactlessBuyer(platform: Platform, shape: NewOrderShape): ContactlessBuyer | null {
    const { random, model } = this;
    if (shape === 'no email, neither') return { customerOf: null, phoneOf: null };
    const phoneHolders = model.liveContacts().filter((c) => model.holderOf(`phone:${emailKey(c.email)}`) === c.key);
    if (shape === 'no email, phone') return phoneHolders.length === 0 ? null : { customerOf: null, phoneOf: random.pick(phoneHolders).email };
    // Mostly a customer no contact holds yet, so that the order waits for one; half of them (all until a run has
    // seen a join) open an account later.
    const customerOf = this.address(model.joins === 0 || random.chance(0.7));
    if (model.holderOf(`${platform}:${emailKey(customerOf)}`) === undefined) {
      this.awaited[platform].push(customerOf);
      if (model.joins === 0 || random.chance(0.5)) this.accountsToOpen.add(`${platform}|${customerOf}`);
    }
    // Sometimes a phone too: the customer id's contact comes first, else the phone's.
    return { customerOf, phoneOf: phoneHolders.length > 0 && random.chance(0.3) ? random.pick(phoneHolders).email : null };
  }

  private newOrder(platform: Platform): PlatformOperation[] {
    const { random } = this;
    const unmade = (Object.keys(NEW_ORDER_SHAPES) as NewOrderShape[]).filter((shape) => !this.made.has(`${platform}:new ${shape}`));
    // The customer id's shape first (the join it waits for comes later in the run), then another currency.
    const first = (['no email, customer id', 'other currency'] as const).find((shape) => unmade.includes(shape));
    let shape = first ?? (unmade.length > 0 ? random.pick(unmade) : random.weighted(NEW_ORDER_SHAPES));
    const buyer = shape.startsWith('no email') ? this.contactlessBuyer(platform, shape) : null;
    if (shape.startsWith('no email') && buyer === null) shape = 'plain';
    this.made.add(`${platform}:new ${shape}`);
    const email = buyer !== null ? null : (this.awaitedAddress(platform) ?? this.address());
    const n = ++this.counters[platform];
    // Whole seconds, on either side of where the generator put it (so it lands on both sides of a window's edge).
    const at = this.placedAt(email ?? buyer?.customerOf ?? buyer?.phoneOf ?? '');
    const createdAt = random.chance(0.5) ? floorSecond(at) : ceilSecond(at);
    const shopify = platform === 'shopify';
    const presentment: Presentment | null = shape === 'other currency' ? { currency: random.pick(PAID_IN[platform]), rate: random.pick(RATES) } : null;
    const total = this.drawTotal(presentment);
    const o: ShopOrder = {
      platform,
      id: String(shopify ? SHOPIFY_ORDER_ID + n * 13 : WOO_ORDER_ID + n),
      number: shopify ? `#${1000 + n}` : String(WOO_ORDER_ID + n),
      email,
      total,
      currency: CURRENCY[platform],
      status: shopify
        ? random.pick(['paid', 'paid', 'paid', 'pending', 'authorized'])
        : email === null
          ? random.pick(['processing', 'processing', 'on-hold']) // entered in the admin (a phone order, cash on delivery)
          : random.pick(['pending', 'pending', 'processing', 'processing', 'on-hold', 'checkout-draft', 'failed']),
      createdAt,
      updatedAt: createdAt - 1000,
      cancelledAt: null,
      refunds: [],
      fixedTotal: random.chance(0.5),
      minTotal: total,
      withCustomer: email !== null && random.chance(0.85),
      emailOnlyInCustomer: random.chance(0.1),
      beforeTrash: null,
      presentment,
      buyer,
    };
    this.orders.push(o);
    this.stamp(o);
    // A checkout that asks for consent: the customer subscribes (or says no) as they order.
    if (shopify && email !== null && random.chance(0.3)) this.changeConsent(email);
    return [this.orderDelivery(o, shopify ? 'orders/create' : 'order.created')];
  }

  /** A change the order can take: while some of them were never made at its shop, one of those (any alike). */
  private pickChange<K extends string>(platform: Platform, weights: Record<K, number>): K {
    const possible = (Object.keys(weights) as K[]).filter((change) => weights[change] > 0);
    const unmade = possible.filter((change) => !this.made.has(`${platform}:${change}`));
    const change = unmade.length > 0 ? this.random.pick(unmade) : this.random.weighted(weights);
    this.made.add(`${platform}:${change}`);
    return change;
  }

  private changeOrder(o: ShopOrder): PlatformOperation[] {
    return o.platform === 'shopify' ? this.changeShopifyOrder(o) : this.changeWooOrder(o);
  }

  /** A total in cents: a multiple of the presentment unit when the order is paid in another currency. */
  private drawTotal(presentment: Presentment | null): number {
    const unit = presentment === null ? 1 : PRESENTMENT_UNIT;
    return unit * this.random.int(Math.ceil(100 / unit), Math.floor(30_000 / unit));
  }

  /** A refund the order can take: within every total it had, or (fixed total) anything up to 60 % of it (in its unit). */
  private refundAmount(o: ShopOrder): number | null {
    const unit = o.presentment === null ? 1 : PRESENTMENT_UNIT;
    const room = Math.floor((o.fixedTotal ? Math.floor(o.total * 0.6) : Math.min(o.minTotal - refunded(o), Math.floor(o.total * 0.6))) / unit);
    return room < 1 ? null : unit * this.random.int(1, room);
  }

  /** The rest of the order refunded (a full refund), if anything is left within every total it had. */
  private remainder(o: ShopOrder): number | null {
    const left = (o.fixedTotal ? o.total : o.minTotal) - refunded(o);
    return left < 1 ? null : left;
  }

  private addRefund(o: ShopOrder, amount: number): PlatformRefund {
    const { random } = this;
    const id = String(o.platform === 'shopify' ? 9_100_000_000 + ++this.counters.refund : 90_000 + ++this.counters.refund);
    // Shopify: a refund may be paid back in two transactions, and list a failed attempt that counts for nothing.
    const unit = o.presentment === null ? 1 : PRESENTMENT_UNIT;
    const split = o.platform === 'shopify' && amount >= 2 * unit && random.chance(0.2);
    const first = split ? unit * random.int(1, amount / unit - 1) : amount;
    const refund: PlatformRefund = {
      id,
      amounts: split ? [first, amount - first] : [amount],
      ...(o.platform === 'shopify' && random.chance(0.15) ? { failed: [random.int(100, 5_000)] } : {}),
    };
    o.refunds.push(refund);
    return refund;
  }

  private changeShopifyOrder(o: ShopOrder): PlatformOperation[] {
    const { random } = this;
    this.stamp(o);
    if (o.email !== null && random.chance(0.1)) this.changeConsent(o.email);
    const open = o.cancelledAt === null;
    const unpaid = o.status === 'pending' || o.status === 'authorized';
    const refund = ['paid', 'partially_refunded'].includes(o.status) ? this.refundAmount(o) : null;
    const change = this.pickChange('shopify', {
      paid: open && unpaid ? 4 : 0,
      refund: refund !== null ? 4 : 0,
      cancel: open ? 1.2 : 0,
      edit: open && !o.fixedTotal && o.refunds.length === 0 ? 1.5 : 0,
      email: o.email !== null ? 0.4 : 0,
      other: 1.5,
    });
    switch (change) {
      case 'paid':
        o.status = 'paid';
        return [this.orderDelivery(o, 'orders/paid')];
      case 'refund': {
        const made = this.addRefund(o, refund!);
        o.status = refunded(o) >= o.total ? 'refunded' : 'partially_refunded';
        // Shopify sends refunds/create and (as the order changed) orders/updated listing the same refund.
        const topic: PlatformOperation = { kind: 'platform-refund', deliveryId: this.deliveryId('shopify'), orderId: o.id, refund: made, presentment: o.presentment };
        const both = random.next();
        return both < 0.4 ? [topic, this.orderDelivery(o, 'orders/updated')] : both < 0.7 ? [this.orderDelivery(o, 'orders/updated'), topic] : both < 0.9 ? [topic] : [this.orderDelivery(o, 'orders/updated')];
      }
      case 'cancel': {
        o.cancelledAt = o.updatedAt;
        const deliveries: PlatformOperation[] = [];
        const rest = this.remainder(o);
        if (unpaid) o.status = 'voided';
        else if (random.chance(0.6) && rest !== null) {
          const made = this.addRefund(o, rest);
          o.status = 'refunded';
          if (random.chance(0.5)) deliveries.push({ kind: 'platform-refund', deliveryId: this.deliveryId('shopify'), orderId: o.id, refund: made, presentment: o.presentment });
        }
        return [this.orderDelivery(o, 'orders/cancelled'), ...deliveries];
      }
      case 'edit':
        o.total = this.drawTotal(o.presentment);
        o.minTotal = Math.min(o.minTotal, o.total);
        return [this.orderDelivery(o, 'orders/updated')];
      case 'email':
        // The order's email is corrected: the new address gets a contact, the order keeps its owner.
        o.email = this.address();
        return [this.orderDelivery(o, 'orders/updated')];
      case 'other':
        return [this.orderDelivery(o, random.chance(0.5) ? 'orders/fulfilled' : 'orders/updated')];
    }
  }

  private changeWooOrder(o: ShopOrder): PlatformOperation[] {
    const { random } = this;
    this.stamp(o);
    if (o.status === 'trash') {
      o.status = o.beforeTrash!;
      o.beforeTrash = null;
      return [this.orderDelivery(o, 'order.restored')];
    }
    const refund = ['processing', 'completed', 'on-hold', 'refunded'].includes(o.status) ? this.refundAmount(o) : null;
    const change = this.pickChange('woocommerce', {
      trash: 0.6,
      refund: refund !== null ? 2 : 0,
      fullRefund: ['processing', 'completed'].includes(o.status) ? 1 : 0,
      edit: !o.fixedTotal && o.refunds.length === 0 && ['pending', 'on-hold', 'failed'].includes(o.status) ? 1 : 0,
      status: 4,
    });
    switch (change) {
      case 'trash': {
        // WooCommerce sends `order.deleted` with the id only (and sometimes an update showing `trash`).
        o.beforeTrash = o.status;
        o.status = 'trash';
        const deleted: PlatformOperation = { kind: 'platform-order-deleted', deliveryId: this.deliveryId('woocommerce'), orderId: o.id };
        return random.chance(0.3) ? [deleted, this.orderDelivery(o, 'order.updated')] : [deleted];
      }
      case 'refund':
        this.addRefund(o, refund!);
        return [this.orderDelivery(o, 'order.updated')];
      case 'fullRefund': {
        // The rest as a refund, or (fixed total) only the status, with no refund listed.
        const rest = this.remainder(o);
        if (rest !== null && !(o.fixedTotal && random.chance(0.4))) this.addRefund(o, rest);
        o.status = 'refunded';
        return [this.orderDelivery(o, 'order.updated')];
      }
      case 'edit':
        o.total = this.drawTotal(o.presentment);
        o.minTotal = Math.min(o.minTotal, o.total);
        return [this.orderDelivery(o, 'order.updated')];
      case 'status': {
        const next: Record<string, string[]> = {
          pending: ['processing', 'processing', 'processing', 'on-hold', 'failed', 'cancelled'],
          'checkout-draft': ['pending', 'processing'],
          failed: ['processing', 'pending', 'cancelled'],
          'on-hold': ['processing', 'processing', 'processing', 'cancelled', 'pending'],
          processing: ['completed', 'completed', 'completed', 'on-hold', 'cancelled'],
          completed: ['completed', 'processing'],
          cancelled: ['processing', 'pending'],
          refunded: ['refunded', 'completed'],
        };
        o.status = random.pick(next[o.status] ?? ['processing']);
        return [this.orderDelivery(o, 'order.updated')];
      }
    }
  }

  private consentOf(email: string): ShopifyConsent {
    return this.consents.get(emailKey(email)) ?? { state: 'not_subscribed', at: null };
  }

  /**
   * The customer's consent changes at Shopify, at a whole second no later than now and after its previous change:
   * later than the contact's last status change in emk (by the margin) or not later at all; never in between.
   */
  private changeConsent(email: string): void {
    const { random, model } = this;
    const previous = this.consents.get(emailKey(email));
    const earliest = previous?.at != null ? previous.at + 1000 : -Infinity;
    const now = floorSecond(model.now);
    const live = model.contactOf(email);
    const windows: Array<[number, number]> = [];
    if (live === undefined) windows.push([Math.max(earliest, now - 2 * DAY_MS), now]);
    else {
      const { lo, hi } = model.statusChangeOf(live);
      // An undecided contact (no last change) takes a consent of any time: drawn from the last two days, before its creation too.
      windows.push([Math.max(earliest, Number.isFinite(hi) ? ceilSecond(hi + CONSENT_MARGIN_MS) : now - 2 * DAY_MS), now]);
      if (random.chance(0.3)) windows.unshift([Math.max(earliest, floorSecond(lo) - 3 * DAY_MS), floorSecond(lo)]);
    }
    const open = windows.map(([from, to]) => [ceilSecond(from), floorSecond(to)] as const).filter(([from, to]) => Number.isFinite(to) && from <= to);
    if (open.length === 0) return;
    const [from, to] = open[0]!;
    const state = random.pick<ShopifyConsentState>(['subscribed', 'subscribed', 'subscribed', 'unsubscribed', 'unsubscribed', 'not_subscribed', 'pending', 'redacted', 'invalid']);
    const at = state === 'not_subscribed' && random.chance(0.3) ? null : from + random.int(0, (to - from) / 1000) * 1000;
    if (at === null && previous?.at != null) return; // consent times never go back to unknown
    this.consents.set(emailKey(email), { state, at });
  }
}
