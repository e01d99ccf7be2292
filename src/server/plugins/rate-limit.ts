import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { RateLimitConfig } from '../../domain/config.js';
import { RateLimitedError } from '../../domain/errors.js';
import type { RateLimitBudget, RateLimiter } from '../../domain/rate-limits/rate-limiter.js';
import { segmentWriteKey } from './segment-write-key.js';

/** The limited families of the spec's Limits table. */
type Family = 'auth' | 'cp' | 'webhook' | 'collect' | 'segment';

const CONSOLE_SIGN_IN = '/console/sign-in';
const WEBHOOK_PATH = /^\/ecom\/[^/]+\/([^/]+)\/?$/;

/** Which family a route pattern (or a normalised path) belongs to. */
function familyOf(path: string): Family | undefined {
  if (path.startsWith('/api/v1/auth/')) return 'auth';
  if (path.startsWith('/cp/')) return 'cp';
  if (WEBHOOK_PATH.test(path)) return 'webhook';
  if (path.startsWith('/collect/')) return 'collect';
  if (path.startsWith('/v1/')) return 'segment';
  return undefined;
}

const decoded = (segment: string) => {
  try {
    return decodeURIComponent(segment);
  } catch {
    return segment;
  }
};

/**
 * A path no route took, read the way a lenient router might: percent-decoded, duplicate slashes collapsed,
 * lower case. Such a request is a 404, but it still spends (and is refused by) the budget of the family it
 * spells, so no spelling is a way around a limit (`//api/v1/auth/login`, `/API/v1/auth/login`).
 */
function normalisedPath(url: string): string {
  const raw = url.split('?', 1)[0]!;
  return raw.split('/').map(decoded).join('/').replace(/\/{2,}/g, '/');
}

/**
 * What a request is limited as: the pattern of the route Fastify matched (`routeOptions.url`), whatever spelling
 * reached it (`/api/v1/%61uth/login` is `/api/v1/auth/login`); for a request no route took, its normalised path.
 * The webhook's integration id is the one the router decoded, so each spelling of it spends one budget.
 */
function limitedAs(request: FastifyRequest): { family: Family; integrationId?: string } | undefined {
  const pattern = request.routeOptions.url;
  // The console's sign-in form checks passwords as /api/v1/auth/login does, and spends the same budget.
  if (request.method === 'POST' && pattern === CONSOLE_SIGN_IN) return { family: 'auth' };
  if (pattern !== undefined) {
    const family = familyOf(pattern);
    if (family !== 'webhook') return family && { family };
    return { family, integrationId: (request.params as { integrationId?: string }).integrationId ?? '' };
  }
  const path = normalisedPath(request.url);
  const family = familyOf(path.toLowerCase());
  if (family !== 'webhook') return family && { family };
  return { family, integrationId: WEBHOOK_PATH.exec(path)?.[1] ?? '' };
}

/** The budgets a request spends before its body is read: the auth, consent-page and webhook scopes. */
function budgetsBeforeBody(limits: RateLimitConfig, limited: { family: Family; integrationId?: string }, ip: string): RateLimitBudget[] {
  switch (limited.family) {
    case 'webhook':
      return [
        { key: `webhook:integration:${limited.integrationId}`, limit: limits.webhookPerIntegration },
        { key: `webhook:ip:${ip}`, limit: limits.webhookPerIp },
      ];
    case 'auth':
      return [{ key: `auth:ip:${ip}`, limit: limits.authPerIp }];
    case 'cp':
      return [{ key: `cp:ip:${ip}`, limit: limits.cpPerIp }];
    default:
      return [];
  }
}

/** The Collect API's budgets need the site id: the body's `site_id`, or Segment's write key (the same id). */
function collectBudgets(limits: RateLimitConfig, ip: string, siteId: unknown): RateLimitBudget[] {
  const budgets: RateLimitBudget[] = [{ key: `collect:ip:${ip}`, limit: limits.collectPerIp }];
  if (typeof siteId === 'string' && siteId.length > 0 && siteId.length <= 64) {
    budgets.push(
      { key: `collect:site:${siteId}`, limit: limits.collectPerSite },
      { key: `collect:ip-site:${ip}:${siteId}`, limit: limits.collectPerIpSite },
    );
  }
  return budgets;
}

async function spend(limiter: RateLimiter, budgets: RateLimitBudget[], reply: FastifyReply): Promise<void> {
  const decision = await limiter.spend(budgets);
  if (!decision) return;
  reply.header('ratelimit-limit', String(decision.limit));
  reply.header('ratelimit-remaining', String(decision.remaining));
  reply.header('ratelimit-reset', String(decision.resetSeconds));
  if (!decision.allowed) throw new RateLimitedError(decision.retryAfterSeconds);
}

/**
 * Rolling one-minute limits per scope; headers on every limited path, 429 with `Retry-After` past them. The auth
 * budget is spent in `onRequest`, before the body is read, so a refused login never reaches the password hash.
 */
export function registerRateLimits(app: FastifyInstance, limiter: RateLimiter, limits: RateLimitConfig): void {
  app.addHook('onRequest', async (request, reply) => {
    if (request.method === 'OPTIONS') return;
    const limited = limitedAs(request);
    if (!limited) return;
    const budgets = budgetsBeforeBody(limits, limited, request.ip);
    if (budgets.length > 0) await spend(limiter, budgets, reply);
  });
  app.addHook('preHandler', async (request, reply) => {
    if (request.method === 'OPTIONS') return;
    const family = limitedAs(request)?.family;
    if (family === 'collect') {
      await spend(limiter, collectBudgets(limits, request.ip, (request.body as { site_id?: unknown } | null)?.site_id), reply);
    } else if (family === 'segment') {
      await spend(limiter, collectBudgets(limits, request.ip, segmentWriteKey(request)), reply);
    }
  });
}
