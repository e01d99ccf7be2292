/** The spec's rolling one-minute window, approximated by two fixed windows (the sliding-window counter). */
export const WINDOW_MS = 60_000;

export interface WindowCounts {
  /** Accepted requests in the previous fixed window. */
  previous: number;
  /** Requests in the current fixed window, this one included. */
  current: number;
}

export interface RateLimitDecision {
  allowed: boolean;
  limit: number;
  remaining: number;
  /** Seconds until the current fixed window ends (`RateLimit-Reset`). */
  resetSeconds: number;
  /** Whole seconds until a request would be accepted again (`Retry-After`); 0 when allowed. */
  retryAfterSeconds: number;
}

export function windowStartOf(now: number): number {
  return now - (now % WINDOW_MS);
}

/**
 * Requests in the rolling minute ending now, scaled by WINDOW_MS so the arithmetic stays in whole numbers:
 * the current window's count plus the share of the previous window still inside the last 60 seconds.
 */
function scaledRollingCount(counts: WindowCounts, elapsed: number): number {
  return counts.previous * (WINDOW_MS - elapsed) + counts.current * WINDOW_MS;
}

export function decide(limit: number, counts: WindowCounts, now: number): RateLimitDecision {
  const elapsed = now - windowStartOf(now);
  const scaled = scaledRollingCount(counts, elapsed);
  const resetSeconds = Math.max(1, Math.ceil((WINDOW_MS - elapsed) / 1000));
  if (scaled <= limit * WINDOW_MS) {
    const remaining = Math.max(0, Math.floor((limit * WINDOW_MS - scaled) / WINDOW_MS));
    return { allowed: true, limit, remaining, resetSeconds, retryAfterSeconds: 0 };
  }
  return { allowed: false, limit, remaining: 0, resetSeconds, retryAfterSeconds: secondsUntilAllowed(limit, counts, elapsed) };
}

/** How long until one more request fits, if nothing else arrives (this refused one is not counted). */
function secondsUntilAllowed(limit: number, counts: WindowCounts, elapsed: number): number {
  const accepted = counts.current - 1;
  let waitMs: number;
  if (accepted + 1 <= limit && counts.previous > 0) {
    // The previous window's share must shrink enough.
    waitMs = WINDOW_MS - Math.floor(((limit - accepted - 1) * WINDOW_MS) / counts.previous) - elapsed;
  } else {
    // Wait for the next window, where this window's count becomes the shrinking previous share.
    const needed = accepted > 0 ? Math.max(0, WINDOW_MS - Math.floor(((limit - 1) * WINDOW_MS) / accepted)) : 0;
    waitMs = WINDOW_MS - elapsed + needed;
  }
  return Math.max(1, Math.ceil(waitMs / 1000));
}
