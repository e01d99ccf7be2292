import { existsSync } from 'node:fs';
import { availableParallelism } from 'node:os';
import { join, relative } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { Worker } from 'node:worker_threads';
import { PACKAGE_ROOT } from '../shared/package.js';
import { PREPARE_TIMEOUT_MS, PROGRESS, type RenderAnswer, type RenderEnvelope, type RenderReply, type RenderTask, type TemplateLimits } from './render-protocol.js';

/**
 * The render threads: templates are tenant input, so they are parsed and rendered off the event loop that
 * answers requests. A small pool of our own (`node:worker_threads`; piscina would add a dependency for the
 * 100 lines below, and we need its one feature it lacks: ending a thread whose part ran past the deadline).
 *
 * Each part of a task has the deadline from its start on the thread (its parse included). Liquid's own render
 * limit stops most runaway renders at the deadline and the thread lives on; a thread still in the part when the
 * deadline passes (a long filter, a slow parse) is terminated and replaced. So a runaway template costs one
 * thread for at most the deadline, and the rest of the pool renders on; the one task the thread held behind it
 * waits that long and runs again on the replacement.
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
  /** Tasks posted to the thread and not yet answered, by sequence number, oldest first (the thread answers in order). */
  entries: Map<number, Entry>;
  timer: NodeJS.Timeout | null;
}

/**
 * Tasks a thread holds at once: it starts the next as soon as it answers one, without waiting for the event loop
 * to take that answer and post more (a loop busy binding a large write would leave the thread idle meanwhile).
 * Two measured best on the campaign bench (docs/performance.md, The MJML send): deeper queues only made a thread's
 * backlog wait while another thread idled.
 */
const TASKS_PER_THREAD = 2;

const now = () => performance.timeOrigin + performance.now();

export function createRenderPool(options: { limits: TemplateLimits; threads?: number }) {
  const { limits } = options;
  const size = options.threads ?? defaultRenderThreads();
  const file = workerFile();
  const slots: Slot[] = [];
  const queue: Entry[] = [];
  let sequence = 0;
  let closed = false;

  const deadlineOf = (entry: Entry | undefined) =>
    entry?.task.op === 'prepare' ? Math.max(PREPARE_TIMEOUT_MS, limits.timeoutMs) : limits.timeoutMs;

  function spawn(): Slot {
    const buffer = new SharedArrayBuffer(Float64Array.BYTES_PER_ELEMENT * PROGRESS.length);
    const worker = new Worker(file, { workerData: { limits, progress: buffer }, resourceLimits: { maxOldGenerationSizeMb: THREAD_HEAP_MB } });
    const slot: Slot = { worker, progress: new Float64Array(buffer), entries: new Map(), timer: null };
    // An idle thread keeps no process alive; a busy one does, until it answers.
    worker.unref();
    worker.on('message', (answer: RenderAnswer) => finish(slot, answer));
    worker.on('error', (error: Error & { code?: string }) => {
      if (error.code === 'ERR_WORKER_OUT_OF_MEMORY') retire(slot, { ok: false, part: slot.progress[PROGRESS.part] ?? 0, kind: 'memory', message: '' });
      else retire(slot, error);
    });
    worker.on('exit', (code) => retire(slot, new Error(`a render thread exited (code ${code})`)));
    slots.push(slot);
    return slot;
  }

  function finish(slot: Slot, { seq, reply }: RenderAnswer): void {
    const entry = slot.entries.get(seq);
    if (!slots.includes(slot) || !entry) return;
    slot.entries.delete(seq);
    if (slot.entries.size === 0) {
      if (slot.timer) clearTimeout(slot.timer);
      slot.timer = null;
      slot.worker.unref();
    }
    entry.resolve(reply);
    pump();
  }

  /**
   * Takes the thread out of the pool (ended, or ending): the task it was running gets `outcome`, the tasks it held
   * behind that one go back to the front of the queue (a render has no effects, so running one again is safe), and
   * a new thread takes its place.
   */
  function retire(slot: Slot, outcome: RenderReply | Error): void {
    const at = slots.indexOf(slot);
    if (at < 0) return;
    slots.splice(at, 1);
    if (slot.timer) clearTimeout(slot.timer);
    void slot.worker.terminate();
    const held = [...slot.entries];
    slot.entries.clear();
    // The running task by the thread's word; if it names none held (the thread died between tasks), the oldest.
    const running = held.find(([seq]) => seq === slot.progress[PROGRESS.task]) ?? held[0];
    if (running) {
      if (outcome instanceof Error) running[1].reject(outcome);
      else running[1].resolve(outcome);
    }
    queue.unshift(...held.filter((h) => h !== running).map(([, entry]) => entry));
    if (!closed) pump();
  }

  /** At the deadline of the part under way: ends the thread if that part is still running, else waits for the next. */
  function watch(slot: Slot, delay: number): void {
    slot.timer = setTimeout(() => {
      slot.timer = null;
      if (slot.entries.size === 0) return;
      const deadline = deadlineOf(slot.entries.get(slot.progress[PROGRESS.task]!) ?? slot.entries.values().next().value);
      const startedAt = slot.progress[PROGRESS.startedAt]!;
      // 0: the thread has not begun a part yet (it is starting) or is between two.
      const elapsed = startedAt === 0 ? 0 : now() - startedAt;
      if (elapsed < deadline) return watch(slot, deadline - elapsed + 1);
      const phase = slot.progress[PROGRESS.phase] === 1 ? 'parse' : 'render';
      retire(slot, { ok: false, part: slot.progress[PROGRESS.part]!, kind: 'timeout', message: '', phase });
    }, Math.ceil(delay));
  }

  /** The thread to give the next task: an idle one, a new one while the pool has room, else the least busy with room. */
  function freeSlot(): Slot | undefined {
    let best = slots.find((s) => s.entries.size === 0) ?? (slots.length < size ? spawn() : undefined);
    for (const s of slots) if (!best || s.entries.size < best.entries.size) best = s;
    return best && best.entries.size < TASKS_PER_THREAD ? best : undefined;
  }

  function pump(): void {
    while (queue.length > 0) {
      const slot = freeSlot();
      if (!slot) return;
      const entry = queue.shift()!;
      const seq = ++sequence;
      slot.entries.set(seq, entry);
      slot.worker.ref();
      slot.worker.postMessage({ seq, task: entry.task } satisfies RenderEnvelope);
      if (!slot.timer) watch(slot, deadlineOf(entry));
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
        for (const entry of slot.entries.values()) entry.reject(closing);
        slot.entries.clear();
      }
      await Promise.all(ending.map((slot) => slot.worker.terminate()));
    },
  };
}

export type RenderPool = ReturnType<typeof createRenderPool>;
