import { DAY_MS, isPlatformOperation, type Burst, type OrderEventType, type Operation, type Platform, type SubscriptionStatus, type SyncRow, type WebhookOrder } from './operations.js';
import { PlatformShops } from './platform-shops.js';
import { seededRandom, type Random } from './random.js';
import { FLOWS, ReferenceModel, deliveredConsent, emailKey } from './reference-model.js';

const HOUR_MS = 3_600_000;
const MAX_BURST = 8;

/** How often each kind of operation is drawn. */
const WEIGHTS = {
  placed: 14,
  fulfilled: 5,
  cancelled: 4,
  refunded: 7,
  retry: 5,
  tokenOrder: 3,
  noOrder: 1,
  customer: 2,
  direct: 6,
  syncApi: 4,
  identify: 5,
  visit: 4,
  eventBatch: 3,
  upsertContact: 3,
  setStatus: 3,
  erase: 1.2,
  campaign: 0.8,
  flowTrigger: 5,
  open: 9,
  click: 8,
  windows: 0.4,
  contactLimit: 0.4,
  syncCli: 0.4,
  shopifyOrder: 9,
  wooOrder: 7,
  shopifyCustomer: 1.5,
  wooCustomer: 0.8,
  platformLate: 2.5,
  platformRetry: 2,
};
type Draw = keyof typeof WEIGHTS;

/** What a draw becomes while the run has nothing for it yet (no message to open, no contact to erase…). */
const FALLBACKS: Partial<Record<Draw, Draw>> = {
  retry: 'placed',
  direct: 'placed',
  setStatus: 'upsertContact',
  erase: 'identify',
  flowTrigger: 'customer',
  open: 'placed',
  click: 'placed',
  shopifyOrder: 'placed',
  wooOrder: 'placed',
  shopifyCustomer: 'customer',
  wooCustomer: 'customer',
  platformLate: 'shopifyOrder',
  platformRetry: 'wooOrder',
};

/** What a shop's draw is named for: the shop may send a delivery it had held in its place. */
const SHOP_DRAWS: Partial<Record<Draw, { kind: Operation['kind']; platform: Platform }>> = {
  shopifyOrder: { kind: 'platform-order', platform: 'shopify' },
  wooOrder: { kind: 'platform-order', platform: 'woocommerce' },
  shopifyCustomer: { kind: 'platform-customer', platform: 'shopify' },
  wooCustomer: { kind: 'platform-customer', platform: 'woocommerce' },
};
const drawnAsNamed = (draw: Draw, op: Operation) => {
  const named = SHOP_DRAWS[draw];
  return named === undefined || (op.kind === named.kind && 'platform' in op && op.platform === named.platform);
};

/** The draws of website webhook order events: once sent, a later burst may send them again (a retry). */
const WEBHOOK_EVENT_DRAWS = new Set<Draw>(['placed', 'fulfilled', 'cancelled', 'refunded']);

/**
 * The opening: every kind is drawn early in every run, so the short runs of `npm test` meet each one (a drift in
 * a rare one showed only after 3,401 operations). The contact limit is not among them: drawn early it would hold
 * most of a short run under a limit; the CLI's refused sync sets one and puts it back.
 */
const OPENING = (Object.keys(WEIGHTS) as Draw[]).filter((draw) => draw !== 'contactLimit');

/**
 * The CLI's turns (a process is slow to start, so they are few), in this order: a sync file and an events file as
 * they come, each with a row that is taken, then one of each whose every row is refused, so every run meets both
 * exit codes of an import (docs/cli.md).
 */
const CLI_TURNS = ['sync', 'events', 'sync refused', 'events refused'] as const;
type CliTurn = (typeof CLI_TURNS)[number];

/** Operations that run alone: they read or change what every other operation depends on. */
const SOLO = new Set<Operation['kind']>(['send-campaign', 'windows', 'contact-limit']);

