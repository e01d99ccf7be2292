import { z } from 'zod';

/**
 * Where caches and rate-limit windows read the time: the system clock in production, a clock a test moves
 * by hand (so a test never sleeps for a cache to expire or a window to turn).
 */
export type Clock = () => number;

export const systemClock: Clock = () => Date.now();

/** A day in milliseconds: day buckets are `ms / DAY_MS` (UTC days since the epoch, whole on both databases). */
export const DAY_MS = 86_400_000;

/** Times are stored as epoch milliseconds (one integer column kind on both databases) and shown as RFC 3339. */
export function toIso(ms: number | string | null | undefined): string | null {
  if (ms === null || ms === undefined) return null;
  return new Date(Number(ms)).toISOString();
}

const RFC3339 = /^\d{4}-\d{2}-\d{2}[Tt ]\d{2}:\d{2}(:\d{2}(\.\d+)?)?([Zz]|[+-]\d{2}:?\d{2})?$/;

/** Parses RFC 3339 (and `YYYY-MM-DD HH:MM:SS`, read as UTC); null when the text is not such a time. */
export function parseTimestamp(text: string): number | null {
  if (!RFC3339.test(text)) return null;
  const hasZone = /([Zz]|[+-]\d{2}:?\d{2})$/.test(text);
  const ms = Date.parse(hasZone ? text.replace(' ', 'T') : `${text.replace(' ', 'T')}Z`);
  return Number.isFinite(ms) ? ms : null;
}

/** RFC 3339 or `YYYY-MM-DD HH:MM:SS` (read as UTC), to epoch milliseconds. */
export const timestampSchema = z.string().transform((value, ctx) => {
  const ms = parseTimestamp(value.trim());
  if (ms === null) {
    ctx.addIssue({ code: 'custom', message: 'must be an RFC 3339 time or YYYY-MM-DD HH:MM:SS' });
    return z.NEVER;
  }
  return ms;
});
