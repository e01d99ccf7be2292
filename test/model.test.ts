import { execFileSync } from 'node:child_process';
import { describe, expect, it } from 'vitest';
import { closeHarness, createHarness } from './helpers/harness.js';
import { DIALECTS } from './helpers/test-databases.js';
import { EmkDriver } from './model/emk-driver.js';
import { generateBursts } from './model/generator.js';
import { isPlatformOperation, type Burst, type Operation } from './model/operations.js';
import { ReferenceModel, type ImportAnswer } from './model/reference-model.js';
import { applyBurst, runModel } from './model/run-model.js';
import { compareSnapshots, type Snapshot } from './model/snapshot.js';

/**
 * Money and identity under random operations (docs/model-test.md): emk must agree with the reference model after
 * every burst. `npm run model -- --ops N --seed S [--database sqlite|postgres]` sets EMK_MODEL_OPS / EMK_MODEL_SEED /
 * EMK_MODEL_DATABASE for the long run; without them this file runs short sequences and the commit's run.
 */
const LONG_OPS = Number(process.env.EMK_MODEL_OPS ?? 0);
const LONG_SEED = Number(process.env.EMK_MODEL_SEED ?? 1);
const ONLY = process.env.EMK_MODEL_DATABASE;
const SHORT_SEEDS = [17, 2026];
const SHORT_OPS = 150;
/** The commit's run: longer than the short ones, with a seed of its own for each commit (docs/model-test.md). */
const COMMIT_OPS = 2000;
const COMMIT_SEED = commitSeed();

/** The seed of the commit checked out (its hash's first 8 hex digits); outside a git checkout, today's date. */
function commitSeed(): { seed: number; from: string } {
  try {
    const head = execFileSync('git', ['rev-parse', 'HEAD'], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] }).trim();
    return { seed: Number.parseInt(head.slice(0, 8), 16), from: `commit ${head.slice(0, 7)}` };
  } catch {
    const day = new Date().toISOString().slice(0, 10);
    return { seed: Number(day.replaceAll('-', '')), from: `the date ${day}, not a git checkout` };
  }
}

/**
 * What every short run must meet, whatever its seed (the generator's opening and the CLI's turns): each kind of
 * operation, and each CLI import with both exit codes. A shop's refunds and trash come with its orders' lives,
 * which the longer runs go through.
 */
const KINDS = [
  'webhook order_placed', 'webhook fulfilled_order', 'webhook cancelled_order', 'webhook refunded_order', 'webhook with a token',
  'webhook without an order', 'webhook retry', 'webhook customer_updated', 'direct-order', 'sync api', 'emk sync-orders exit 0',
  'emk sync-orders exit 1', 'identify', 'anonymous-visit', 'event-batch api', 'emk events import exit 0', 'emk events import exit 1',
  'upsert-contact', 'set-status', 'erase', 'send-campaign', 'flow-trigger', 'open', 'click', 'windows', 'contact limit',
  'shopify order', 'woocommerce order', 'shopify customer', 'woocommerce customer', 'platform redelivery', 'concurrent copy',
  'platform order in another currency', 'platform order without an email', 'order kept without a contact', 'order without an email to a known contact',
];
/**
 * A join needs an order kept without a contact, then its customer's account, each delivery of which may be held
 * back or refused by its burst: met by the short runs of `npm test`, and by nearly every other short sequence.
 */
const JOIN = 'order without a contact joins one';

function kindOf(op: Operation, answer: ImportAnswer | void): string {
  switch (op.kind) {
    case 'webhook-order':
      if (op.order === null || op.order.externalId === '') return 'webhook without an order';
      return op.token !== undefined ? 'webhook with a token' : `webhook ${op.eventType}`;
    case 'webhook-customer':
      return 'webhook customer_updated';
    case 'sync':
      return op.via === 'api' ? 'sync api' : `emk sync-orders exit ${answer!.exitCode}`;
    case 'event-batch':
      return op.via === 'api' ? 'event-batch api' : `emk events import exit ${answer!.exitCode}`;
    case 'contact-limit':
      return op.limit === null ? 'contact limit lifted' : 'contact limit';
    case 'platform-order':
    case 'platform-customer':
      return `${op.platform} ${op.kind === 'platform-order' ? 'order' : 'customer'}`;
    case 'platform-refund':
      return 'shopify refund';
    case 'platform-order-deleted':
      return 'woocommerce trash';
    default:
      return op.kind;
  }
}

/** What a platform order is besides its platform's: paid in another currency, without an email and whom it went to. */
function platformOrderKinds(model: ReferenceModel, op: Operation): string[] {
  if (op.kind !== 'platform-order') return [];
  const kinds: string[] = [];
  if (op.order.presentment !== null) kinds.push('platform order in another currency');
  if (op.email === null) {
    kinds.push('platform order without an email');
    const stored = model.orders.get(op.order.id);
    if (stored) kinds.push(stored.owner === null ? 'order kept without a contact' : 'order without an email to a known contact');
  }
  return kinds;
}