/**
 * The seeded operation sequence: bursts of operations whose effects do not depend on the order they are applied
 * in (each one declares what it touches; a burst never holds two that conflict, except exact retries of one
 * request, which must converge), so the model can apply a burst in list order while emk applies it concurrently.
 */
export function generateBursts(seed: number, operationCount: number): Burst[] {
  const random = seededRandom(seed);
  const model = new ReferenceModel();
  const bursts: Burst[] = [];
  const counters = { email: 0, order: 0, event: 0, anonymous: 0, campaign: 0 };
  const state: GeneratorState = { random, model, counters, webhookHistory: [], syncFiles: [], shops: null!, undrawn: new Set(OPENING) };
  // A third of the shops' buyers opened or clicked a message: their orders test attribution.
  const buyer = (fresh = false) => {
    const engaged = model.engagedContacts();
    return !fresh && engaged.length > 0 && random.chance(0.3) ? spell(random, model.contacts.get(random.pick(engaged))!.email) : email(state, fresh);
  };
  state.shops = new PlatformShops(random, model, buyer, (address) => orderedAt(state, model.contactOf(address)));
  let total = 0;
  /** The next burst, its operations drawn once the clock moved on. */
  const emit = (draw: () => Operation[]) => {
    const advanceMs = random.chance(0.1) ? random.int(DAY_MS, 3 * DAY_MS) : random.int(1_000, 6 * HOUR_MS);
    model.advance(advanceMs);
    const operations = draw();
    for (const op of operations) model.apply(op);
    bursts.push({ advanceMs, operations });
    total += operations.length;
  };
  // The CLI's four turns early in every run (one every 30 operations from the 40th), then one every 400.
  let nextCli = 40;
  let cliTurns = 0;
  while (total < operationCount) {
    if (total >= nextCli) {
      cliTurn(state, CLI_TURNS[cliTurns++ % CLI_TURNS.length]!, emit);
      nextCli += cliTurns < CLI_TURNS.length ? 30 : 400;
    } else if (![...model.recipients.values()].some((n) => n > 0) && model.liveContacts().length >= 3 && model.liveContacts().some((c) => c.status === 'subscribed')) {
      // A campaign that reaches someone early: its messages are what opens and clicks need.
      emit(() => [campaignOperation(state.counters)]);
    } else {
      emit(() => burstOperations(state, random.chance(0.4) ? 1 : random.int(2, MAX_BURST)));
    }
  }
  return bursts;
}

/** A CLI turn, alone in its burst (a refused sync between the contact limit's bursts). */
function cliTurn(state: GeneratorState, turn: CliTurn, emit: (draw: () => Operation[]) => void): void {
  const { model } = state;
  switch (turn) {
    // A file as it comes, and a row of a live contact's, which is taken whatever the contact limit.
    case 'sync':
      return emit(() => {
        const op = syncOperation(state, 'cli');
        const address = liveAddress(state);
        if (address !== null) op.rows.push(syncRow(state, address, `o${++state.counters.order}`));
        return [op];
      });
    case 'events':
      return emit(() => {
        const op = eventBatch(state, 'cli');
        const address = liveAddress(state);
        if (address !== null) op.emails.push(address);
        return [op];
      });
    case 'sync refused': {
      const limit = model.contactLimit;
      const full = limit !== null && model.liveContacts().length >= limit;
      if (!full) emit(() => [{ kind: 'contact-limit', limit: model.liveContacts().length }]);
      emit(() => [refusedSync(state)]);
      if (!full) emit(() => [{ kind: 'contact-limit', limit }]);
      return;
    }
    case 'events refused':
      return emit(() => [{ kind: 'event-batch', via: 'cli', emails: Array.from({ length: state.random.int(1, 4) }, () => addressWithoutContact(state)) }]);
  }
}

/**
 * The next campaign: every other one (the first included) an A/B test, its share and variant count taken from its
 * number (no draw, so the random sequence of a seed is what it was before A/B campaigns).
 */
