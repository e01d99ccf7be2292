import { timingSafeEqual } from 'node:crypto';
import type { Dialect } from '../db/dialect/dialect.js';
import type { Knex } from 'knex';
import type { Database } from '../db/database.js';
import { NotFoundError, UnauthorizedError, ValidationError } from '../errors.js';
import { hashSecret, randomToken, uuidv7 } from '../shared/ids.js';
import { toPage, type Page, type Paging } from '../shared/paging.js';
import { toIso, type Clock } from '../shared/time.js';
import { TtlCache } from '../shared/ttl-cache.js';
import { parseInput } from '../shared/validate.js';
import {
  createIntegrationSchema,
  isNativePlatform,
  updateIntegrationSchema,
  type CreatedIntegration,
  type CreatedPlatformIntegration,
  type Integration,
  type NativePlatform,
  type SignedIntegration,
  type WebhookIntegration,
} from './integration.schema.js';
import { createIntegrationStore, type IntegrationRow } from './integration-store.js';

export type { CreatedIntegration, CreatedPlatformIntegration, Integration, SignedIntegration, WebhookIntegration } from './integration.schema.js';

/** Integration keys carry their own prefix so a workspace key is never mistaken for one. */
export const INTEGRATION_KEY_PREFIX = 'whk_';

/** How long another process's deactivation or rotation can go unseen here; in this process it is at once. */
const CACHE_TTL_MS = 5_000;
// Integration ids are UUIDs: anything longer is unknown without asking the database.
const MAX_ID_LENGTH = 36;

const newKey = () => `${INTEGRATION_KEY_PREFIX}${randomToken(40)}`;

/** The key of an `Authorization: Bearer <key>` header; null when the header is absent or of another form. */
export function bearerKey(authorization: string | undefined): string | null {
  const match = /^\s*bearer\s+(\S+)\s*$/i.exec(authorization ?? '');
  return match ? match[1]! : null;
}

function sameHash(a: string, b: string): boolean {
  const left = Buffer.from(a);
  const right = Buffer.from(b);
  return left.length === right.length && timingSafeEqual(left, right);
}

/**
 * Store integrations: a Website integration per shop, with its own webhook key; a Shopify or WooCommerce one,
 * with the platform's webhook secret (docs/platforms/README.md).
 */
