import { createServices } from '../src/domain/create-services.js';
import { openDatabase } from '../src/domain/db/database.js';
import { writeCounters } from '../src/domain/db/write-batcher.js';
import { cpuBetween, cpuSnapshot, type CpuSplit } from './cpu-split.js';
import type { LoadResult } from './load.js';
import type { WriteCounters } from './processes.js';

/** One request's domain call, as its route makes it after authentication (the body as the client sent it). */
export type DomainCall = (services: ReturnType<typeof createServices>, body: string) => Promise<unknown>;

export interface WritePathRun {
  result: LoadResult;
  writes: WriteCounters;
  cpu: CpuSplit | null;
  /** The worker's share of the same writes: draining the trigger facts the calls (warm-up included) recorded. */
  consumed: { calls: number; facts: number; seconds: number; cpu: CpuSplit | null };
}

/**
 * The callers and the drain run on this process's main thread, which the snapshot counts as the server's: there is
 * no separate load generator (its reading, this process's own CPU, would count the same seconds twice).
 */
const withoutLoadGenerator = (cpu: CpuSplit | null): CpuSplit | null => cpu && { ...cpu, loadGenerator: 0 };

/**
 * The route's write path without HTTP: `connections` callers in this process, each calling the route's domain
 * function again as soon as its last call returned (as autocannon's connections do), for `seconds`. No
 * sockets, no Fastify, no load generator on the machine: the rate it reaches bounds the route's, and its ratio
 * to the bare route bounds the route's ratio. Its CPU split tells what bounds the write path itself. Then the
 * worker's part of the same writes: the trigger facts they recorded, drained as the worker drains them (no flows
 * or segments defined: consuming a fact is claiming it and marking it processed).
 */
export async function runWritePath(
  databaseUrl: string,
  call: DomainCall,
  nextBody: (client: number) => string,
  options: { connections: number; seconds: number; warmupSeconds: number },
): Promise<WritePathRun> {
  const services = createServices(openDatabase(databaseUrl));
  const pendingFacts = async () => Number((await services.db.knex('trigger_outbox').whereNull('processed_at').count({ n: '*' }))[0]!.n);
  try {
    // Facts an earlier run left: consumed first, so the drain below consumes these calls' facts alone.
    await services.dispatcher.drain();
    const drive = async (seconds: number, latencies: number[]) => {
      const deadline = performance.now() + seconds * 1000;
      await Promise.all(
        Array.from({ length: options.connections }, async (_, client) => {
          while (performance.now() < deadline) {
            const started = performance.now();
            await call(services, nextBody(client));
            latencies.push(performance.now() - started);
          }
        }),
      );
    };
    const warmup: number[] = [];
    await drive(options.warmupSeconds, warmup);
    const before = writeCounters(services.writer, services.db);
    const cpuBefore = cpuSnapshot(process.pid);
    const latencies: number[] = [];
    const started = performance.now();
    await drive(options.seconds, latencies);
    const elapsed = (performance.now() - started) / 1000;
    const cpu = cpuBetween(cpuBefore, cpuSnapshot(process.pid));
    const after = writeCounters(services.writer, services.db);
    const facts = await pendingFacts();
    const drainBefore = cpuSnapshot(process.pid);
    const drainStarted = performance.now();
    await services.dispatcher.drain();
    const consumed = {
      calls: warmup.length + latencies.length,
      facts,
      seconds: (performance.now() - drainStarted) / 1000,
      cpu: withoutLoadGenerator(cpuBetween(drainBefore, cpuSnapshot(process.pid))),
    };
    latencies.sort((a, b) => a - b);
    const at = (share: number) => latencies[Math.min(latencies.length - 1, Math.floor(share * latencies.length))] ?? 0;
    return {
      result: {
        requestsPerSecond: latencies.length / elapsed,
        p50LatencyMs: at(0.5),
        p99LatencyMs: at(0.99),
        non2xx: 0,
        errors: 0,
        total: latencies.length,
      },
      writes: {
        groups: after.groups - before.groups,
        items: after.items - before.items,
        driver_calls: after.driver_calls - before.driver_calls,
        statements: after.statements - before.statements,
      },
      cpu: withoutLoadGenerator(cpu),
      consumed,
    };
  } finally {
    await services.close();
  }
}
