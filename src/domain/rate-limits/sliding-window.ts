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
 * Requests in the rolling minute ending now: the current window's count plus the share of the previous
 * window that still lies inside the last 60 seconds.
 */
function rollingCount(counts: WindowCounts, elapsedFraction: number): number {
  return counts.previous * (1 - elapsedFraction) + counts.current;
}

export function decide(limit: number, counts: WindowCounts, now: number): RateLimitDecision {
  const elapsed = now - windowStartOf(now);
  const fraction = elapsed / WINDOW_MS;
  const estimate = rollingCount(counts, fraction);
  const resetSeconds = Math.max(1, Math.ceil((WINDOW_MS - elapsed) / 1000));
  if (estimate <= limit) {
    return { allowed: true, limit, remaining: Math.max(0, Math.floor(limit - estimate)), resetSeconds, retryAfterSeconds: 0 };
  }
  return { allowed: false, limit, remaining: 0, resetSeconds, retryAfterSeconds: secondsUntilAllowed(limit, counts, elapsed) };
}

/** How long until one more request fits, if nothing else arrives (this rejected one is not counted). */
function secondsUntilAllowed(limit: number, counts: WindowCounts, elapsed: number): number {
  const accepted = counts.current - 1;
  let waitMs: number;
  if (accepted + 1 <= limit && counts.previous > 0) {
    // The previous window's share must shrink enough.
    const neededFraction = 1 - (limit - accepted - 1) / counts.previous;
    waitMs = neededFraction * WINDOW_MS - elapsed;
  } else {
    // Wait for the next window, where this window's count becomes the shrinking previous share.
    const neededFraction = accepted > 0 ? Math.max(0, 1 - (limit - 1) / accepted) : 0;
    waitMs = WINDOW_MS - elapsed + neededFraction * WINDOW_MS;
  }
  return Math.max(1, Math.ceil(waitMs / 1000));
}