function campaignOperation(counters: GeneratorState['counters']): Extract<Operation, { kind: 'send-campaign' }> {
  const n = ++counters.campaign;
  const campaign = `campaign:${n}`;
  if (n % 2 === 0) return { kind: 'send-campaign', campaign };
  const turn = (n - 1) / 2;
  return { kind: 'send-campaign', campaign, ab: { testShare: [0.5, 1, 0.25][turn % 3]!, variants: 2 + (turn % 3) } };
}

interface GeneratorState {
  random: Random;
  /** The model as of the burst being drawn (bursts are applied to it as they are made). */
  model: ReferenceModel;
  counters: { email: number; order: number; event: number; anonymous: number; campaign: number };
  /** Recent webhook order requests sent, for retries in later bursts. */
  webhookHistory: Operation[];
  /** Rows of earlier syncs, for re-runs (with corrections). */
  syncFiles: SyncRow[][];
  /** The Shopify and WooCommerce shops whose deliveries the run sends. */
  shops: PlatformShops;
  /** The opening's kinds not drawn yet. */
  undrawn: Set<Draw>;
}

type Claim = [resource: string, exclusive: boolean];

/**
 * A burst's operations. During the opening each draw is of a kind not drawn yet (any alike), until each of those
 * was tried in this burst: one the run has nothing for yet, or the burst no room for, waits for the next burst.
 */
function burstOperations(state: GeneratorState, size: number): Operation[] {
  const { random } = state;
  const operations: Operation[] = [];
  const claims = new Map<string, boolean>();
  const tried = new Set<Draw>();
  for (let attempt = 0; operations.length < size && attempt < size * 4; attempt++) {
    const untried = [...state.undrawn].filter((draw) => !tried.has(draw));
    const wanted = untried.length > 0 ? random.pick(untried) : random.weighted(WEIGHTS);
    tried.add(wanted);
    const { draw, op } = drawOperation(state, wanted);
    if (SOLO.has(op.kind)) {
      if (operations.length > 0) continue;
      state.undrawn.delete(draw);
      return [op];
    }
    const claimed = claimsOf(state.model, op);
    if (claimed.some(([resource, exclusive]) => claims.has(resource) && (exclusive || claims.get(resource)))) {
      if (isPlatformOperation(op)) state.shops.rejected(op);
      continue;
    }
    for (const [resource, exclusive] of claimed) claims.set(resource, (claims.get(resource) ?? false) || exclusive);
    if (drawnAsNamed(draw, op)) state.undrawn.delete(draw);
    if (WEBHOOK_EVENT_DRAWS.has(draw)) {
      state.webhookHistory.push(op);
      if (state.webhookHistory.length > 50) state.webhookHistory.shift();
    }
    operations.push(op);
    if (isPlatformOperation(op)) state.shops.accepted(op);
    // A concurrent retry of the very same request: the copies must converge whatever the order.
    if ((['webhook-order', 'direct-order', 'sync'].includes(op.kind) || isPlatformOperation(op)) && random.chance(0.12)) operations.push(op);
  }
  return operations;
}

