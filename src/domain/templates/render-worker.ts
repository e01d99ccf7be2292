import { readlinkSync } from 'node:fs';
import { setPriority } from 'node:os';
import { parentPort, workerData } from 'node:worker_threads';
import { FormatError, prepareContent } from './content-formats.js';
import { createLiquidRenderer } from './liquid-renderer.js';
import { PROGRESS, type RenderAnswer, type RenderEnvelope, type RenderReply, type RenderTask, type TemplateLimits } from './render-protocol.js';

/** A render thread of the pool (render-pool.ts): one task at a time, answered in order. */
const { limits, progress } = workerData as { limits: TemplateLimits; progress: SharedArrayBuffer };
const progressView = new Float64Array(progress);
const renderer = createLiquidRenderer(limits, progressView);

/**
 * Where the system allows it (Linux: a thread's id is a pid to setpriority), the thread runs at a lower priority
 * than the event loop, so a runaway render on a busy host takes its CPU from renders, not from answers.
 */
const RENDER_NICE = 10;
try {
  setPriority(Number(readlinkSync('/proc/thread-self').split('/').pop()), RENDER_NICE);
} catch {
  // Not Linux, or not allowed: the thread keeps the process's priority.
}

/** A template's source to its Liquid-HTML (MJML, CSS inlining): a format error is the template's own. */
async function prepare(task: Extract<RenderTask, { op: 'prepare' }>): Promise<RenderReply> {
  progressView[PROGRESS.part] = 0;
  progressView[PROGRESS.phase] = 1;
  progressView[PROGRESS.startedAt] = performance.timeOrigin + performance.now();
  try {
    return { ok: true, html: await prepareContent(task.source, task.format) };
  } catch (error) {
    if (error instanceof FormatError) return { ok: false, part: 0, kind: 'template', message: error.message };
    if (error instanceof RangeError) return { ok: false, part: 0, kind: 'memory', message: '' };
    return { ok: false, part: 0, kind: 'template', message: error instanceof Error ? error.message : String(error) };
  } finally {
    progressView[PROGRESS.startedAt] = 0;
  }
}

/**
 * Tasks run one at a time in the order they came, each answered with its number: the pool posts a few ahead (so
 * the thread need not wait for the event loop between two), and only a `prepare` awaits (MJML's first load).
 */
let previous: Promise<void> = Promise.resolve();
parentPort!.on('message', ({ seq, task }: RenderEnvelope) => {
  const answer = (reply: RenderReply) => parentPort!.postMessage({ seq, reply } satisfies RenderAnswer);
  previous = previous.then(() => {
    progressView[PROGRESS.task] = seq;
    return task.op === 'prepare' ? prepare(task).then(answer) : answer(renderer.run(task));
  });
});
