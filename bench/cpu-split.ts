import { readdirSync, readFileSync } from 'node:fs';
import { statCpuSeconds } from './processes.js';

/**
 * Where the machine's CPU went during a measured run, from /proc (Linux): the server's main thread (HTTP,
 * emk's code, the drivers' JavaScript), its other threads (SQLite's work on libuv's pool, V8's collector), the
 * PostgreSQL server's processes, the load generator (this process: autocannon), and how busy the machine was
 * in all. It tells which limit bounds a row: a saturated machine, a saturated thread, or neither (a wait).
 */
export interface CpuSplit {
  /** Seconds of CPU in each part. */
  serverMain: number;
  serverOther: number;
  postgres: number;
  loadGenerator: number;
  /** Busy share of all cores over the run, 0–1 (every process on the machine). */
  machineBusy: number;
  cores: number;
}

interface Snapshot {
  serverMain: number;
  serverOther: number;
  postgres: number;
  loadGenerator: number;
  machineBusyTicks: number;
  machineTotalTicks: number;
  cores: number;
}

/** CPU seconds of a /proc stat file; 0 when it is gone (a thread or process that ended). */
const seconds = (path: string) => statCpuSeconds(path) ?? 0;

function commandOf(pid: string): string {
  try {
    return readFileSync(`/proc/${pid}/comm`, 'utf8').trim();
  } catch {
    return '';
  }
}

function postgresSeconds(): number {
  let total = 0;
  for (const pid of readdirSync('/proc')) {
    if (/^\d+$/.test(pid) && commandOf(pid) === 'postgres') total += seconds(`/proc/${pid}/stat`);
  }
  return total;
}

function machineTicks(): { busy: number; total: number; cores: number } {
  const lines = readFileSync('/proc/stat', 'utf8').split('\n');
  // cpu user nice system idle iowait irq softirq steal …
  const values = lines[0]!.trim().split(/\s+/).slice(1).map(Number);
  const total = values.slice(0, 8).reduce((sum, v) => sum + v, 0);
  const idle = values[3]! + values[4]!;
  return { busy: total - idle, total, cores: lines.filter((line) => /^cpu\d+ /.test(line)).length };
}

/** The counters now, for the server process `serverPid`; null where /proc is not available. */
export function cpuSnapshot(serverPid: number): Snapshot | null {
  try {
    let serverMain = 0;
    let serverOther = 0;
    for (const tid of readdirSync(`/proc/${serverPid}/task`)) {
      const spent = seconds(`/proc/${serverPid}/task/${tid}/stat`);
      if (tid === String(serverPid)) serverMain += spent;
      else serverOther += spent;
    }
    const usage = process.cpuUsage();
    const machine = machineTicks();
    return {
      serverMain,
      serverOther,
      postgres: postgresSeconds(),
      loadGenerator: (usage.user + usage.system) / 1e6,
      machineBusyTicks: machine.busy,
      machineTotalTicks: machine.total,
      cores: machine.cores,
    };
  } catch {
    return null;
  }
}

/**
 * What was spent between two snapshots. Threads that ended between them (none do in `emk serve` under load)
 * would be missed; a server thread's ticks are counted only while it lives.
 */
export function cpuBetween(before: Snapshot | null, after: Snapshot | null): CpuSplit | null {
  if (!before || !after || after.machineTotalTicks <= before.machineTotalTicks) return null;
  return {
    serverMain: after.serverMain - before.serverMain,
    serverOther: after.serverOther - before.serverOther,
    postgres: after.postgres - before.postgres,
    loadGenerator: after.loadGenerator - before.loadGenerator,
    machineBusy: (after.machineBusyTicks - before.machineBusyTicks) / (after.machineTotalTicks - before.machineTotalTicks),
    cores: after.cores,
  };
}

/** Seconds of CPU a row spent across the machine: the server's threads, PostgreSQL's (on PostgreSQL), the load generator. */
export const cpuSecondsOf = (cpu: CpuSplit, onPostgres: boolean): number =>
  cpu.serverMain + cpu.serverOther + (onPostgres ? cpu.postgres : 0) + cpu.loadGenerator;
