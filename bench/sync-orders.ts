import { spawn } from 'node:child_process';
import { createWriteStream } from 'node:fs';
import { once } from 'node:events';
import { readPeakRssKib } from './processes.js';

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

export interface MeasuredRun<T> {
  seconds: number;
  peakRssKib: number | null;
  summary: T;
}

export type SyncRun = MeasuredRun<{ rows: number; inserted: number; updated: number; skipped: number; errors: unknown[] }>;

/** Runs `emk <command…> --json` as its own process, timing it and sampling its peak RSS until it exits. */
export function runMeasured<T>(emk: string, command: string[], env: NodeJS.ProcessEnv, cwd: string): Promise<MeasuredRun<T>> {
  return new Promise((resolve, reject) => {
    const started = performance.now();
    const child = spawn(process.execPath, [emk, ...command, '--json'], { cwd, env, stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    let peak: number | null = null;
    child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
    child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
    // VmHWM is gone once the process exits: sample it while it runs.
    const sampler = setInterval(() => {
      const rss = child.pid === undefined ? null : readPeakRssKib(child.pid);
      if (rss !== null) peak = Math.max(peak ?? 0, rss);
    }, 50);
    child.once('exit', (code) => {
      clearInterval(sampler);
      const seconds = (performance.now() - started) / 1000;
      if (code !== 0) return reject(new Error(`emk ${command[0]} exited ${code}: ${stderr.slice(-500)}`));
      try {
        resolve({ seconds, peakRssKib: peak, summary: JSON.parse(stdout) as T });
      } catch (error) {
        reject(error);
      }
    });
  });
}

export const runSync = (emk: string, args: string[], env: NodeJS.ProcessEnv, cwd: string): Promise<SyncRun> =>
  runMeasured(emk, ['sync-orders', ...args], env, cwd);
