import { describe, expect, it } from 'vitest';
import { closeHarness, createHarness } from './helpers/harness.js';
import { DIALECTS } from './helpers/test-databases.js';
import { EmkDriver } from './model/emk-driver.js';
import { generateBursts } from './model/generator.js';
import { ReferenceModel } from './model/reference-model.js';
import { runModel } from './model/run-model.js';
import { compareSnapshots, type Snapshot } from './model/snapshot.js';

/**
 * Money and identity under random operations (docs/model-test.md): emk must agree with the reference model after
 * every burst. `npm run model -- --ops N --seed S [--database sqlite|postgres]` sets EMK_MODEL_OPS / EMK_MODEL_SEED /
 * EMK_MODEL_DATABASE for the long run; without them this file runs short sequences.
 */
const LONG_OPS = Number(process.env.EMK_MODEL_OPS ?? 0);
const LONG_SEED = Number(process.env.EMK_MODEL_SEED ?? 1);
const ONLY = process.env.EMK_MODEL_DATABASE;
const SHORT_SEEDS = [17, 2026];
const SHORT_OPS = 150;

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

    it('the comparator catches a wrong owner, credit, revenue, contact, report or platform order', async () => {
      const harness = await createHarness(dialect);
      try {
        const driver = await EmkDriver.create(harness);
        const model = new ReferenceModel();
        for (const burst of generateBursts(5, 60)) {
          await driver.run(burst);
          model.advance(burst.advanceMs);
          for (const op of burst.operations) model.apply(op);
        }
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
