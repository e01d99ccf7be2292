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
}

/**
 * The route's write path without HTTP: `connections` callers in this process, each calling the route's domain
 * function again as soon as its last call returned (as autocannon's connections do), for `seconds`. No
 * sockets, no Fastify, no load generator on the machine: the rate it reaches bounds the route's, and its ratio
 * to the bare route bounds the route's ratio. Its CPU split tells what bounds the write path itself.
 */
export async function runWritePath(
  databaseUrl: string,
  call: DomainCall,
  nextBody: (client: number) => string,
  options: { connections: number; seconds: number; warmupSeconds: number },
): Promise<WritePathRun> {
  const services = createServices(openDatabase(databaseUrl));
  try {
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
    await drive(options.warmupSeconds, []);
    const before = writeCounters();
    const cpuBefore = cpuSnapshot(process.pid);
    const latencies: number[] = [];
    const started = performance.now();
    await drive(options.seconds, latencies);
    const elapsed = (performance.now() - started) / 1000;
    const cpu = cpuBetween(cpuBefore, cpuSnapshot(process.pid));
    const after = writeCounters();
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
      // The callers run on this process's main thread: there is no separate load generator.
      cpu: cpu && { ...cpu, loadGenerator: 0 },
    };
  } finally {
    await services.close();
  }
}
