import { existsSync } from 'node:fs';
import { availableParallelism } from 'node:os';
import { join, relative } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { Worker } from 'node:worker_threads';
import { PACKAGE_ROOT } from '../shared/package.js';
import { PREPARE_TIMEOUT_MS, PROGRESS, type RenderReply, type RenderTask, type TemplateLimits } from './render-protocol.js';

/**
 * The render threads: templates are tenant input, so they are parsed and rendered off the event loop that
 * answers requests. A small pool of our own (`node:worker_threads`; piscina would add a dependency for the
 * 100 lines below, and we need its one feature it lacks: ending a thread whose part ran past the deadline).
 *
 * Each part of a task has the deadline from its start on the thread (its parse included). Liquid's own render
 * limit stops most runaway renders at the deadline and the thread lives on; a thread still in the part when the
 * deadline passes (a long filter, a slow parse) is terminated and replaced. So a runaway template costs one
 * thread for at most the deadline, and the rest of the pool renders on.
 */

/** Threads: one fewer than the cores (the event loop keeps one), at least 2 so a runaway never stops all sends. */
export const defaultRenderThreads = (): number => Math.max(2, Math.min(8, availableParallelism() - 1));

/** A thread's heap: far above what the limits let a render use, so only a bug reaches it. */
const THREAD_HEAP_MB = 512;

/**
 * The thread's script. Built, it sits beside this file; run from the TypeScript source (vitest), the thread
 * runs the built copy under dist/ (Node 20 runs no TypeScript), so tests run after `npm run build`.
 */
function workerFile(): URL {
  const here = new URL('./render-worker.js', import.meta.url);
  if (import.meta.url.endsWith('.js')) return here;
  const built = join(PACKAGE_ROOT, 'dist', relative(PACKAGE_ROOT, fileURLToPath(here)));
  if (!existsSync(built)) throw new Error(`the render thread is not built (${built}): run npm run build`);
  return pathToFileURL(built);
}

interface Entry {
  task: RenderTask;
  resolve(reply: RenderReply): void;
  reject(error: Error): void;
}

interface Slot {
  worker: Worker;
  progress: Float64Array;
  entry: Entry | null;
  timer: NodeJS.Timeout | null;
}

const now = () => performance.timeOrigin + performance.now();

export function createRenderPool(options: { limits: TemplateLimits; threads?: number }) {
  const { limits } = options;
  const size = options.threads ?? defaultRenderThreads();
  const file = workerFile();
  const slots: Slot[] = [];
  const queue: Entry[] = [];
  let closed = false;

  function spawn(): Slot {
    const buffer = new SharedArrayBuffer(Float64Array.BYTES_PER_ELEMENT * PROGRESS.length);
    const worker = new Worker(file, { workerData: { limits, progress: buffer }, resourceLimits: { maxOldGenerationSizeMb: THREAD_HEAP_MB } });
    const slot: Slot = { worker, progress: new Float64Array(buffer), entry: null, timer: null };
    // An idle thread keeps no process alive; a busy one does, until it answers.
    worker.unref();
    worker.on('message', (reply: RenderReply) => finish(slot, reply));
    worker.on('error', (error: Error & { code?: string }) => {
      if (error.code === 'ERR_WORKER_OUT_OF_MEMORY') retire(slot, { ok: false, part: slot.progress[PROGRESS.part] ?? 0, kind: 'memory', message: '' });
      else retire(slot, error);
    });
    worker.on('exit', (code) => retire(slot, new Error(`a render thread exited (code ${code})`)));
    slots.push(slot);
    return slot;
  }

  function finish(slot: Slot, reply: RenderReply): void {
    if (!slots.includes(slot) || !slot.entry) return;
    if (slot.timer) clearTimeout(slot.timer);
    const { entry } = slot;
    slot.entry = null;
    slot.timer = null;
    slot.worker.unref();
    entry.resolve(reply);
    pump();
  }

  /** Takes the thread out of the pool (ended, or ending): its task gets `outcome`, and a new thread takes its place. */
  function retire(slot: Slot, outcome: RenderReply | Error): void {
    const at = slots.indexOf(slot);
    if (at < 0) return;
    slots.splice(at, 1);
    if (slot.timer) clearTimeout(slot.timer);
    void slot.worker.terminate();
    const { entry } = slot;
    slot.entry = null;
    if (entry) {
      if (outcome instanceof Error) entry.reject(outcome);
      else entry.resolve(outcome);
    }
    if (!closed) pump();
  }

  /** At the deadline of the part under way: ends the thread if that part is still running, else waits for the next. */
  function watch(slot: Slot, delay: number, deadline: number): void {
    slot.timer = setTimeout(() => {
      slot.timer = null;
      const startedAt = slot.progress[PROGRESS.startedAt]!;
      // 0: the thread has not begun a part yet (it is starting) or is between two.
      const elapsed = startedAt === 0 ? 0 : now() - startedAt;
      if (elapsed < deadline) return watch(slot, deadline - elapsed + 1, deadline);
      const phase = slot.progress[PROGRESS.phase] === 1 ? 'parse' : 'render';
      retire(slot, { ok: false, part: slot.progress[PROGRESS.part]!, kind: 'timeout', message: '', phase });
    }, Math.ceil(delay));
  }

  function pump(): void {
    while (queue.length > 0) {
      const slot = slots.find((s) => s.entry === null) ?? (slots.length < size ? spawn() : undefined);
      if (!slot) return;
      const entry = queue.shift()!;
      slot.entry = entry;
      slot.worker.ref();
      slot.worker.postMessage(entry.task);
      const deadline = entry.task.op === 'prepare' ? Math.max(PREPARE_TIMEOUT_MS, limits.timeoutMs) : limits.timeoutMs;
      watch(slot, deadline, deadline);
    }
  }

  return {
    size,
    /** Runs a task on the first free thread; a part past a limit answers `ok: false`, naming the part and the limit. */
    run(task: RenderTask): Promise<RenderReply> {
      if (closed) return Promise.reject(new Error('the render pool is closed'));
      return new Promise<RenderReply>((resolve, reject) => {
        queue.push({ task, resolve, reject });
        pump();
      });
    },

    /** Ends every thread; what is queued fails. */
    async close(): Promise<void> {
      closed = true;
      const closing = new Error('the render pool is closed');
      for (const entry of queue.splice(0)) entry.reject(closing);
      const ending = slots.splice(0);
      for (const slot of ending) {
        if (slot.timer) clearTimeout(slot.timer);
        slot.entry?.reject(closing);
      }
      await Promise.all(ending.map((slot) => slot.worker.terminate()));
    },
  };
}

export type RenderPool = ReturnType<typeof createRenderPool>;
