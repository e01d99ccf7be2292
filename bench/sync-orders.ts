import { createWriteStream } from 'node:fs';
import { once } from 'node:events';
import { runMeasuredNode, type MeasuredRun } from './processes.js';

/** Writes `orders` JSON Lines orders of 3 items each over `customers` customers (about 300 bytes a line). */
export async function writeOrdersFile(path: string, orders: number, customers: number): Promise<void> {
  const out = createWriteStream(path);
  const start = Date.parse('2026-01-01T00:00:00Z');
  for (let i = 0; i < orders; i++) {
    const items = [0, 1, 2].map((k) => ({ external_id: `sku-${(i * 7 + k * 13) % 5000}`, title: `Product ${k}`, quantity: 1 + (k % 2), price: 9.5 + k }));
    const line = JSON.stringify({
      email: `customer-${i % customers}@bench.test`,
      external_id: `order-${i}`,
      order_number: String(100000 + i),
      total_amount: 41.5,
      currency: 'EUR',
      status: 'paid',
      ordered_at: new Date(start + i * 60_000).toISOString(),
      platform: 'shopify',
      items,
    });
    if (!out.write(`${line}\n`)) await once(out, 'drain');
  }
  out.end();
  await once(out, 'finish');
}

export type SyncRun = MeasuredRun<{ rows: number; inserted: number; updated: number; skipped: number; errors: unknown[] }>;

/** Runs `emk <command…> --json` as its own process, timing it and sampling its peak RSS until it exits. */
export const runMeasured = <T>(emk: string, command: string[], env: NodeJS.ProcessEnv, cwd: string): Promise<MeasuredRun<T>> =>
  runMeasuredNode<T>(`emk ${command[0]}`, [emk, ...command, '--json'], env, cwd);

export const runSync = (emk: string, args: string[], env: NodeJS.ProcessEnv, cwd: string): Promise<SyncRun> =>
  runMeasured(emk, ['sync-orders', ...args], env, cwd);