export function createIntegrationService(deps: {
  knex: Knex;
  dialect: Dialect;
  writeTransaction: Database['writeTransaction'];
  /** `EMK_BASE_URL`: a platform integration's webhook URL is built from it. */
  baseUrl: string;
  clock?: Clock;
}) {
  const { knex, writeTransaction } = deps;
  const store = createIntegrationStore(deps.dialect);
  const webhookUrl = (platform: string, id: string) => `${deps.baseUrl.replace(/\/+$/, '')}/ecom/${platform}/${id}`;
  /** The record, with the webhook URL of a platform integration. */
  const recordOf = (row: IntegrationRow): Integration =>
    isNativePlatform(row.platform) ? { ...store.toIntegration(row), webhook_url: webhookUrl(row.platform, row.id) } : store.toIntegration(row);
  // Integration id → its row, for the webhook's hot path. Changes made here drop the entry at once.
  const cache = new TtlCache<string, IntegrationRow>(CACHE_TTL_MS, deps.clock);
  // Workspace id → the domains of its active website integrations, for clicks (which links get `_ir_id`).
  const domainCache = new TtlCache<string, string[]>(CACHE_TTL_MS, deps.clock);

  /** An active integration by id (any workspace: webhook paths name it alone), through the cache. */
  async function activeIntegration(integrationId: string, platform: string): Promise<IntegrationRow> {
    let row = cache.get(integrationId);
    if (!row && integrationId.length <= MAX_ID_LENGTH) {
      row = (await store.findById(knex, integrationId)) ?? undefined;
      if (row) cache.set(integrationId, row);
    }
    if (!row || !row.active || row.platform !== platform) throw new NotFoundError('integration not found');
    return row;
  }

  async function findOwned(db: Knex | Knex.Transaction, workspaceId: string, id: string, lock = false) {
    const row = id.length <= MAX_ID_LENGTH ? await store.findInWorkspace(db, workspaceId, id, lock) : null;
    if (!row) throw new NotFoundError();
    return row;
  }

  return {
    /** A new integration with a fresh key (also used by `emk init` inside its transaction). */
    async create(
      db: Knex | Knex.Transaction,
      workspaceId: string,
      input: { platform: string; domain: string },
    ): Promise<CreatedIntegration> {
      const apiKey = newKey();
      const row: IntegrationRow = {
        id: uuidv7(),
        workspace_id: workspaceId,
        platform: input.platform,
        domain: input.domain,
        api_key_hash: hashSecret(apiKey),
        secret: null,
        active: true,
        created_at: Date.now(),
      };
      await store.insert(db, row);
      domainCache.delete(workspaceId);
      return { ...store.toIntegration(row), api_key: apiKey };
    },

    /**
     * POST /api/v1/integrations and `emk integrations create`: `{platform, domain}` → a Website integration with
     * its key, shown once; `{platform: "shopify"|"woocommerce", secret, shop_domain?}` → one that checks the
     * platform's signatures with the secret, and the URL to register with the platform.
     */
    async add(workspaceId: string, body: unknown): Promise<CreatedIntegration | CreatedPlatformIntegration> {
      const input = parseInput(createIntegrationSchema, body);
      const { platform } = input;
      if (!isNativePlatform(platform)) return this.create(knex, workspaceId, { platform, domain: input.domain! });
      const row: IntegrationRow = {
        id: uuidv7(),
        workspace_id: workspaceId,
        platform,
        domain: input.shop_domain ?? '',
        api_key_hash: null,
        secret: input.secret!,
        active: true,
        created_at: Date.now(),
      };
      await store.insert(knex, row);
      return { id: row.id, platform, webhook_url: webhookUrl(platform, row.id), active: true, created_at: toIso(row.created_at)! };
    },

    async list(workspaceId: string, paging: Paging): Promise<Page<Integration>> {
      const { rows, total } = await store.list(knex, workspaceId, paging);
      return toPage(rows.map(recordOf), total, paging);
    },

    /** One integration; a platform integration's record also counts the deliveries of topics emk ignored. */
    async get(workspaceId: string, id: string): Promise<Integration> {
      const row = await findOwned(knex, workspaceId, id);
      return isNativePlatform(row.platform) ? { ...recordOf(row), ignored_topics: await store.ignoredTopics(knex, id) } : recordOf(row);
    },

    /** PATCH: `active` and `domain`; a deactivated integration's webhook answers 404 from now on. */
    async update(workspaceId: string, id: string, body: unknown): Promise<Integration> {
      const input = parseInput(updateIntegrationSchema, body);
      const row = await writeTransaction(async (trx) => {
        const current = await findOwned(trx, workspaceId, id, true);
        const changes = {
          ...(input.active !== undefined && input.active !== current.active ? { active: input.active } : {}),
          ...(input.domain !== undefined && input.domain !== current.domain ? { domain: input.domain } : {}),
        };
        if (Object.keys(changes).length > 0) await store.update(trx, id, changes);
        return { ...current, ...changes };
      });
      cache.delete(id);
      domainCache.delete(workspaceId);
      return recordOf(row);
    },

    /** The domains of the workspace's active website integrations (a few seconds old at most in other processes). */
    async websiteDomains(workspaceId: string): Promise<string[]> {
      const hit = domainCache.get(workspaceId);
      if (hit) return hit;
      const domains = await store.activeWebsiteDomains(knex, workspaceId);
      domainCache.set(workspaceId, domains);
      return domains;
    },

    /** A new webhook key; the old one stops working at once (in other processes within the cache's TTL). */
    async rotateKey(workspaceId: string, id: string): Promise<CreatedIntegration> {
      const apiKey = newKey();
      const row = await writeTransaction(async (trx) => {
        const current = await findOwned(trx, workspaceId, id, true);
        // A platform's deliveries are signed with its secret: a bearer key would open nothing.
        if (isNativePlatform(current.platform)) throw new ValidationError(`invalid request: a ${current.platform} integration has no key (its deliveries are signed)`);
        await store.update(trx, id, { api_key_hash: hashSecret(apiKey) });
        return current;
      });
      cache.delete(id);
      return { ...store.toIntegration(row), api_key: apiKey };
    },

    /**
     * The webhook's credential check (`/ecom/{platform}/{integrationId}`): 404 `integration not found` for an
     * unknown or inactive integration or one of another platform; 401 `invalid api key` unless the header is
     * `Authorization: Bearer <this integration's key>` (a workspace key is not one).
     */
    async authenticateWebhook(
      integrationId: string,
      platform: string,
      authorization: string | undefined,
    ): Promise<WebhookIntegration> {
      const row = await activeIntegration(integrationId, platform);
      const key = bearerKey(authorization);
      if (!key || row.api_key_hash === null || !sameHash(hashSecret(key), row.api_key_hash)) throw new UnauthorizedError('invalid api key');
      return { id: row.id, workspaceId: row.workspace_id, platform: row.platform, domain: row.domain };
    },

    /**
     * The Shopify or WooCommerce integration a delivery names, with its secret (the caller checks the signature):
     * 404 `integration not found` for an unknown or inactive one or one of another platform.
     */
    async signedIntegration(integrationId: string, platform: NativePlatform): Promise<SignedIntegration> {
      const row = await activeIntegration(integrationId, platform);
      return { id: row.id, workspaceId: row.workspace_id, platform: row.platform, domain: row.domain, secret: row.secret ?? '' };
    },

    /** Platform integrations created without a shop domain take the one their first signed delivery names. */
    async learnDomains(trx: Knex.Transaction, domains: Array<{ id: string; domain: string }>): Promise<void> {
      await store.fillDomains(trx, domains);
      for (const { id } of domains) cache.delete(id);
    },

    /** Counts deliveries of topics emk does not use (shown by `get` as `ignored_topics`), in the caller's transaction. */
    countIgnoredTopics: (trx: Knex.Transaction, counts: Array<{ integrationId: string; topic: string; count: number }>) =>
      store.countIgnoredTopics(trx, counts.map((c) => ({ integration_id: c.integrationId, topic: c.topic, count: c.count }))),

    /** Turns integrations off inside the caller's transaction (a shop that is gone: `shop/redact`). */
    async deactivate(trx: Knex.Transaction, ids: string[]): Promise<void> {
      for (const id of ids) {
        await store.update(trx, id, { active: false });
        cache.delete(id);
      }
    },
  };
}

export type IntegrationService = ReturnType<typeof createIntegrationService>;
