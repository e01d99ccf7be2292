#!/usr/bin/env node
// `npm run model -- --ops 10000 --seed S [--database sqlite|postgres]`: the long model run (docs/model-test.md).
// It runs test/model.test.ts under vitest (which owns the test databases) with the run's settings in the environment.
import { spawnSync } from 'node:child_process';
import { parseArgs } from 'node:util';

const usage = 'usage: npm run model -- --ops N --seed S [--database sqlite|postgres]';
let values;
try {
  ({ values } = parseArgs({ options: { ops: { type: 'string', default: '10000' }, seed: { type: 'string', default: '1' }, database: { type: 'string' } } }));
} catch (error) {
  console.error(`${error.message}\n${usage}`);
  process.exit(2);
}
const ops = Number(values.ops);
const seed = Number(values.seed);
if (!Number.isInteger(ops) || ops < 1 || !Number.isInteger(seed) || (values.database && !['sqlite', 'postgres'].includes(values.database))) {
  console.error(usage);
  process.exit(2);
}
if (values.database === 'postgres' && !process.env.EMK_TEST_DATABASE_URL) {
  console.error('--database postgres needs EMK_TEST_DATABASE_URL (e.g. postgres://postgres@127.0.0.1:5432/test)');
  process.exit(2);
}
const env = { ...process.env, EMK_MODEL_OPS: String(ops), EMK_MODEL_SEED: String(seed), ...(values.database ? { EMK_MODEL_DATABASE: values.database } : {}) };
const run = spawnSync('vitest', ['run', 'test/model.test.ts', '--reporter', 'verbose'], { stdio: 'inherit', env });
process.exit(run.status ?? 1);
