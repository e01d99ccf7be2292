import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { RateLimitConfig } from '../../domain/config.js';
import { RateLimitedError } from '../../domain/errors.js';
import type { RateLimitBudget, RateLimiter } from '../../domain/rate-limits/rate-limiter.js';
import { SEGMENT_PATH, segmentWriteKey } from './segment-write-key.js';

const pathOf = (url: string) => url.split('?', 1)[0]!;
const WEBHOOK_PATH = /^\/ecom\/[^/]+\/([^/]+)\/?$/;

/** The spec's Limits table: which budgets a request spends, known before its body is read. */
function budgetsBeforeBody(limits: RateLimitConfig, path: string, ip: string): RateLimitBudget[] {
  const webhook = WEBHOOK_PATH.exec(path);
  if (webhook) {
    return [
      { key: `webhook:integration:${decodeURIComponent(webhook[1]!)}`, limit: limits.webhookPerIntegration },
      { key: `webhook:ip:${ip}`, limit: limits.webhookPerIp },
    ];
  }
  if (path.startsWith('/api/v1/auth/')) return [{ key: `auth:ip:${ip}`, limit: limits.authPerIp }];
  if (path.startsWith('/cp/')) return [{ key: `cp:ip:${ip}`, limit: limits.cpPerIp }];
  return [];
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

/** Rolling one-minute limits per scope; headers on every limited path, 429 with `Retry-After` past them. */
export function registerRateLimits(app: FastifyInstance, limiter: RateLimiter, limits: RateLimitConfig): void {
  app.addHook('onRequest', async (request: FastifyRequest, reply) => {
    if (request.method === 'OPTIONS') return;
    const budgets = budgetsBeforeBody(limits, pathOf(request.url), request.ip);
    if (budgets.length > 0) await spend(limiter, budgets, reply);
  });
  app.addHook('preHandler', async (request, reply) => {
    if (request.method === 'OPTIONS') return;
    const path = pathOf(request.url);
    if (path.startsWith('/collect/')) {
      await spend(limiter, collectBudgets(limits, request.ip, (request.body as { site_id?: unknown } | null)?.site_id), reply);
    } else if (SEGMENT_PATH.test(path)) {
      await spend(limiter, collectBudgets(limits, request.ip, segmentWriteKey(request)), reply);
    }
  });
}
