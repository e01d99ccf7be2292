import { generateKeyPair } from 'node:crypto';
import { promisify } from 'node:util';
import type { Knex } from 'knex';
import type { Database } from '../db/database.js';
import { ConflictError, NotFoundError, ValidationError } from '../errors.js';
import type { IntegrationService } from '../integrations/integration-service.js';
import { randomToken, uuidv7 } from '../shared/ids.js';
import { toPage, type Page } from '../shared/paging.js';
import { systemClock, type Clock } from '../shared/time.js';
import { parseInput } from '../shared/validate.js';
import { createSenderSchema, dnsName, type DnsRecord, type Sender } from './sender.schema.js';
import { createSenderStore, type SenderRow } from './sender-store.js';
import { createSigningKeys, type SigningKey } from './signing-keys.js';

const makeKeyPair = promisify(generateKeyPair);
/** A workspace's own domains: every integration it has, one page (a shop has a handful). */
const OWN_DOMAINS_PAGE = { page: 1, perPage: 500 };

/** The records a sender domain publishes: its DKIM key, and SPF and DMARC as recommended starting values. */
function dnsRecords(row: SenderRow): DnsRecord[] {
  return [
    { type: 'TXT', name: `${row.dkim_selector}._domainkey.${row.domain}`, value: `v=DKIM1; k=rsa; p=${row.dkim_public_key}` },
    { type: 'TXT', name: row.domain, value: 'v=spf1 a mx ~all' },
    { type: 'TXT', name: `_dmarc.${row.domain}`, value: `v=DMARC1; p=none; adkim=r; aspf=r; rua=mailto:dmarc@${row.domain}` },
  ];
}

const toSender = (row: SenderRow): Sender => ({
  id: row.id,
  domain: row.domain,
  dkim: { selector: row.dkim_selector, public_key: row.dkim_public_key },
  dns: dnsRecords(row),
});

/** Whether the address's domain is one of the domains or below one (relaxed alignment, as DMARC's default). */
function atDomain(email: string, domains: Iterable<string>): boolean {
  const name = dnsName(email.slice(email.lastIndexOf('@') + 1));
  if (name === null) return false;
  for (const domain of domains) if (name === domain || name.endsWith(`.${domain}`)) return true;
  return false;
}

/**
 * Sender domains (docs/api/senders.md): the domains a workspace may put in `from_email`. Its own domains (those
 * of its integrations: `emk init --domain`) count from the start; an owner adds others, each with an RSA 2048
 * DKIM key pair made here (the private key is kept for signing; the public one goes in DNS).
 */
export function createSenderService(deps: {
  knex: Knex;
  writeTransaction: Database['writeTransaction'];
  integrations: Pick<IntegrationService, 'list'>;
  clock?: Clock;
}) {
  const { knex, writeTransaction, integrations } = deps;
  const store = createSenderStore();
  const now = deps.clock ?? systemClock;
  const signingKeys = createSigningKeys((workspaceId) => store.signingKeys(knex, workspaceId), now);

  /** Every domain the workspace may send from: its integrations' (active ones) and its senders'. */
  async function domains(workspaceId: string): Promise<Set<string>> {
    const [own, added] = await Promise.all([integrations.list(workspaceId, OWN_DOMAINS_PAGE), store.domains(knex, workspaceId)]);
    const all = new Set(added);
    for (const integration of own.data) {
      // An integration's domain may carry a port (`shop.example.com:8443`): the host is the domain.
      const name = integration.active ? dnsName(integration.domain.replace(/:\d+$/, '')) : null;
      if (name) all.add(name);
    }
    return all;
  }

  return {
    /** POST /api/v1/senders: 409 when the workspace has the domain already. */
    async add(workspaceId: string, body: unknown): Promise<Sender> {
      const { domain } = parseInput(createSenderSchema, body);
      // Made off the event loop (libuv's pool), before the transaction: it takes tens of milliseconds.
      const { publicKey, privateKey } = await makeKeyPair('rsa', {
        modulusLength: 2048,
        publicKeyEncoding: { type: 'spki', format: 'der' },
        privateKeyEncoding: { type: 'pkcs8', format: 'pem' },
      });
      const at = now();
      const row: SenderRow = {
        id: uuidv7(at),
        workspace_id: workspaceId,
        domain,
        // A selector of its own per key, so a later key can be published beside this one.
        dkim_selector: `emk${randomToken(8).toLowerCase()}`,
        dkim_public_key: publicKey.toString('base64'),
        dkim_private_key: privateKey,
        created_at: at,
      };
      await writeTransaction(async (trx) => {
        if (await store.findByDomain(trx, workspaceId, domain)) throw new ConflictError('sender domain already added');
        await store.insert(trx, row);
      });
      signingKeys.forget(workspaceId);
      return toSender(row);
    },

    /** GET /api/v1/senders: the domains an owner added, in alphabetical order (a workspace has a handful: one page). */
    async list(workspaceId: string): Promise<Page<Sender>> {
      const rows = await store.list(knex, workspaceId);
      return toPage(rows.map(toSender), rows.length, { page: 1, perPage: Math.max(rows.length, 1) });
    },

    async remove(workspaceId: string, id: string): Promise<void> {
      if (id.length > 36 || !(await store.delete(knex, workspaceId, id))) throw new NotFoundError();
      signingKeys.forget(workspaceId);
    },

    /** The DKIM key that signs mail from this address (signing-keys.ts: its sender domain's, or null). */
    signingKeyFor: (workspaceId: string, fromEmail: string): Promise<SigningKey | null> => signingKeys.keyFor(workspaceId, fromEmail),

    /**
     * A `from_email` must be at one of the workspace's sender domains (or below one): else a 400 naming the
     * field (`from_email`, `steps[0].from_email`, `sender.from_email`). Null or absent passes.
     */
    async checkFromEmail(workspaceId: string, email: string | null | undefined, field: string): Promise<void> {
      if (email === null || email === undefined) return;
      const allowed = await domains(workspaceId);
      if (atDomain(email, allowed)) return;
      const named = allowed.size === 0 ? 'it has none yet' : [...allowed].sort().join(', ');
      throw new ValidationError(`invalid request: ${field} must be at one of the workspace's sender domains (${named}): POST /api/v1/senders adds one`);
    },
  };
}

export type SenderService = ReturnType<typeof createSenderService>;
