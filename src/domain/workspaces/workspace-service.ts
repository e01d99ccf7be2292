import { randomBytes } from 'node:crypto';
import type { Dialect } from '../db/dialect/dialect.js';
import type { Knex } from 'knex';
import type { Database } from '../db/database.js';
import type { ApiKeyService, CreatedApiKey } from '../api-keys/api-key-service.js';
import { NotFoundError, UsageError } from '../errors.js';
import type { CreatedIntegration, IntegrationService } from '../integrations/integration-service.js';
import { randomToken, uuidv7 } from '../shared/ids.js';
import type { Clock } from '../shared/time.js';
import { TtlCache } from '../shared/ttl-cache.js';
import { parseInput } from '../shared/validate.js';
import { createWorkspaceSchema, type Workspace } from './workspace.schema.js';
import { createWorkspaceStore } from './workspace-store.js';

export interface BootstrappedWorkspace {
  workspace: Workspace;
  apiKey: CreatedApiKey;
  integration: CreatedIntegration;
}

export function createWorkspaceService(deps: {
  knex: Knex;
  writeTransaction: Database['writeTransaction'];
  dialect: Dialect;
  apiKeys: ApiKeyService;
  integrations: IntegrationService;
  clock?: Clock;
}) {
  const { knex, writeTransaction, apiKeys, integrations } = deps;
  const store = createWorkspaceStore(deps.dialect);
  // A site id never moves to another workspace, so the Collect API's lookup is cached.
  const bySiteId = new TtlCache<string, Workspace>(30_000, deps.clock);

  return {
    /** A workspace with its site id and signing secret, in the caller's transaction (`bootstrap`, `/auth/register`). */
    async create(trx: Knex.Transaction, name: string): Promise<Workspace> {
      const id = uuidv7();
      await store.insert(trx, {
        id,
        name,
        site_id: `site_${randomToken(20)}`,
        secret: randomBytes(32).toString('hex'),
        created_at: Date.now(),
      });
      return (await store.findById(trx, id))!;
    },

    /** `emk init`: a workspace with its site id, one API key and an active Website integration. */
    async bootstrap(input: unknown): Promise<BootstrappedWorkspace> {
      const { name, domain } = parseInput(createWorkspaceSchema, input);
      return writeTransaction(async (trx) => {
        const workspace = await this.create(trx, name);
        const apiKey = await apiKeys.create(trx, workspace.id);
        const integration = await integrations.create(trx, workspace.id, { platform: 'website', domain });
        return { workspace, apiKey, integration };
      });
    },

    /** The Collect API's credential: 404 for a site id no workspace has. */
    async findBySiteId(siteId: string): Promise<Workspace> {
      const cached = bySiteId.get(siteId);
      if (cached) return cached;
      const workspace = await store.findBySiteId(knex, siteId);
      if (!workspace) throw new NotFoundError('unknown site_id');
      bySiteId.set(siteId, workspace);
      return workspace;
    },

    async get(id: string): Promise<Workspace> {
      const workspace = await store.findById(knex, id);
      if (!workspace) throw new NotFoundError('workspace not found');
      return workspace;
    },

    list: () => store.list(knex),

    /** Whether the database holds any workspace (the landing page's first step). */
    anyExists: () => store.any(knex),

    /** Drops the cached workspace records, after a change to their settings in this process. */
    forgetCached(): void {
      bySiteId.clear();
    },

    /**
     * The CLI's `--workspace`: a workspace id, a site id or a workspace name (a name two workspaces share is a
     * usage error naming them); absent, the only workspace there is.
     */
    async resolve(reference: string | undefined): Promise<Workspace> {
      const all = await store.list(knex);
      if (reference) {
        const exact = all.find((w) => w.id === reference || w.site_id === reference);
        if (exact) return exact;
        const named = all.filter((w) => w.name === reference);
        if (named.length === 1) return named[0]!;
        if (named.length > 1) {
          throw new UsageError(`${named.length} workspaces are named ${JSON.stringify(reference)}: pass one of their ids (${named.map((w) => w.id).join(', ')})`);
        }
        // A flag (or EMK_WORKSPACE) that names nothing: a usage error, exit 2.
        throw new UsageError(`workspace ${reference} not found (\`npx emk workspaces list\` shows them)`);
      }
      if (all.length === 1) return all[0]!;
      throw new UsageError(
        all.length === 0
          ? 'no workspace yet: run `npx emk init` first'
          : `${all.length} workspaces: pass --workspace <id> (\`npx emk workspaces list\` shows them)`,
      );
    },
  };
}

export type WorkspaceService = ReturnType<typeof createWorkspaceService>;
