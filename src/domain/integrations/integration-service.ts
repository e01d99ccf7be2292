import { timingSafeEqual } from 'node:crypto';
import type { Dialect } from '../db/dialect/dialect.js';
import type { Knex } from 'knex';
import type { Database } from '../db/database.js';
import { NotFoundError, UnauthorizedError } from '../errors.js';
import { hashSecret, randomToken, uuidv7 } from '../shared/ids.js';
import { toPage, type Page, type Paging } from '../shared/paging.js';
import type { Clock } from '../shared/time.js';
import { TtlCache } from '../shared/ttl-cache.js';
import { parseInput } from '../shared/validate.js';
import {
  createIntegrationSchema,
  updateIntegrationSchema,
  type CreatedIntegration,
  type Integration,
  type WebhookIntegration,
} from './integration.schema.js';
import { createIntegrationStore, type IntegrationRow } from './integration-store.js';

export type { CreatedIntegration, Integration, WebhookIntegration } from './integration.schema.js';

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

/** Store integrations (a Website integration per shop); each has its own webhook key. */
export function createIntegrationService(deps: {
  knex: Knex;
  dialect: Dialect;
  writeTransaction: Database['writeTransaction'];
  clock?: Clock;
}) {
  const { knex, writeTransaction } = deps;
  const store = createIntegrationStore(deps.dialect);
  // Integration id → its row, for the webhook's hot path. Changes made here drop the entry at once.
  const cache = new TtlCache<string, IntegrationRow>(CACHE_TTL_MS, deps.clock);
  // Workspace id → the domains of its active website integrations, for clicks (which links get `_ir_id`).
  const domainCache = new TtlCache<string, string[]>(CACHE_TTL_MS, deps.clock);

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
        active: true,
        created_at: Date.now(),
      };
      await store.insert(db, row);
      domainCache.delete(workspaceId);
      return { ...store.toIntegration(row), api_key: apiKey };
    },

    /** POST /api/v1/integrations: `{platform, domain}` → the integration with its key, shown once. */
    async add(workspaceId: string, body: unknown): Promise<CreatedIntegration> {
      return this.create(knex, workspaceId, parseInput(createIntegrationSchema, body));
    },

    async list(workspaceId: string, paging: Paging): Promise<Page<Integration>> {
      const { rows, total } = await store.list(knex, workspaceId, paging);
      return toPage(rows.map(store.toIntegration), total, paging);
    },

    async get(workspaceId: string, id: string): Promise<Integration> {
      return store.toIntegration(await findOwned(knex, workspaceId, id));
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
      return store.toIntegration(row);
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
      let row = cache.get(integrationId);
      if (!row && integrationId.length <= MAX_ID_LENGTH) {
        row = (await store.findById(knex, integrationId)) ?? undefined;
        if (row) cache.set(integrationId, row);
      }
      if (!row || !row.active || row.platform !== platform) throw new NotFoundError('integration not found');
      const key = bearerKey(authorization);
      if (!key || !sameHash(hashSecret(key), row.api_key_hash)) throw new UnauthorizedError('invalid api key');
      return { id: row.id, workspaceId: row.workspace_id, platform: row.platform, domain: row.domain };
    },
  };
}

export type IntegrationService = ReturnType<typeof createIntegrationService>;
