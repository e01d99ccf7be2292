import { readlinkSync } from 'node:fs';
import { setPriority } from 'node:os';
import { parentPort, workerData } from 'node:worker_threads';
import { createLiquidRenderer } from './liquid-renderer.js';
import type { RenderTask, TemplateLimits } from './render-protocol.js';

/** A render thread of the pool (render-pool.ts): one task at a time, answered in order. */
const { limits, progress } = workerData as { limits: TemplateLimits; progress: SharedArrayBuffer };
const renderer = createLiquidRenderer(limits, new Float64Array(progress));

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

parentPort!.on('message', (task: RenderTask) => {
  parentPort!.postMessage(renderer.run(task));
});
