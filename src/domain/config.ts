import { isIP } from 'node:net';
import { z } from 'zod';
import { DEFAULT_DATABASE_URL } from './db/database.js';
import { DEFAULT_MAX_READ_LAG_SECONDS } from './db/read-replica.js';
import { UsageError } from './errors.js';
import { parseAllowHosts } from './flows/webhook-guard.js';
import { checkValue, emailSchema } from './shared/validate.js';

const limit = (fallback: number) => z.coerce.number().int().min(0).default(fallback);

/** pino's levels, for the server's logs (docs/operations.md, Logs). */
const LOG_LEVELS = ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'] as const;
export type LogLevel = (typeof LOG_LEVELS)[number];

/** Every setting from the environment, with the spec's defaults. */
const envSchema = z.object({
  EMK_DATABASE_URL: z.string().min(1).default(DEFAULT_DATABASE_URL),
  // A PostgreSQL streaming replica for reads that tolerate a little lag (docs/operations.md, Read replicas).
  EMK_DATABASE_READ_URL: z
    .string()
    .regex(/^postgres(ql)?:\/\/./, 'must be postgres://… (a PostgreSQL streaming replica)')
    .optional(),
  EMK_READ_MAX_LAG_SECONDS: z.coerce.number().min(0).max(3_600, 'must be at most 3600').default(DEFAULT_MAX_READ_LAG_SECONDS),
  PORT: z.coerce.number().int().min(0).max(65535).default(8080),
  HOST: z.string().min(1).default('0.0.0.0'),
  EMK_BASE_URL: z.string().url().optional(),
  // Behind a load balancer the client address comes from X-Forwarded-For; only trust it when told to.
  EMK_TRUST_PROXY: z.string().default('false').transform(parseTrustProxy),
  // Who may POST /api/v1/auth/register: anyone (`open`), or nobody (`closed`: owners add users instead).
  EMK_REGISTRATION: z.enum(['open', 'closed']).default('closed'),
  EMK_LIMIT_WEBHOOK_PER_INTEGRATION: limit(300),
  EMK_LIMIT_WEBHOOK_PER_IP: limit(1200),
  EMK_LIMIT_COLLECT_PER_IP: limit(1000),
  EMK_LIMIT_COLLECT_PER_SITE: limit(5000),
  EMK_LIMIT_COLLECT_PER_IP_SITE: limit(200),
  EMK_LIMIT_AUTH_PER_IP: limit(10),
  EMK_LIMIT_CP_PER_IP: limit(30),
  EMK_SMTP_URL: z
    .string()
    .regex(/^smtps?:\/\/[^/]/, 'must be smtp://user:pass@host:port or smtps://…')
    .optional(),
  // Relays cap the send rate (messages per second, 0: no cap) and the connections one client may hold.
  EMK_SMTP_RATE: z.coerce.number().min(0).max(10_000, 'must be at most 10000').default(10),
  EMK_SMTP_POOL: z.coerce.number().int().min(1).max(50, 'must be at most 50').default(5),
  // The envelope sender (MAIL FROM, Return-Path) of every mail: where receivers send bounces. Unset: the From.
  EMK_SMTP_RETURN_PATH: emailSchema.optional(),
  // After SIGTERM the listener stays open this long, answering 503, while load balancers stop sending.
  EMK_DRAIN_GRACE_MS: z.coerce.number().min(0).max(120_000, 'must be at most 120000').int().default(5_000),
  // A template part's parse and render on a render thread, and its output (docs/email.md, Templates).
  EMK_TEMPLATE_TIMEOUT_MS: z.coerce.number().int().min(10, 'must be at least 10').max(60_000, 'must be at most 60000').default(1_000),
  EMK_TEMPLATE_MAX_BYTES: z.coerce.number().int().min(1_024, 'must be at least 1024').max(104_857_600, 'must be at most 104857600').default(1_048_576),
  // Set: GET /metrics asks for `Authorization: Bearer <token>`; unset (or empty): it answers anyone (bind it privately).
  EMK_METRICS_TOKEN: z.string().regex(/^\S*$/, 'must be one word (no spaces)').optional(),
  EMK_LOG_LEVEL: z.enum(LOG_LEVELS).default('warn'),
  // Flow webhook steps (docs/flows.md, Webhook steps): hosts they may reach over http:// or on private addresses,
  // the whole call's deadline, the first retry's wait (each later one doubles).
  EMK_WEBHOOK_ALLOW_HOSTS: z.string().optional(),
  EMK_WEBHOOK_TIMEOUT_MS: z.coerce.number().int().min(10, 'must be at least 10').max(30_000, 'must be at most 30000').default(10_000),
  EMK_WEBHOOK_RETRY_BASE_MS: z.coerce.number().int().min(10, 'must be at least 10').max(3_600_000, 'must be at most 3600000').default(60_000),
});

/**
 * Which proxies' `X-Forwarded-For` entries are believed: none, the last `hops` entries (the proxies in front
 * append them; anything a client sent stands further left), or only what the listed addresses/CIDRs relayed.
 */
export type TrustProxy = false | { hops: number } | { addresses: string[] };

/** proxy-addr's names for ranges (loopback: 127.0.0.1/8 and ::1/128, …). */
const PROXY_RANGE_NAMES = new Set(['loopback', 'linklocal', 'uniquelocal']);

function isAddressOrCidr(value: string): boolean {
  if (PROXY_RANGE_NAMES.has(value)) return true;
  const [address, prefix, extra] = value.split('/');
  const family = isIP(address!);
  if (family === 0 || extra !== undefined) return false;
  if (prefix === undefined) return true;
  return /^\d{1,3}$/.test(prefix) && Number(prefix) <= (family === 4 ? 32 : 128);
}

