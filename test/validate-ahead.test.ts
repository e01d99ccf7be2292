import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { ValidationError } from '../src/domain/errors.js';
import { checkInputAhead, parseInput, text } from '../src/domain/shared/validate.js';

/** A route's check of a body hands its output to the domain's parse of the same body with the same schema, once. */
describe('checks made ahead of the domain', () => {
  const schema = z.object({ name: text(10) });

  it('the next parse of the same value with the same schema takes the check’s output; a later one parses again', () => {
    const body = { name: ' Ann ' };
    const checked = checkInputAhead(schema, body);
    expect(checked).toEqual({ success: true, data: { name: 'Ann' } });
    const parsed = parseInput(schema, body);
    expect(parsed).toBe(checked.success && checked.data);
    const again = parseInput(schema, body);
    expect(again).toEqual({ name: 'Ann' });
    expect(again).not.toBe(parsed);
  });

  it('another schema, or another value, parses for itself; a failed check leaves nothing', () => {
    const body = { name: 'Bo' };
    const checked = checkInputAhead(schema, body);
    const other = z.object({ name: text(10) });
    expect(parseInput(other, body)).not.toBe(checked.success && checked.data);
    expect(parseInput(schema, { name: 'Bo' })).not.toBe(checked.success && checked.data);

    const bad = { name: '' };
    expect(checkInputAhead(schema, bad)).toEqual({ success: false, error: 'invalid request: name must not be empty' });
    expect(() => parseInput(schema, bad)).toThrow(ValidationError);
  });
});