/** What an operation touches, exclusively or shared, judged against the state before its burst. */
function claimsOf(model: ReferenceModel, op: Operation): Claim[] {
  const contact = (email: string): Claim[] => {
    const k = emailKey(email);
    const isNew = model.contactOf(email) === undefined;
    // Under a contact limit, which new contact takes the last place depends on arrival: one creator a burst.
    const limited: Claim[] = isNew && model.contactLimit !== null ? [['new-contact', true]] : [];
    return [[`contact:${k}`, isNew], [`touches:${k}`, false], ...limited];
  };
  const ofKey = (key: string) => key.slice(0, key.lastIndexOf('#'));
  switch (op.kind) {
    case 'webhook-order': {
      const out: Claim[] = [[`retry:${op.eventType}|${op.eventId ?? op.order?.externalId ?? ''}`, true]];
      if (op.order && op.order.externalId !== '') out.push([`order:${op.order.externalId}`, true]);
      if (op.email !== undefined) out.push(...contact(op.email));
      const named = op.token === undefined ? undefined : model.tokens.get(op.token);
      if (named !== undefined) out.push([`contact:${ofKey(named)}`, false], [`touches:${ofKey(named)}`, false]);
      return out;
    }
    case 'webhook-customer':
      return [[`retry:customer_updated|${op.eventId}`, true], ...contact(op.email)];
    case 'direct-order':
      return [[`contact:${ofKey(op.contact)}`, false]];
    case 'sync':
      return op.rows.flatMap((row): Claim[] => [[`order:${row.externalId}`, true], ...contact(row.email)]);
    case 'identify':
      return [...contact(op.email), ...(op.anonymousId ? [[`anonymous:${op.anonymousId}`, true] as Claim] : [])];
    case 'anonymous-visit': {
      // A visit of a claimed id belongs to its contact: beside that contact's erasure it would race over the id.
      const owner = model.ownerOfAnonymous(op.anonymousId);
      return [[`anonymous:${op.anonymousId}`, true], ...(owner === undefined ? [] : [[`contact:${ofKey(owner)}`, false] as Claim])];
    }
    case 'event-batch':
      return op.emails.flatMap(contact);
    case 'upsert-contact':
      return contact(op.email);
    case 'set-status':
      return [[`contact:${ofKey(op.contact)}`, true]];
    case 'erase':
      // Under a contact limit an erasure frees a place: it must not race a new contact for it.
      return [[`contact:${ofKey(op.contact)}`, true], ...(model.contactLimit !== null ? [['new-contact', true] as Claim] : [])];
    case 'flow-trigger':
      return [[`contact:${ofKey(op.contact)}`, false]];
    case 'open':
    case 'click': {
      // An engagement and an order of the same contact in one burst would race over attribution.
      const to = model.messages.get(op.message)?.contact;
      return to === undefined ? [] : [[`contact:${ofKey(to)}`, false], [`touches:${ofKey(to)}`, true]];
    }
    case 'send-campaign':
    case 'windows':
    case 'contact-limit':
      return [];
    case 'platform-order':
    case 'platform-customer': {
      if (op.email === null) {
        // An order without an email reads who holds the customer id and phone it names (and that contact's touches).
        const named = op.kind === 'platform-order' && op.order.buyer !== null ? [op.order.buyer.customerOf, op.order.buyer.phoneOf] : [];
        const out: Claim[] = named.flatMap((address): Claim[] => (address === null ? [] : [...contact(address), [`identity:${emailKey(address)}`, true]]));
        if (op.deliveryId !== null) out.push([`retry:${op.platform}|${op.deliveryId}`, true]);
        if (op.kind === 'platform-order') out.push([`order:${op.order.id}`, true]);
        return out;
      }
      // A timed consent may change an existing contact's status: it holds the contact alone.
      const timed = deliveredConsent(op)?.at != null;
      const out: Claim[] = contact(op.email).map(([resource, exclusive]) => [resource, exclusive || (timed && resource.startsWith('contact:'))]);
      // The customer id and phone it writes name a contact for orders without an email.
      out.push([`identity:${emailKey(op.email)}`, false]);
      if (op.deliveryId !== null) out.push([`retry:${op.platform}|${op.deliveryId}`, true]);
      if (op.kind === 'platform-order') out.push([`order:${op.order.id}`, true]);
      return out;
    }
    case 'platform-refund':
    case 'platform-order-deleted': {
      const platform = op.kind === 'platform-refund' ? 'shopify' : 'woocommerce';
      return [[`order:${op.orderId}`, true], ...(op.deliveryId !== null ? [[`retry:${platform}|${op.deliveryId}`, true] as Claim] : [])];
    }
  }
}

/** An address of the run, new or known (possibly erased), in a random letter case. */
function email(state: GeneratorState, fresh = false): string {
  const { random, counters } = state;
  const n = fresh || counters.email === 0 || random.chance(0.15) ? ++counters.email : random.int(1, counters.email);
  return spell(random, `buyer${n}@model.test`);
}

