import type { FastifyInstance, InjectOptions, LightMyRequestResponse } from 'fastify';
import { afterAll, beforeAll, describe } from 'vitest';
import { loadConfig, type EmkConfig } from '../../src/domain/config.js';
import { createServices, emailOptionsOf, type EmailOptions, type Services } from '../../src/domain/create-services.js';
import { openDatabase } from '../../src/domain/db/database.js';
import { buildApp } from '../../src/server/app.js';
import { createTestDatabase, DIALECTS, type DialectName, type TestDatabase } from './test-databases.js';

/** Rate limits off unless a test turns them on: tests fire many requests from one address. */
export const NO_LIMITS: Record<string, string> = {
  EMK_LIMIT_WEBHOOK_PER_INTEGRATION: '0',
  EMK_LIMIT_WEBHOOK_PER_IP: '0',
  EMK_LIMIT_COLLECT_PER_IP: '0',
  EMK_LIMIT_COLLECT_PER_SITE: '0',
  EMK_LIMIT_COLLECT_PER_IP_SITE: '0',
  EMK_LIMIT_AUTH_PER_IP: '0',
  EMK_LIMIT_CP_PER_IP: '0',
};

/** Registration open (`EMK_REGISTRATION=open`): for tests that register users through `POST /api/v1/auth/register`. */
export const OPEN_REGISTRATION: Record<string, string> = { EMK_REGISTRATION: 'open' };

/**
 * The clock of the harness's services (caches, rate-limit windows, engagement times), moved by hand: it starts
 * frozen 30 s into the previous minute (a window never turns in the middle of a test, and it never runs ahead of
 * the wall clock that stamps orders sent without `ordered_at`) and moves only when a test advances it.
 */
export interface ManualClock {
  (): number;
  advance(ms: number): void;
}

export function manualClock(start = Date.now() - (Date.now() % 60_000) - 30_000): ManualClock {
  let now = start;
  return Object.assign(() => now, { advance: (ms: number) => void (now += ms) });
}

export interface TestWorkspace {
  id: string;
  siteId: string;
  apiKey: string;
  integrationId: string;
  integrationKey: string;
}

export interface Harness {
  dialect: DialectName;
  database: TestDatabase;
  services: Services;
  /** What the services' caches and rate limits read as the time. */
  clock: ManualClock;
  app: FastifyInstance;
  config: EmkConfig;
  /** A new workspace, so tests in one file stay apart. */
  workspace(name?: string): Promise<TestWorkspace>;
  /** `app.inject` with a JSON body and the workspace's API key when given. */
  request(options: InjectOptions & { key?: string; json?: unknown }): Promise<LightMyRequestResponse>;
}

/** What a suite sets on its services beyond the environment (a relay webhook's certificate fetcher). */
export interface HarnessOptions {
  email?: Partial<EmailOptions>;
}

export async function createHarness(dialect: DialectName, env: Record<string, string> = {}, options: HarnessOptions = {}): Promise<Harness> {
  const database = await createTestDatabase(dialect);
  const config = loadConfig({ ...NO_LIMITS, ...env, EMK_DATABASE_URL: database.url, EMK_LOG_LEVEL: 'silent' });
  const clock = manualClock();
  const services = createServices(openDatabase(config.databaseUrl), { clock, email: { ...emailOptionsOf(config), ...options.email } });
  const app = await buildApp({ services, config, logLevel: 'silent' });
  return {
    dialect,
    database,
    services,
    clock,
    app,
    config,
    async workspace(name = 'Test shop') {
      const { workspace, apiKey, integration } = await services.workspaces.bootstrap({ name, domain: 'shop.test' });
      return {
        id: workspace.id,
        siteId: workspace.site_id,
        apiKey: apiKey.key,
        integrationId: integration.id,
        integrationKey: integration.api_key,
      };
    },
    request({ key, json, headers, ...options }) {
      return app.inject({
        ...options,
        headers: {
          ...(key ? { 'x-api-key': key } : {}),
          ...(json !== undefined ? { 'content-type': 'application/json' } : {}),
          ...headers,
        },
        ...(json !== undefined ? { payload: JSON.stringify(json) } : {}),
      } as InjectOptions);
    },
  };
}

export async function closeHarness(harness: Harness): Promise<void> {
  await harness.app.close();
  await harness.services.close();
  await harness.database.drop();
}

/**
 * Defines the suite once per database dialect, each on a database of its own. The harness is available
 * inside tests (after beforeAll) through the getter.
 */
export function describeEachDatabase(
  name: string,
  define: (h: () => Harness, dialect: DialectName) => void,
  env: Record<string, string> = {},
  options: HarnessOptions = {},
): void {
  for (const dialect of DIALECTS) {
    describe(`${name} [${dialect}]`, () => {
      let harness: Harness | undefined;
      beforeAll(async () => {
        harness = await createHarness(dialect, env, options);
      });
      afterAll(async () => {
        if (harness) await closeHarness(harness);
      });
      define(() => harness!, dialect);
    });
  }
}
