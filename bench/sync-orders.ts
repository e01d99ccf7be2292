import { createWriteStream } from 'node:fs';
import { once } from 'node:events';
import { openDatabase } from '../src/domain/db/database.js';
import { uuidv7 } from '../src/domain/shared/ids.js';
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

/**
 * The machine's ceiling for the sync's own writes: plain knex multi-row inserts of ready-made orders shaped like
 * the generated file's (3 items each, over the workspace's contacts), 1000 orders and their items a statement
 * each, one transaction per 10 of them, no lookups, no attribution, no contact totals, no aggregates or facts.
 * What `emk sync-orders` is compared with; the probe orders are deleted afterwards.
 */
export async function measureSyncCeiling(databaseUrl: string, workspaceId: string, orders: number): Promise<number> {
  const db = openDatabase(databaseUrl);
  try {
    const contacts = (await db.knex('contacts').where({ workspace_id: workspaceId }).select('id')).map((c) => c.id as string);
    const start = Date.parse('2026-01-01T00:00:00Z');
    const now = Date.now();
    const make = (i: number) => {
      const order = {
        id: uuidv7(now),
        workspace_id: workspaceId,
        contact_id: contacts[i % contacts.length]!,
        platform: 'shopify',
        integration_id: null,
        origin: 'sync',
        upsert_key: `ceiling-${i}`,
        external_id: `ceiling-${i}`,
        order_number: String(100000 + i),
        order_number_key: String(100000 + i),
        total_amount: 41.5,
        currency: 'EUR',
        status: 'paid',
        ordered_at: start + i * 60_000,
        attributed_campaign_id: null,
        attributed_flow_id: null,
        attributed_message_id: null,
        attribution_kind: null,
        shipping_status: null,
        refunded_amount: 0,
        cancelled_at: null,
        created_at: now,
        updated_at: now,
      };
      const items = [0, 1, 2].map((k) => ({
        order_id: order.id,
        workspace_id: workspaceId,
        external_id: `sku-${(i * 7 + k * 13) % 5000}`,
        title: `Product ${k}`,
        quantity: 1 + (k % 2),
        price: 9.5 + k,
        position: k,
        ordered_at: order.ordered_at,
      }));
      return { order, items };
    };
    const started = performance.now();
    for (let i = 0; i < orders; i += 10_000) {
      await db.knex.transaction(async (trx) => {
        for (let j = i; j < Math.min(orders, i + 10_000); j += 1000) {
          const made = Array.from({ length: Math.min(1000, orders - j) }, (_, k) => make(j + k));
          await trx('orders').insert(made.map((m) => m.order));
          await trx('order_items').insert(made.flatMap((m) => m.items));
        }
      });
    }
    const rate = orders / ((performance.now() - started) / 1000);
    const probes = db.knex('orders').where({ workspace_id: workspaceId }).where('upsert_key', 'like', 'ceiling-%').select('id');
    await db.knex('order_items').whereIn('order_id', probes).delete();
    await db.knex('orders').where({ workspace_id: workspaceId }).where('upsert_key', 'like', 'ceiling-%').delete();
    return rate;
  } finally {
    await db.close();
  }
}

export type SyncRun = MeasuredRun<{ rows: number; inserted: number; updated: number; skipped: number; errors: unknown[] }>;

/** Runs `emk <command…> --json` as its own process, timing it and sampling its peak RSS until it exits. */
export const runMeasured = <T>(emk: string, command: string[], env: NodeJS.ProcessEnv, cwd: string): Promise<MeasuredRun<T>> =>
  runMeasuredNode<T>(`emk ${command[0]}`, [emk, ...command, '--json'], env, cwd);

export const runSync = (emk: string, args: string[], env: NodeJS.ProcessEnv, cwd: string): Promise<SyncRun> =>
  runMeasured(emk, ['sync-orders', ...args], env, cwd);
