import { parentPort, workerData } from 'node:worker_threads';
import { createLiquidRenderer } from './liquid-renderer.js';
import type { RenderTask, TemplateLimits } from './render-protocol.js';

/** A render thread of the pool (render-pool.ts): one task at a time, answered in order. */
const { limits, progress } = workerData as { limits: TemplateLimits; progress: SharedArrayBuffer };
const renderer = createLiquidRenderer(limits, new Float64Array(progress));

parentPort!.on('message', (task: RenderTask) => {
  parentPort!.postMessage(renderer.run(task));
});
