import type { Knex } from 'knex';
import type { ContactLookup } from '../contacts/contact-lookup.js';
import { NotFoundError } from '../errors.js';
import { TtlCache } from '../shared/ttl-cache.js';
import { parseInput } from '../shared/validate.js';
import { decodeIdentityToken, encodeIdentityToken } from './identity-token-codec.js';
import { identityClaimsSchema, type IdentityClaims, type IdentityClaimsInput } from './identity-token.schema.js';
import { createIdentityTokenStore } from './identity-token-store.js';

export type { IdentityClaims } from './identity-token.schema.js';

/**
 * Identity tokens: the `_ir_id` value a sent message carries, tying a later visit or order to the contact and
 * the message (campaign or flow) that issued it. Signed with the workspace secret; nothing is stored.
 */
export function createIdentityTokenService(deps: { knex: Knex; contactLookup: ContactLookup }) {
  const { knex, contactLookup } = deps;
  const store = createIdentityTokenStore();
  // A workspace's secret does not change; the cache spares the webhook a query per order.
  const secrets = new TtlCache<string, string>(60_000);

  async function secretOf(db: Knex | Knex.Transaction, workspaceId: string): Promise<string | null> {
    const cached = secrets.get(workspaceId);
    if (cached) return cached;
    const secret = await store.secretOf(db, workspaceId);
    if (secret) secrets.set(workspaceId, secret);
    return secret;
  }

  return {
    /** The workspace's signing secret (also signs tracking links), cached. */
    secretOf: (workspaceId: string, db: Knex | Knex.Transaction = knex) => secretOf(db, workspaceId),

    async mint(workspaceId: string, claims: IdentityClaimsInput, db: Knex | Knex.Transaction = knex): Promise<string> {
      const input = parseInput(identityClaimsSchema, claims);
      const secret = await secretOf(db, workspaceId);
      if (!secret) throw new NotFoundError('workspace not found');
      return encodeIdentityToken(secret, workspaceId, {
        contactId: input.contactId,
        messageId: input.messageId ?? null,
        campaignId: input.campaignId ?? null,
        flowId: input.flowId ?? null,
      });
    },

    /**
     * The claims of a token minted for this workspace whose contact still exists here; null for a tampered,
     * foreign or garbage token. Inside a transaction pass it as `db`.
     */
    async resolve(
      workspaceId: string,
      token: unknown,
      db: Knex | Knex.Transaction = knex,
    ): Promise<IdentityClaims | null> {
      if (typeof token !== 'string' || token.length === 0) return null;
      const secret = await secretOf(db, workspaceId);
      if (!secret) return null;
      const claims = decodeIdentityToken(secret, workspaceId, token);
      if (!claims || !(await contactLookup.findById(db, workspaceId, claims.contactId))) return null;
      return claims;
    },
  };
}

export type IdentityTokenService = ReturnType<typeof createIdentityTokenService>;
