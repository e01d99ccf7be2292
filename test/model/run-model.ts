import { closeHarness, createHarness } from '../helpers/harness.js';
import type { DialectName } from '../helpers/test-databases.js';
import { EmkDriver } from './emk-driver.js';
import { generateBursts } from './generator.js';
import { describeBursts, type Burst } from './operations.js';
import { ReferenceModel } from './reference-model.js';
import { compareSnapshots } from './snapshot.js';

export interface ModelRunOptions {
  seed: number;
  operations: number;
  dialect: DialectName;
  /** Compare after every n-th burst (and after the last); 1 in the short test. */
  checkEvery?: number;
  /** Progress lines (long runs). */
  log?: (line: string) => void;
}

export interface ModelRunResult {
  seed: number;
  dialect: DialectName;
  operations: number;
  bursts: number;
  checks: number;
  ms: number;
  /** Empty when emk agreed with the model throughout. */
  discrepancies: string[];
  /** The seed, the shortest failing prefix as an operation list and its discrepancies; null when none. */
  report: string | null;
}

interface Replay {
  discrepancies: string[];
  /** Index of the burst after which the first discrepancy was seen. */
  failedAt: number | null;
  /** The last burst after which emk and the model agreed. */
  lastAgreed: number;
  checks: number;
}

/** One burst: the model applies it first, so emk's answers to its imports are held to the model's. */
export async function applyBurst(driver: EmkDriver, model: ReferenceModel, burst: Burst): Promise<void> {
  model.advance(burst.advanceMs);
  const answers = burst.operations.map((op) => model.apply(op));
  await driver.run(burst, answers);
}

/** Applies bursts to a fresh database and to a fresh model, comparing as it goes; stops at the first discrepancy. */
async function replay(bursts: Burst[], dialect: DialectName, checkEvery: number, log?: (line: string) => void): Promise<Replay> {
  const harness = await createHarness(dialect);
  try {
    const driver = await EmkDriver.create(harness);
    const model = new ReferenceModel();
    let lastAgreed = -1;
    let checks = 0;
    let done = 0;
    let applyMs = 0;
    let observeMs = 0;
    for (let b = 0; b < bursts.length; b++) {
      const burst = bursts[b]!;
      const applyStart = Date.now();
      await applyBurst(driver, model, burst);
      applyMs += Date.now() - applyStart;
      done += burst.operations.length;
      if ((b + 1) % checkEvery !== 0 && b !== bursts.length - 1 && driver.problems.length === 0) continue;
      checks++;
      const observeStart = Date.now();
      const discrepancies = [...driver.problems, ...compareSnapshots(model.snapshot(), await driver.observe(model.now))];
      observeMs += Date.now() - observeStart;
      if (discrepancies.length > 0) return { discrepancies, failedAt: b, lastAgreed, checks };
      lastAgreed = b;
      if (log && checks % 20 === 0) log(`${done} operations, ${checks} checks, all agree (${Math.round(applyMs / 1000)} s applying, ${Math.round(observeMs / 1000)} s comparing)`);
    }
    return { discrepancies: [], failedAt: null, lastAgreed, checks };
  } finally {
    await closeHarness(harness);
  }
}

/** The bursts up to and including burst `b`, its operations cut to the first `n`. */
const prefix = (bursts: Burst[], b: number, n: number): Burst[] => [...bursts.slice(0, b), { ...bursts[b]!, operations: bursts[b]!.operations.slice(0, n) }];

/**
 * The shortest prefix that still fails, replayed on fresh databases: first the burst (between the last check
 * that agreed and the one that did not), then the operations inside that burst. Null when a replay of the
 * whole failing prefix agrees (the failure depends on timing, not on the operations alone).
 */
async function shortestFailingPrefix(bursts: Burst[], failed: Replay, dialect: DialectName): Promise<{ bursts: Burst[]; discrepancies: string[] } | null> {
  const fails = async (candidate: Burst[]) => (await replay(candidate, dialect, Number.MAX_SAFE_INTEGER)).discrepancies;
  let high = failed.failedAt!;
  let highDiscrepancies = await fails(bursts.slice(0, high + 1));
  if (highDiscrepancies.length === 0) return null;
  let low = failed.lastAgreed; // agrees
  while (high - low > 1) {
    const mid = Math.floor((low + high) / 2);
    const found = await fails(bursts.slice(0, mid + 1));
    if (found.length > 0) [high, highDiscrepancies] = [mid, found];
    else low = mid;
  }
  let opsHigh = bursts[high]!.operations.length;
  let opsLow = 0;
  while (opsHigh - opsLow > 1) {
    const mid = Math.floor((opsLow + opsHigh) / 2);
    const found = await fails(prefix(bursts, high, mid));
    if (found.length > 0) [opsHigh, highDiscrepancies] = [mid, found];
    else opsLow = mid;
  }
  return { bursts: prefix(bursts, high, opsHigh), discrepancies: highDiscrepancies };
}

/** One seeded run against emk on one database; on a discrepancy, the shortest failing prefix is found and told. */
export async function runModel(options: ModelRunOptions): Promise<ModelRunResult> {
  const { seed, operations, dialect, checkEvery = 1, log } = options;
  const started = Date.now();
  const bursts = generateBursts(seed, operations);
  const run = await replay(bursts, dialect, checkEvery, log);
  const result = {
    seed,
    dialect,
    operations: bursts.reduce((n, b) => n + b.operations.length, 0),
    bursts: bursts.length,
    checks: run.checks,
    discrepancies: run.discrepancies,
  };
  if (run.failedAt === null) return { ...result, ms: Date.now() - started, report: null };
  log?.(`discrepancy after burst ${run.failedAt}:\n  ${run.discrepancies.slice(0, 20).join('\n  ')}\nshrinking`);
  const shortest = await shortestFailingPrefix(bursts, run, dialect);
  const reproduce = `npm run model -- --ops ${operations} --seed ${seed} --database ${dialect}`;
  const report = [
    `emk disagrees with the model: seed ${seed}, ${dialect} (reproduce: ${reproduce})`,
    ...run.discrepancies.slice(0, 20).map((d) => `  ${d}`),
    shortest === null
      ? `a replay of the first ${run.failedAt + 1} bursts on a fresh database agreed: the failure depends on timing`
      : [
          `shortest failing prefix (${shortest.bursts.reduce((n, b) => n + b.operations.length, 0)} operations):`,
          describeBursts(shortest.bursts),
          'its discrepancies:',
          ...shortest.discrepancies.slice(0, 20).map((d) => `  ${d}`),
        ].join('\n'),
  ].join('\n');
  return { ...result, ms: Date.now() - started, report };
}