/** An address as written, or (three times in ten) in a random letter case. */
function spell(random: Random, plain: string): string {
  if (!random.chance(0.3)) return plain;
  return [...plain.toLowerCase()].map((ch) => (random.chance(0.5) ? ch.toUpperCase() : ch)).join('');
}

const cents = (random: Random) => random.int(100, 30_000);
const currency = (random: Random) => (random.chance(0.1) ? 'EUR' : 'USD');

/** When a new order was placed: mostly in the last days, sometimes ahead of the clock, sometimes right on a window's edge. */
function orderedAt(state: GeneratorState, owner: string | undefined): number {
  const { random, model } = state;
  const touches = owner === undefined ? [] : model.engagementsOf(owner);
  const roll = random.next();
  if (roll < 0.25 && touches.length > 0) {
    const touch = random.pick(touches);
    const days = random.chance(0.5) ? model.clickDays : model.openDays;
    return touch.at + days * DAY_MS + random.pick([-1, 0, 0, 1]);
  }
  if (roll < 0.35) return model.now + random.int(1, DAY_MS);
  if (roll < 0.5) return model.now - random.int(2 * DAY_MS, 8 * DAY_MS);
  return model.now - random.int(0, 2 * DAY_MS);
}

/** An order of the website webhook or of a sync (platform orders change only through their platform's deliveries). */
function existingOrder(state: GeneratorState): string | null {
  const ids = [...state.model.orders].filter(([, o]) => o.platform === 'website' || o.platform === 'sync').map(([id]) => id);
  return ids.length === 0 ? null : state.random.pick(ids);
}

function eventId(state: GeneratorState): { eventId?: string | number; idField?: 'external_id' | 'id' } {
  const { random, counters } = state;
  const roll = random.next();
  if (roll < 0.2) return {}; // the order's id is the retry key
  if (roll < 0.3) return { eventId: 1000 + ++counters.event };
  return { eventId: `e${++counters.event}`, ...(random.chance(0.15) ? { idField: 'id' as const } : {}) };
}

function webhookOrder(state: GeneratorState, eventType: OrderEventType, owner: { email?: string; token?: string }): Operation {
  const { random, model, counters } = state;
  const known = eventType === 'order_placed' ? (random.chance(0.3) ? existingOrder(state) : null) : random.chance(0.85) ? existingOrder(state) : null;
  const externalId = known ?? `o${++counters.order}`;
  const isNew = !model.orders.has(externalId);
  const ownerKey = owner.email !== undefined ? model.contactOf(owner.email) : owner.token !== undefined ? model.tokens.get(owner.token) : undefined;
  const order: WebhookOrder = { externalId, status: eventType };
  if (eventType === 'order_placed' || isNew ? eventType !== 'cancelled_order' || random.chance(0.8) : random.chance(0.4)) {
    order.total = cents(random);
    order.currency = currency(random);
  }
  if (isNew || random.chance(0.3)) {
    const at = orderedAt(state, ownerKey);
    if (random.chance(0.1)) {
      order.orderedAt = Math.floor(at / 1000) * 1000;
      order.plainTime = true;
    } else order.orderedAt = at;
  }
  if (eventType === 'refunded_order') {
    const base = order.total ?? model.orders.get(externalId)?.total ?? 10_000;
    const roll = random.next();
    if (roll < 0.45) order.refundAmount = random.int(1, Math.max(1, Math.floor(base / 2)));
    else if (roll < 0.8) order.refundedAmount = random.int(0, base + 500);
  }
  return { kind: 'webhook-order', eventType, ...owner, ...eventId(state), order };
}

function pickLiveContact(state: GeneratorState): string | null {
  const live = state.model.liveContacts();
  return live.length === 0 ? null : state.random.pick(live).key;
}

/** A live contact's address in a random letter case; null when there is none. */
function liveAddress(state: GeneratorState): string | null {
  const contact = pickLiveContact(state);
  return contact === null ? null : spell(state.random, state.model.contacts.get(contact)!.email);
}

