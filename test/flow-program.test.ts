import { describe, expect, it } from 'vitest';
import type { FlowStep } from '../src/domain/flows/flow.schema.js';
import { compileSteps, remapPosition } from '../src/domain/flows/flow-program.js';

const email = (subject: string): FlowStep => ({ type: 'email', subject, html: subject, format: 'html' });
const branch = (yes: FlowStep[], no: FlowStep[] = []): FlowStep => ({ type: 'branch', conditions: { all: [] }, yes, no });
const view = (steps: FlowStep[]) => compileSteps(steps).map((e) => [e.path, e.next, e.yes ?? null, e.no ?? null]);

describe('nested steps flattened to positions', () => {
  it('a flow without branches keeps its indexes', () => {
    expect(view([email('a'), { type: 'delay', minutes: 1 }, email('b')])).toEqual([
      ['0', 1, null, null],
      ['1', 2, null, null],
      ['2', 3, null, null],
    ]);
    expect(compileSteps([])).toEqual([]);
  });

  it('a branch is followed by its yes steps, then its no steps; paths end at the step after the branch', () => {
    expect(view([branch([email('y1'), email('y2')], [branch([], [email('nn')])]), email('after')])).toEqual([
      ['0', 5, 1, 3],
      ['0.yes.0', 2, null, null],
      ['0.yes.1', 5, null, null],
      ['0.no.0', 5, 5, 4],
      ['0.no.0.no.0', 5, null, null],
      ['1', 6, null, null],
    ]);
    // Empty paths and a branch as the last step: both sides go to the end.
    expect(view([branch([], [])])).toEqual([['0', 1, 1, 1]]);
  });

  it('an edit moves a position to the same path; a path gone goes on after its top-level step; past the end completes', () => {
    const before = compileSteps([branch([email('a')]), branch([{ type: 'delay', minutes: 5 }, email('b')]), email('c')]);
    const grown = compileSteps([branch([email('a'), email('a2')]), branch([{ type: 'delay', minutes: 5 }, email('b')]), email('c')]);
    expect(before[4]!.path).toBe('1.yes.1');
    expect(remapPosition(before, grown, 4)).toBe(5);
    expect(grown[5]!.path).toBe('1.yes.1');
    // The second branch became an email: 1.yes.1 is gone, the enrolment goes on after top-level step 1.
    const flat = compileSteps([branch([email('a')]), email('b'), email('c')]);
    expect(remapPosition(before, flat, 4)).toBe(3);
    expect(flat[3]!.path).toBe('2');
    // Top-level positions keep their index; one past the new end completes; the end stays the end.
    const short = compileSteps([email('x')]);
    expect(remapPosition(before, short, 5)).toBe(short.length);
    expect(remapPosition(before, short, 0)).toBe(0);
    expect(remapPosition(before, grown, before.length)).toBe(grown.length);
  });
});