/**
 * `false`/`0`: ignore X-Forwarded-For; a hop count (`1` behind one load balancer); or a comma-separated list of
 * the proxies' addresses/CIDRs. `true` trusted every hop, so any client chose its own address: refused.
 */
function parseTrustProxy(value: string, ctx: z.RefinementCtx): TrustProxy {
  const v = value.trim();
  if (v === '' || v === 'false' || v === '0') return false;
  if (v === 'true') {
    ctx.addIssue({
      code: 'custom',
      message: 'must be a hop count (e.g. 1 behind one load balancer) or the proxies\' addresses/CIDRs: true trusted every hop',
    });
    return z.NEVER;
  }
  if (/^\d+$/.test(v)) {
    const hops = Number(v);
    if (hops <= 10) return { hops };
  }
  const addresses = v.split(',').map((item) => item.trim());
  const wrong = addresses.find((item) => !isAddressOrCidr(item));
  if (wrong === undefined) return { addresses };
  ctx.addIssue({
    code: 'custom',
    message: `must be false, a hop count from 1 to 10 or a comma-separated list of addresses/CIDRs (not ${JSON.stringify(wrong)})`,
  });
  return z.NEVER;
}

export interface RateLimitConfig {
  webhookPerIntegration: number;
  webhookPerIp: number;
  collectPerIp: number;
  collectPerSite: number;
  collectPerIpSite: number;
  authPerIp: number;
  cpPerIp: number;
}

export interface EmkConfig {
  databaseUrl: string;
  /** EMK_DATABASE_READ_URL: the read replica; undefined: every read goes to the primary. */
  databaseReadUrl: string | undefined;
  /** EMK_READ_MAX_LAG_SECONDS: a replica whose replay lags further is skipped. */
  maxReadLagSeconds: number;
  port: number;
  host: string;
  baseUrl: string;
  trustProxy: TrustProxy;
  /** `closed` (the default): `POST /api/v1/auth/register` answers 403; workspace owners add users. */
  registration: 'open' | 'closed';
  limits: RateLimitConfig;
  smtpUrl: string | undefined;
  smtpRatePerSecond: number;
  smtpMaxConnections: number;
  /** EMK_SMTP_RETURN_PATH: the envelope sender of every mail (bounces go there); undefined: the From address. */
  smtpReturnPath: string | undefined;
  /** How long the listener stays open after SIGTERM (answering 503) before it closes. */
  drainGraceMs: number;
  /** Limits of one template part's render: its deadline and its output. */
  templateTimeoutMs: number;
  templateMaxBytes: number;
  /** EMK_METRICS_TOKEN: the bearer token GET /metrics asks for; undefined: it asks for none. */
  metricsToken: string | undefined;
  /** The server's log level (pino's: JSON lines with request ids). */
  logLevel: LogLevel;
  /** EMK_WEBHOOK_*: where flow webhook steps may call, their deadline and first retry's wait. */
  webhooks: { allowHosts: Set<string>; timeoutMs: number; retryBaseMs: number };
}

export interface ConfigOverrides {
  db?: string | undefined;
  port?: number | undefined;
  host?: string | undefined;
}

export function loadConfig(env: NodeJS.ProcessEnv = process.env, overrides: ConfigOverrides = {}): EmkConfig {
  const parsed = checkValue(envSchema, env);
  if (!parsed.success) throw new UsageError(`invalid configuration: ${parsed.problem}`);
  const e = parsed.data;
  const port = overrides.port ?? e.PORT;
  return {
    databaseUrl: overrides.db ?? e.EMK_DATABASE_URL,
    databaseReadUrl: e.EMK_DATABASE_READ_URL || undefined,
    maxReadLagSeconds: e.EMK_READ_MAX_LAG_SECONDS,
    port,
    host: overrides.host ?? e.HOST,
    baseUrl: (e.EMK_BASE_URL ?? `http://localhost:${port}`).replace(/\/+$/, ''),
    trustProxy: e.EMK_TRUST_PROXY,
    registration: e.EMK_REGISTRATION,
    limits: {
      webhookPerIntegration: e.EMK_LIMIT_WEBHOOK_PER_INTEGRATION,
      webhookPerIp: e.EMK_LIMIT_WEBHOOK_PER_IP,
      collectPerIp: e.EMK_LIMIT_COLLECT_PER_IP,
      collectPerSite: e.EMK_LIMIT_COLLECT_PER_SITE,
      collectPerIpSite: e.EMK_LIMIT_COLLECT_PER_IP_SITE,
      authPerIp: e.EMK_LIMIT_AUTH_PER_IP,
      cpPerIp: e.EMK_LIMIT_CP_PER_IP,
    },
    smtpUrl: e.EMK_SMTP_URL,
    smtpRatePerSecond: e.EMK_SMTP_RATE,
    smtpMaxConnections: e.EMK_SMTP_POOL,
    smtpReturnPath: e.EMK_SMTP_RETURN_PATH,
    drainGraceMs: e.EMK_DRAIN_GRACE_MS,
    templateTimeoutMs: e.EMK_TEMPLATE_TIMEOUT_MS,
    templateMaxBytes: e.EMK_TEMPLATE_MAX_BYTES,
    metricsToken: e.EMK_METRICS_TOKEN || undefined,
    logLevel: e.EMK_LOG_LEVEL,
    webhooks: { allowHosts: parseAllowHosts(e.EMK_WEBHOOK_ALLOW_HOSTS), timeoutMs: e.EMK_WEBHOOK_TIMEOUT_MS, retryBaseMs: e.EMK_WEBHOOK_RETRY_BASE_MS },
  };
}