/** Any contact the run has made, erased ones too (their requests must change nothing). */
function pickAnyContact(state: GeneratorState): string | null {
  const all = [...state.model.contacts.keys()];
  if (all.length === 0) return null;
  return state.random.chance(0.9) ? (pickLiveContact(state) ?? state.random.pick(all)) : state.random.pick(all);
}

function syncOperation(state: GeneratorState, via: 'api' | 'cli'): Extract<Operation, { kind: 'sync' }> {
  const { random, model, counters } = state;
  if (state.syncFiles.length > 0 && random.chance(0.4)) {
    // A re-run of an earlier file, with some totals corrected.
    const rows = random.pick(state.syncFiles).map((row) => (random.chance(0.3) ? { ...row, total: cents(random) } : row));
    return { kind: 'sync', via, rows };
  }
  const rows: SyncRow[] = [];
  const count = via === 'cli' ? random.int(3, 12) : random.int(1, 5);
  for (let i = 0; i < count; i++) {
    const externalId = random.chance(0.3) ? (existingOrder(state) ?? `o${++counters.order}`) : `o${++counters.order}`;
    if (rows.some((r) => r.externalId === externalId)) continue;
    rows.push(syncRow(state, email(state), externalId));
  }
  state.syncFiles.push(rows);
  return { kind: 'sync', via, rows };
}

function syncRow(state: GeneratorState, address: string, externalId: string): SyncRow {
  const { random, model } = state;
  return { email: address, externalId, total: cents(random), currency: currency(random), status: 'paid', orderedAt: orderedAt(state, model.contactOf(address)) };
}

/**
 * A sync file of new orders of addresses without a contact, under a contact limit that is reached: every row is
 * refused. A later re-run of it, with places free, takes them.
 */
function refusedSync(state: GeneratorState): Operation {
  const rows = Array.from({ length: state.random.int(1, 5) }, () => syncRow(state, addressWithoutContact(state), `o${++state.counters.order}`));
  state.syncFiles.push(rows);
  return { kind: 'sync', via: 'cli', rows };
}

/** An address no live contact has: an erased contact's (now and then), else one never seen. */
function addressWithoutContact(state: GeneratorState): string {
  const { random, model } = state;
  const erased = [...model.contacts.values()].filter((c) => c.erased && model.contactOf(c.email) === undefined);
  return erased.length > 0 && random.chance(0.3) ? spell(random, random.pick(erased).email) : email(state, true);
}

function eventBatch(state: GeneratorState, via: 'api' | 'cli'): Extract<Operation, { kind: 'event-batch' }> {
  const emails: string[] = [];
  for (let i = state.random.int(1, via === 'cli' ? 10 : 4); i > 0; i--) emails.push(email(state));
  return { kind: 'event-batch', via, emails };
}

/** An operation of the drawn kind, or of its fallback's while the run has nothing for that kind; and the kind it is. */
function drawOperation(state: GeneratorState, draw: Draw): { draw: Draw; op: Operation } {
  const op = operationOf(state, draw);
  return op !== null ? { draw, op } : drawOperation(state, FALLBACKS[draw]!);
}

