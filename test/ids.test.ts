import { describe, expect, it } from 'vitest';
import { hashSecret, isUuid, randomToken, uuidv7 } from '../src/domain/shared/ids.js';

describe('ids', () => {
  it('uuidv7: unique, version 7, RFC 4122 variant, ordered by time', () => {
    const ids = Array.from({ length: 10_000 }, () => uuidv7());
    expect(new Set(ids).size).toBe(ids.length);
    for (const id of ids) {
      expect(isUuid(id)).toBe(true);
      expect(id[14]).toBe('7');
      expect('89ab').toContain(id[19]);
    }
    const now = Date.now();
    expect(uuidv7(now) < uuidv7(now + 1)).toBe(true);
    expect(parseInt(uuidv7(now).replace(/-/g, '').slice(0, 12), 16)).toBe(now);
  });

  it('randomToken: the requested length of base-62 characters, never repeating', () => {
    const tokens = Array.from({ length: 1000 }, () => randomToken(20));
    expect(tokens.every((t) => /^[0-9A-Za-z]{20}$/.test(t))).toBe(true);
    expect(new Set(tokens).size).toBe(tokens.length);
  });

  it('hashSecret: a stable SHA-256 hex digest that does not contain the secret', () => {
    expect(hashSecret('emk_abc')).toBe(hashSecret('emk_abc'));
    expect(hashSecret('emk_abc')).toMatch(/^[0-9a-f]{64}$/);
    expect(hashSecret('emk_abc')).not.toBe(hashSecret('emk_abd'));
  });
});
