import type { FlowStep } from './flow.schema.js';

/**
 * A flow's steps flattened into one list, so an enrolment's place is one integer (`current_step`) whatever the
 * nesting (docs/flows.md, Branches): each step is followed by the steps of its `yes` path, then of its `no`
 * path. `next` is where an enrolment goes after the step; a branch sends it to `yes` or `no` instead (the
 * continuation after the branch when that path is empty). A flow without branches flattens to its own steps,
 * so positions stored before branches existed keep their meaning. The end is `length`.
 */
export interface ProgramEntry {
  step: FlowStep;
  /** Where the step is in the flow's steps: `2`, `2.yes.0`. */
  path: string;
  next: number;
  yes?: number;
  no?: number;
}

const sizeOf = (step: FlowStep): number => (step.type === 'branch' ? 1 + sizeOfAll(step.yes) + sizeOfAll(step.no) : 1);
const sizeOfAll = (steps: FlowStep[]): number => steps.reduce((sum, step) => sum + sizeOf(step), 0);

export function compileSteps(steps: FlowStep[]): ProgramEntry[] {
  const out: ProgramEntry[] = [];
  const emit = (list: FlowStep[], prefix: string, start: number, continuation: number) => {
    let at = start;
    list.forEach((step, k) => {
      const path = prefix === '' ? String(k) : `${prefix}.${k}`;
      const size = sizeOf(step);
      const next = k === list.length - 1 ? continuation : at + size;
      if (step.type === 'branch') {
        const yesAt = at + 1;
        const noAt = yesAt + sizeOfAll(step.yes);
        out[at] = { step, path, next, yes: step.yes.length > 0 ? yesAt : next, no: step.no.length > 0 ? noAt : next };
        emit(step.yes, `${path}.yes`, yesAt, next);
        emit(step.no, `${path}.no`, noAt, next);
      } else {
        out[at] = { step, path, next };
      }
      at += size;
    });
  };
  emit(steps, '', 0, sizeOfAll(steps));
  return out;
}

/** Every step with its place (`[2, 'yes', 0]`) and how many branches hold it, for the checks at save. */
export function* walkSteps(steps: FlowStep[], at: Array<string | number> = ['steps'], depth = 0): Generator<{ step: FlowStep; at: Array<string | number>; depth: number }> {
  for (const [i, step] of steps.entries()) {
    const here = [...at, i];
    yield { step, at: here, depth };
    if (step.type === 'branch') {
      yield* walkSteps(step.yes, [...here, 'yes'], depth + 1);
      yield* walkSteps(step.no, [...here, 'no'], depth + 1);
    }
  }
}

/**
 * Where an enrolment goes when a flow's steps are edited: the step at the same path in the new steps; a path
 * that no longer exists goes on after the top-level step that held it (a top-level position past the new
 * end completes). Flows without branches keep the position, as before.
 */
export function remapPosition(before: ProgramEntry[], after: ProgramEntry[], position: number): number {
  const path = before[position]?.path;
  if (path === undefined) return position >= before.length ? after.length : position;
  const found = after.findIndex((e) => e.path === path);
  if (found >= 0) return found;
  const top = Number(path.split('.')[0]);
  const nested = path.includes('.');
  const topAt = after.findIndex((e) => e.path === String(top));
  if (topAt < 0) return after.length;
  return nested ? after[topAt]!.next : topAt;
}