/** An operation of this kind; null when the run has nothing for it yet. */
function operationOf(state: GeneratorState, draw: Draw): Operation | null {
  const { random, model, counters } = state;
  const statuses: SubscriptionStatus[] = ['subscribed', 'unsubscribed', 'non_subscribed'];
  switch (draw) {
    case 'placed':
    case 'fulfilled':
    case 'cancelled':
    case 'refunded': {
      const eventType = ({ placed: 'order_placed', fulfilled: 'fulfilled_order', cancelled: 'cancelled_order', refunded: 'refunded_order' } as const)[draw];
      return webhookOrder(state, eventType, { email: email(state) });
    }
    case 'retry':
      return state.webhookHistory.length > 0 ? random.pick(state.webhookHistory) : null;
    case 'tokenOrder': {
      const tokens = [...model.tokens.keys()];
      const token = tokens.length > 0 && random.chance(0.85) ? random.pick(tokens) : 'forged';
      // Sometimes an email too: the email decides the owner.
      return webhookOrder(state, 'order_placed', { token, ...(random.chance(0.2) ? { email: email(state) } : {}) });
    }
    case 'noOrder': {
      const order = random.chance(0.5) ? null : { externalId: '', total: cents(random) };
      return { kind: 'webhook-order', eventType: 'order_placed', email: email(state, true), ...eventId(state), order };
    }
    case 'customer':
      return { kind: 'webhook-customer', email: email(state), eventId: `c${++counters.event}` };
    case 'direct': {
      const contact = pickAnyContact(state);
      if (contact === null) return null;
      // external_id is for reference only: sometimes a webhook order's, sometimes another direct order's.
      const externalId = random.chance(0.5) ? undefined : random.chance(0.5) ? (existingOrder(state) ?? 'd1') : `d${random.int(1, 5)}`;
      return { kind: 'direct-order', contact, ...(externalId ? { externalId } : {}), total: cents(random), currency: currency(random), orderedAt: model.now - random.int(0, 3 * DAY_MS) };
    }
    case 'syncApi':
      return syncOperation(state, 'api');
    case 'syncCli':
      return syncOperation(state, 'cli');
    case 'identify': {
      const anonymousId = random.chance(0.6) ? `anon${random.chance(0.5) || counters.anonymous === 0 ? ++counters.anonymous : random.int(1, counters.anonymous)}` : undefined;
      return { kind: 'identify', email: email(state), ...(anonymousId ? { anonymousId } : {}) };
    }
    case 'visit':
      return { kind: 'anonymous-visit', anonymousId: `anon${counters.anonymous === 0 || random.chance(0.3) ? ++counters.anonymous : random.int(1, counters.anonymous)}` };
    case 'eventBatch':
      return eventBatch(state, 'api');
    case 'upsertContact':
      return { kind: 'upsert-contact', email: email(state), ...(random.chance(0.7) ? { status: random.pick(statuses) } : {}) };
    case 'setStatus': {
      const contact = pickAnyContact(state);
      return contact === null ? null : { kind: 'set-status', contact, status: random.chance(0.6) ? 'subscribed' : random.pick(statuses) };
    }
    case 'erase': {
      const contact = pickLiveContact(state);
      return contact === null ? null : { kind: 'erase', contact };
    }
    case 'campaign':
      return campaignOperation(counters);
    case 'flowTrigger': {
      const contact = pickAnyContact(state);
      return contact === null ? null : { kind: 'flow-trigger', contact, flow: random.pick(Object.keys(FLOWS)) };
    }
    case 'open':
    case 'click': {
      const messages = [...model.messages.keys()];
      if (messages.length === 0) return null;
      // Mostly messages still delivered; now and then one whose contact was erased.
      const live = messages.filter((id) => model.liveMessage(id) !== null);
      return { kind: draw, message: live.length > 0 && random.chance(0.95) ? random.pick(live) : random.pick(messages) };
    }
    case 'windows':
      return { kind: 'windows', clickDays: random.int(1, 7), openDays: random.int(1, 5) };
    case 'shopifyOrder':
    case 'wooOrder':
      return state.shops.orderEvent(draw === 'shopifyOrder' ? 'shopify' : 'woocommerce');
    case 'shopifyCustomer':
    case 'wooCustomer':
      return state.shops.customerEvent(draw === 'shopifyCustomer' ? 'shopify' : 'woocommerce');
    case 'platformLate':
      return state.shops.late();
    case 'platformRetry':
      return state.shops.retry();
    case 'contactLimit':
      // A limit at or just above today's count (new contacts refused, or a few more let in), or none.
      return { kind: 'contact-limit', limit: model.contactLimit === null || random.chance(0.3) ? model.liveContacts().length + random.int(0, 2) : null };
  }
}
