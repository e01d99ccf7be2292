import { systemClock, type Clock } from '../shared/time.js';

/** A domain's rate counts the mails of the last minute (the unit providers publish and `domain_rates` takes). */
const WINDOW_MS = 60_000;
/** The first pause after a temporary refusal; each refusal after a pause doubles it, up to the longest. */
const FIRST_PAUSE_MS = 60_000;
const LONGEST_PAUSE_MS = 16 * 60_000;
/** Refusals remembered at most: a rate is never cut below 1/2^this of the one set (nor below 1 a minute). */
const MAX_STRIKES = 5;
/** How long a batch waits in this process, in all, for domains to have room; mails that would wait longer are left for the job's retry. */
export const MAX_PACING_WAIT_MS = 5_000;

/** The domain of an address, lower-cased: what `domain_rates` and refusals are keyed by. */
export const recipientDomain = (address: string) => address.slice(address.lastIndexOf('@') + 1).toLowerCase();

/**
 * A domain asking us to slow down (docs/email.md, Rates): a 421 (Yahoo's and Gmail's "too many mails / try later",
 * also what a closing server says) or a 450 (Gmail's "receiving mail too quickly"), as the transport words it
 * (`TemporaryDeliveryError`: the code first). Other 4xx replies (451 greylisting, 452 a full mailbox) and
 * connection failures are retried by the job as before and slow no domain down.
 */
export const isTemporaryRefusal = (error: Error) => /^(421|450)\b/.test(error.message);

interface Backoff {
  strikes: number;
  pausedUntil: number;
  /** From when the domain has gone a window without a refusal: each such window takes one strike away. */
  calmSince: number;
}

/**
 * The pace of mail per recipient domain in this process (docs/email.md, Rates), shared by every batch it sends:
 * - a workspace's `domain_rates` allow at most N mails to a domain in any minute (a log of the last minute's
 *   hand-overs per workspace and domain);
 * - a temporary refusal from a domain (421/450 …) pauses that domain for a minute (doubling on a refusal after
 *   a pause), halves its rate, and each calm minute after the pause doubles it back, up to the one set.
 * Refusals are kept per domain for every workspace: the relay's address is what the provider slows down.
 */
export function createDomainPacer(clock: Clock = systemClock) {
  const logs = new Map<string, number[]>();
  const backoffs = new Map<string, Backoff>();

  /** The domain's backoff, with the strikes its calm minutes have taken away (none left: forgotten). */
  function backoffOf(domain: string, now: number): Backoff | undefined {
    const backoff = backoffs.get(domain);
    if (!backoff) return undefined;
    while (backoff.strikes > 0 && now >= backoff.calmSince + WINDOW_MS) {
      backoff.strikes--;
      backoff.calmSince += WINDOW_MS;
    }
    if (backoff.strikes === 0 && now >= backoff.pausedUntil) {
      backoffs.delete(domain);
      return undefined;
    }
    return backoff;
  }

  return {
    /**
     * A hand-over to `domain` now, for a workspace whose rate for it is `perMinute` (undefined: none): 0 when it
     * may go (the slot is taken), else the milliseconds until it may.
     */
    take(workspaceId: string, domain: string, perMinute: number | undefined): number {
      const now = clock();
      const backoff = backoffOf(domain, now);
      if (backoff && now < backoff.pausedUntil) return backoff.pausedUntil - now;
      if (perMinute === undefined) return 0;
      const limit = Math.max(1, Math.floor(perMinute / 2 ** (backoff?.strikes ?? 0)));
      const key = `${workspaceId} ${domain}`;
      const log = logs.get(key) ?? [];
      while (log.length > 0 && log[0]! <= now - WINDOW_MS) log.shift();
      if (log.length < limit) {
        log.push(now);
        logs.set(key, log);
        return 0;
      }
      // Room comes when the hand-over that makes the log one too long leaves the window.
      return log[log.length - limit]! + WINDOW_MS - now;
    },

    /** The domain answered a temporary refusal: pause it, and slow it down once the pause is over. */
    refused(domain: string): void {
      const now = clock();
      const backoff = backoffOf(domain, now);
      // Refusals of mails already in flight when the first came belong to the same pause.
      if (backoff && now < backoff.pausedUntil) return;
      const strikes = Math.min(MAX_STRIKES, (backoff?.strikes ?? 0) + 1);
      const pausedUntil = now + Math.min(LONGEST_PAUSE_MS, FIRST_PAUSE_MS * 2 ** (strikes - 1));
      backoffs.set(domain, { strikes, pausedUntil, calmSince: pausedUntil });
    },
  };
}

export type DomainPacer = ReturnType<typeof createDomainPacer>;

/**
 * One batch's mails, handed out as their domains have room: a domain with none waits in this process while the
 * batch's pacing waits stay within `MAX_PACING_WAIT_MS`, else its mails are set aside (`setAsideForMs` says when
 * the soonest may go) for the job's retry; the other domains' mails go on meanwhile.
 */
export function createPacedQueue<T>(
  pacer: DomainPacer,
  options: { workspaceId: string; rates: Record<string, number>; domainOf: (item: T) => string; maxWaitMs?: number },
) {
  const maxWaitMs = options.maxWaitMs ?? MAX_PACING_WAIT_MS;
  const byDomain = new Map<string, T[]>();
  let waitedMs = 0;
  let setAside = 0;
  let setAsideForMs: number | null = null;

  function pick(): T | number | undefined {
    let soonest = Infinity;
    for (const [domain, items] of byDomain) {
      const wait = pacer.take(options.workspaceId, domain, options.rates[domain]);
      if (wait === 0) {
        const item = items.shift()!;
        // The domain goes to the back: the next pick starts with another, so no domain's mails wait behind one's.
        byDomain.delete(domain);
        if (items.length > 0) byDomain.set(domain, items);
        return item;
      }
      if (waitedMs + wait > maxWaitMs) {
        byDomain.delete(domain);
        setAside += items.length;
        setAsideForMs = Math.min(setAsideForMs ?? Infinity, wait);
      } else soonest = Math.min(soonest, wait);
    }
    return byDomain.size === 0 ? undefined : soonest;
  }

  return {
    add(item: T): void {
      const domain = options.domainOf(item);
      const items = byDomain.get(domain);
      if (items) items.push(item);
      else byDomain.set(domain, [item]);
    },
    /** The next mail that may go now (waiting a little if none may), or undefined when none is left to send now. */
    async next(): Promise<T | undefined> {
      for (;;) {
        const picked = pick();
        if (typeof picked !== 'number') return picked;
        waitedMs += picked;
        await new Promise((resolve) => setTimeout(resolve, picked));
      }
    },
    /** How many mails were set aside, and after how long the soonest of them may go (null: none). */
    get setAside() {
      return { count: setAside, afterMs: setAsideForMs };
    },
  };
}
