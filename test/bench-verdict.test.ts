import { describe, expect, it } from 'vitest';
import { benchFailures } from '../bench/verdict.js';

describe('npm run bench fails loudly', () => {
  const row = (non2xx: number, errors: number) => ({ target: 'emk POST /collect/event', database: 'sqlite', result: { non2xx, errors } });

  it('clean rows and no failed step: nothing to fail on', () => {
    expect(benchFailures([row(0, 0), row(0, 0)], [])).toEqual([]);
  });

  it('a row with non-2xx answers or connection errors is a failure naming the row', () => {
    expect(benchFailures([row(0, 0), row(3, 0), row(0, 2)], [])).toEqual([
      'emk POST /collect/event on sqlite: 3 non-2xx answers, 0 connection errors or timeouts',
      'emk POST /collect/event on sqlite: 0 non-2xx answers, 2 connection errors or timeouts',
    ]);
  });

  it('a step that failed is kept first, with its reason', () => {
    expect(benchFailures([row(1, 0)], ['feeds on postgres failed: boom'])[0]).toBe('feeds on postgres failed: boom');
  });
});
