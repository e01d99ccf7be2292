import { execFile, spawn, type ChildProcess } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { promisify } from 'node:util';

const execFileAsync = promisify(execFile);

const START_TIMEOUT_MS = 30_000;
export const STOP_TIMEOUT_MS = 15_000;

/** A child `node` process of the bench. */
export interface ChildProcessHandle {
  label: string;
  pid: number;
  /** Peak resident set size so far (VmHWM), in KiB; null where /proc is not available. */
  peakRssKib(): number | null;
  /** User plus system CPU time so far, in seconds; null where /proc is not available. */
  cpuSeconds(): number | null;
  /** What it wrote on stderr so far. */
  stderr(): string;
  /** SIGTERM, then SIGKILL if it has not exited in time. */
  stop(): Promise<StopResult>;
}

/** `emk serve`'s write counters (SIGUSR2): group commits, items they carried, driver calls, statements. */
export interface WriteCounters {
  groups: number;
  items: number;
  driver_calls: number;
  statements: number;
}

/** A server running as a child process, listening where its stderr said. */
export interface ServerProcess extends ChildProcessHandle {
  /** `http://host:port` */
  url: string;
  /** Asks an `emk serve` for its write counters (SIGUSR2) and waits for its answer; null after 2 s without one. */
  writeCounters(): Promise<WriteCounters | null>;
}

const COUNTERS_LINE = /write counters (\{[^\n]*\})\n/g;
const COUNTERS_TIMEOUT_MS = 2000;

export interface StopResult {
  code: number | null;
  /** It had not exited STOP_TIMEOUT_MS after SIGTERM and was killed. */
  killed: boolean;
}

/** VmHWM of a process, from /proc (Linux). */
export function readPeakRssKib(pid: number): number | null {
  try {
    const match = /^VmHWM:\s+(\d+)\s+kB$/m.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
    return match ? Number(match[1]) : null;
  } catch {
    return null;
  }
}

/** utime + stime of a process or thread, from its /proc stat file (Linux; clock ticks of 1/100 s). */
export function statCpuSeconds(statPath: string): number | null {
  try {
    const stat = readFileSync(statPath, 'utf8');
    // The fields after the command name, which may hold spaces, start after its closing parenthesis.
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    return (Number(fields[11]) + Number(fields[12])) / 100;
  } catch {
    return null;
  }
}

const live = new Set<ChildProcess>();

/** Kills every server still running (on the way out after a failure or Ctrl-C). */
export function killAll(): void {
  for (const child of live) child.kill('SIGKILL');
  live.clear();
}

/**
 * Spawns `node <args>` with its stderr kept and its stdout ignored; `exited` resolves with its exit code.
 */
export function spawnNode(
  label: string,
  args: string[],
  env: NodeJS.ProcessEnv,
  cwd: string,
): ChildProcessHandle & { exited: Promise<number | null>; onStderr(listener: (text: string) => void): void } {
  const child = spawn(process.execPath, args, { cwd, env, stdio: ['ignore', 'ignore', 'pipe'] });
  if (child.pid === undefined) throw new Error(`${label} could not be started`);
  const pid = child.pid;
  live.add(child);
  let stderr = '';
  const listeners: Array<(text: string) => void> = [];
  child.stderr!.on('data', (chunk: Buffer) => {
    stderr += chunk.toString();
    for (const listener of listeners) listener(stderr);
  });
  const exited = new Promise<number | null>((resolve) =>
    child.once('exit', (code) => {
      live.delete(child);
      resolve(code);
    }),
  );

  const stop = async (): Promise<StopResult> => {
    if (child.exitCode !== null || child.signalCode !== null) return { code: child.exitCode, killed: false };
    child.kill('SIGTERM');
    let killed = false;
    const timer = setTimeout(() => {
      killed = true;
      child.kill('SIGKILL');
    }, STOP_TIMEOUT_MS);
    try {
      return { code: await exited, killed };
    } finally {
      clearTimeout(timer);
    }
  };

  return {
    label,
    pid,
    peakRssKib: () => readPeakRssKib(pid),
    cpuSeconds: () => statCpuSeconds(`/proc/${pid}/stat`),
    stderr: () => stderr,
    stop,
    exited,
    onStderr: (listener) => listeners.push(listener),
  };
}

/** Spawns `node <args>` and waits for a line `… listening on http://…` on its stderr (shown if it fails to start). */
export function startServer(label: string, args: string[], env: NodeJS.ProcessEnv, cwd: string): Promise<ServerProcess> {
  const { exited, onStderr, ...child } = spawnNode(label, args, env, cwd);
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => {
      void child.stop();
      reject(new Error(`${label} did not start within ${START_TIMEOUT_MS} ms:\n${child.stderr()}`));
    }, START_TIMEOUT_MS);
    let listening = false;
    onStderr((stderr) => {
      const match = /listening on (https?:\/\/\S+)/.exec(stderr);
      if (match && !listening) {
        listening = true;
        clearTimeout(timer);
        resolve({ ...child, url: match[1]!, writeCounters: () => askCounters(child, onStderr) });
      }
    });
    void exited.then((code) => {
      clearTimeout(timer);
      reject(new Error(`${label} exited with code ${code} before listening:\n${child.stderr()}`));
    });
  });
}

function askCounters(child: ChildProcessHandle, onStderr: (listener: (text: string) => void) => void): Promise<WriteCounters | null> {
  const answered = child.stderr().match(COUNTERS_LINE)?.length ?? 0;
  return new Promise((resolve) => {
    let done = false;
    const finish = (value: WriteCounters | null) => {
      if (done) return;
      done = true;
      clearTimeout(timer);
      resolve(value);
    };
    const timer = setTimeout(() => finish(null), COUNTERS_TIMEOUT_MS);
    onStderr((stderr) => {
      const lines = [...stderr.matchAll(COUNTERS_LINE)];
      if (lines.length > answered) finish(JSON.parse(lines[lines.length - 1]![1]!) as WriteCounters);
    });
    process.kill(child.pid, 'SIGUSR2');
  });
}

/** Runs `node <args>` to completion and parses its stdout as JSON (for `emk … --json`). */
export async function runJson<T>(args: string[], env: NodeJS.ProcessEnv, cwd: string): Promise<T> {
  const { stdout } = await execFileAsync(process.execPath, args, { cwd, env, timeout: START_TIMEOUT_MS });
  return JSON.parse(stdout) as T;
}

export interface MeasuredRun<T> {
  seconds: number;
  peakRssKib: number | null;
  summary: T;
}

/** Runs `node <args>` as its own process, timing it and sampling its peak RSS until it exits; stdout is JSON. */
export function runMeasuredNode<T>(label: string, args: string[], env: NodeJS.ProcessEnv, cwd: string): Promise<MeasuredRun<T>> {
  return new Promise((resolve, reject) => {
    const started = performance.now();
    const child = spawn(process.execPath, args, { cwd, env, stdio: ['ignore', 'pipe', 'pipe'] });
    live.add(child);
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
      live.delete(child);
      clearInterval(sampler);
      const seconds = (performance.now() - started) / 1000;
      if (code !== 0) return reject(new Error(`${label} exited ${code}: ${stderr.slice(-500)}`));
      try {
        resolve({ seconds, peakRssKib: peak, summary: JSON.parse(stdout) as T });
      } catch (error) {
        reject(error);
      }
    });
  });
}
