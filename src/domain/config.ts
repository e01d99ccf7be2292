import { z } from 'zod';
import { DEFAULT_DATABASE_URL } from './db/database.js';
import { UsageError } from './errors.js';
import { checkValue } from './shared/validate.js';

const limit = (fallback: number) => z.coerce.number().int().min(0).default(fallback);

/** Every setting from the environment, with the spec's defaults. */
const envSchema = z.object({
  EMK_DATABASE_URL: z.string().min(1).default(DEFAULT_DATABASE_URL),
  PORT: z.coerce.number().int().min(0).max(65535).default(8080),
  HOST: z.string().min(1).default('0.0.0.0'),
  EMK_BASE_URL: z.string().url().optional(),
  // Behind a load balancer the client address comes from X-Forwarded-For; only trust it when told to.
  EMK_TRUST_PROXY: z
    .enum(['true', 'false', '1', '0'])
    .default('false')
    .transform((v) => v === 'true' || v === '1'),
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
  // After SIGTERM the listener stays open this long, answering 503, while load balancers stop sending.
  EMK_DRAIN_GRACE_MS: z.coerce.number().min(0).max(120_000, 'must be at most 120000').int().default(5_000),
  // A template part's parse and render on a render thread, and its output (docs/email.md, Templates).
  EMK_TEMPLATE_TIMEOUT_MS: z.coerce.number().int().min(10, 'must be at least 10').max(60_000, 'must be at most 60000').default(1_000),
  EMK_TEMPLATE_MAX_BYTES: z.coerce.number().int().min(1_024, 'must be at least 1024').max(104_857_600, 'must be at most 104857600').default(1_048_576),
});

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
  port: number;
  host: string;
  baseUrl: string;
  trustProxy: boolean;
  limits: RateLimitConfig;
  smtpUrl: string | undefined;
  smtpRatePerSecond: number;
  smtpMaxConnections: number;
  /** How long the listener stays open after SIGTERM (answering 503) before it closes. */
  drainGraceMs: number;
  /** Limits of one template part's render: its deadline and its output. */
  templateTimeoutMs: number;
  templateMaxBytes: number;
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
    port,
    host: overrides.host ?? e.HOST,
    baseUrl: (e.EMK_BASE_URL ?? `http://localhost:${port}`).replace(/\/+$/, ''),
    trustProxy: e.EMK_TRUST_PROXY,
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
    drainGraceMs: e.EMK_DRAIN_GRACE_MS,
    templateTimeoutMs: e.EMK_TEMPLATE_TIMEOUT_MS,
    templateMaxBytes: e.EMK_TEMPLATE_MAX_BYTES,
  };
}
