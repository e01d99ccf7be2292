import { describe, expect, it } from 'vitest';
import { createCaptureRecorder } from '../src/domain/messages/hand-overs.js';

/** A write that holds each commit until the test lets it go, recording the groups it was given. */
function heldWrites() {
  const groups: number[][] = [];
  const waiting: Array<{ release: () => void; fail: (error: Error) => void }> = [];
  const write = (group: number[]) =>
    new Promise<void>((release, fail) => {
      groups.push(group);
      waiting.push({ release, fail });
    });
  const next = async () => {
    for (let i = 0; i < 100 && waiting.length === 0; i++) await new Promise((resolve) => setImmediate(resolve));
    return waiting.shift()!;
  };
  return { groups, write, next };
}

describe('the capture recorder (messages captured while the rest render)', () => {
  it('commits once 100 wait, then every message that came meanwhile, one commit at a time; finish commits the rest', async () => {
    const held = heldWrites();
    const recorder = createCaptureRecorder(held.write);
    for (let i = 0; i < 99; i++) recorder.add(i);
    expect(held.groups).toEqual([]);
    recorder.add(99);
    expect(held.groups.map((g) => g.length)).toEqual([100]);
    // 150 more while the first commit runs: no second commit until it ends, then one of all 150.
    for (let i = 100; i < 250; i++) recorder.add(i);
    expect(held.groups).toHaveLength(1);
    (await held.next()).release();
    const second = await held.next();
    expect(held.groups.map((g) => g.length)).toEqual([100, 150]);
    // Fewer than 100 wait after it: finish commits them.
    for (let i = 250; i < 260; i++) recorder.add(i);
    second.release();
    const finished = recorder.finish();
    (await held.next()).release();
    await finished;
    expect(held.groups.flat()).toEqual(Array.from({ length: 260 }, (_, i) => i));
  });

  it('a failed commit fails finish with its error, and nothing is committed after it', async () => {
    const held = heldWrites();
    const recorder = createCaptureRecorder(held.write);
    for (let i = 0; i < 130; i++) recorder.add(i);
    (await held.next()).fail(new Error('disk full'));
    await expect(recorder.finish()).rejects.toThrow('disk full');
    expect(held.groups.map((g) => g.length)).toEqual([100]);
  });

  it('a send smaller than a group is committed once, by finish', async () => {
    const held = heldWrites();
    const recorder = createCaptureRecorder(held.write);
    for (let i = 0; i < 3; i++) recorder.add(i);
    const finished = recorder.finish();
    (await held.next()).release();
    await finished;
    expect(held.groups).toEqual([[0, 1, 2]]);
  });
});