/** The kinds a sequence meets, its imports' exit codes as the model answers them. */
function kindsMet(bursts: Burst[]): Set<string> {
  const model = new ReferenceModel();
  const met = new Set<string>();
  const sentBefore = new Set<Operation>();
  for (const burst of bursts) {
    model.advance(burst.advanceMs);
    burst.operations.forEach((op, i) => {
      const joins = model.joins;
      met.add(kindOf(op, model.apply(op)));
      for (const kind of platformOrderKinds(model, op)) met.add(kind);
      if (model.joins > joins) met.add('order without a contact joins one');
      if (sentBefore.has(op)) met.add(isPlatformOperation(op) ? 'platform redelivery' : 'webhook retry');
      if (burst.operations.indexOf(op) < i) met.add('concurrent copy');
    });
    for (const op of burst.operations) sentBefore.add(op);
  }
  return met;
}

describe.skipIf(LONG_OPS > 0)('the generator', () => {
  it('every short run meets each kind of operation, and each CLI import with both exit codes', () => {
    const withoutJoin: number[] = [];
    for (const seed of [...SHORT_SEEDS, ...Array.from({ length: 100 }, (_, i) => i + 1)]) {
      const met = kindsMet(generateBursts(seed, SHORT_OPS));
      expect(KINDS.filter((kind) => !met.has(kind)), `seed ${seed}: kinds not met`).toEqual([]);
      if (!met.has(JOIN)) withoutJoin.push(seed);
    }
    expect(withoutJoin.filter((seed) => SHORT_SEEDS.includes(seed)), 'short runs without a join').toEqual([]);
    expect(withoutJoin.length, `sequences without a join: ${withoutJoin.join(', ')}`).toBeLessThanOrEqual(5);
  });
});

for (const dialect of DIALECTS.filter((d) => !ONLY || d === ONLY)) {
  describe(`reference model [${dialect}]`, () => {
    if (LONG_OPS > 0) {
      it(`${LONG_OPS} operations, seed ${LONG_SEED}`, async () => {
        const result = await runModel({ seed: LONG_SEED, operations: LONG_OPS, dialect, checkEvery: 10, log: (line) => console.log(`[${dialect}] ${line}`) });
        console.log(JSON.stringify({ dialect, seed: result.seed, operations: result.operations, bursts: result.bursts, checks: result.checks, seconds: result.ms / 1000, discrepancies: result.discrepancies.length }));
        expect(result.report, result.report ?? '').toBeNull();
      }, 6 * 3_600_000);
      return;
    }

    for (const seed of SHORT_SEEDS) {
      it(`${SHORT_OPS} random operations agree with the model (seed ${seed})`, async () => {
        const result = await runModel({ seed, operations: SHORT_OPS, dialect });
        expect(result.report, result.report ?? '').toBeNull();
        expect(result.checks).toBe(result.bursts);
      }, 300_000);
    }

    it(`${COMMIT_OPS} operations, seed ${COMMIT_SEED.seed} (from ${COMMIT_SEED.from}; replay: npm run model -- --ops ${COMMIT_OPS} --seed ${COMMIT_SEED.seed} --database ${dialect})`, async () => {
      const result = await runModel({ seed: COMMIT_SEED.seed, operations: COMMIT_OPS, dialect, checkEvery: 10 });
      expect(result.report, result.report ?? '').toBeNull();
    }, 3_600_000);

    it('the comparator catches a wrong owner, credit, revenue, contact, report, store total or platform order', async () => {
      const harness = await createHarness(dialect);
      try {
        const driver = await EmkDriver.create(harness);
        const model = new ReferenceModel();
        for (const burst of generateBursts(5, 60)) await applyBurst(driver, model, burst);
        const actual = await driver.observe(model.now);
        const expected = model.snapshot();
        expect(compareSnapshots(expected, actual)).toEqual([]);
        const [contactKey] = Object.keys(expected.contacts);
        const [orderKey] = Object.keys(expected.orders);
        const platformOrderKey = Object.keys(expected.orders).find((k) => ['shopify', 'woocommerce'].includes(expected.orders[k]!.platform));
        expect(platformOrderKey, 'the sequence has a Shopify or WooCommerce order').toBeDefined();
        const tamperings: Array<(s: Snapshot) => void> = [
          (s) => void (s.contacts[contactKey!]!.revenue += 1),
          (s) => void delete s.contacts[contactKey!],
          (s) => void (s.orders[orderKey!]!.owner = 'someone-else#1'),
          (s) => void (s.orders[orderKey!]!.credit = 'campaign:99'),
          (s) => void (s.senderReports['flow:1']!.orders += 1),
          (s) => void s.revenueReport.push('all campaign:99 USD orders=1 revenue=100'),
          (s) => void s.directOrders.pop(),
          (s) => void (s.orders[platformOrderKey!]!.refunded += 1),
          (s) => void (s.orders[platformOrderKey!]!.status = 'pending'),
          (s) => void (s.contacts[contactKey!]!.source = 'woocommerce:elsewhere.test'),
          (s) => void (s.orders[orderKey!]!.owner = null),
          (s) => void (s.orders[platformOrderKey!]!.presentmentCurrency = 'GBP'),
          (s) => void (s.revenueReport = s.revenueReport.filter((line) => !/^all total /.test(line))),
        ];
        for (const tamper of tamperings) {
          const wrong = model.snapshot();
          tamper(wrong);
          expect(compareSnapshots(wrong, actual).length, tamper.toString()).toBeGreaterThan(0);
        }
      } finally {
        await closeHarness(harness);
      }
    }, 120_000);
  });
}
