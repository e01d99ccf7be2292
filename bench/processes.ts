import { execFile, spawn, type ChildProcess } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { promisify } from 'node:util';

const execFileAsync = promisify(execFile);

const START_TIMEOUT_MS = 30_000;
export const STOP_TIMEOUT_MS = 15_000;

/** A server running as a child process, listening where its stderr said. */
export interface ServerProcess {
  label: string;
  pid: number;
  /** `http://host:port` */
  url: string;
  /** Peak resident set size so far (VmHWM), in KiB; null where /proc is not available. */
  peakRssKib(): number | null;
  /** SIGTERM, then SIGKILL if it has not exited in time. */
  stop(): Promise<StopResult>;
}

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

const live = new Set<ChildProcess>();

/** Kills every server still running (on the way out after a failure or Ctrl-C). */
export function killAll(): void {
  for (const child of live) child.kill('SIGKILL');
  live.clear();
}

/**
 * Spawns `node <args>` and waits for a line `… listening on http://…` on its stderr. Its stderr is kept (and
 * shown if it fails to start); its stdout is ignored.
 */
export function startServer(label: string, args: string[], env: NodeJS.ProcessEnv, cwd: string): Promise<ServerProcess> {
  const child = spawn(process.execPath, args, { cwd, env, stdio: ['ignore', 'ignore', 'pipe'] });
  live.add(child);
  let stderr = '';
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

  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => {
      child.kill('SIGKILL');
      reject(new Error(`${label} did not start within ${START_TIMEOUT_MS} ms:\n${stderr}`));
    }, START_TIMEOUT_MS);
    child.stderr!.on('data', (chunk: Buffer) => {
      stderr += chunk.toString();
      const match = /listening on (https?:\/\/\S+)/.exec(stderr);
      if (match && child.pid !== undefined) {
        clearTimeout(timer);
        const pid = child.pid;
        resolve({ label, pid, url: match[1]!, peakRssKib: () => readPeakRssKib(pid), stop });
      }
    });
    void exited.then((code) => {
      clearTimeout(timer);
      reject(new Error(`${label} exited with code ${code} before listening:\n${stderr}`));
    });
  });
}

/** Runs `node <args>` to completion and parses its stdout as JSON (for `emk … --json`). */
export async function runJson<T>(args: string[], env: NodeJS.ProcessEnv, cwd: string): Promise<T> {
  const { stdout } = await execFileAsync(process.execPath, args, { cwd, env, timeout: START_TIMEOUT_MS });
  return JSON.parse(stdout) as T;
}
