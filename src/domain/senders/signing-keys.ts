import { createPrivateKey, type KeyObject } from 'node:crypto';
import type { Clock } from '../shared/time.js';
import { dnsName } from './sender.schema.js';

/** A sender domain's DKIM key, as the SMTP transport signs with it (`d=` domainName, `s=` keySelector). */
export interface SigningKey {
  domainName: string;
  keySelector: string;
  /**
   * Parsed once when the keys are read: given the PEM, node parses it again for every signature, which costs
   * more than the RSA signature itself (1.3 ms against 0.55 ms a message: docs/performance.md#dkim-signing).
   */
  privateKey: KeyObject;
}

/** A sender row's key, as the store reads it. */
export interface StoredKey {
  domain: string;
  dkim_selector: string;
  /** PKCS#8 PEM. */
  dkim_private_key: string;
}

/**
 * How long a workspace's keys are remembered: a batch of up to 500 messages asks once, and a campaign of many
 * batches reads the senders table once a minute. A sender added or removed in this process is seen at once; one
 * added by another process (`emk senders add` beside `emk serve`) is signed with within this time.
 */
const REMEMBERED_MS = 60_000;
/** Workspaces whose keys are remembered at once (a few kB each); the oldest are forgotten first. */
const MAX_WORKSPACES = 1_000;

/**
 * The key that signs mail from an address: that of the sender domain the address is at, or the nearest one it is
 * below (`news@mail.shop.example` is signed by `shop.example`, `d=shop.example`, which DMARC's relaxed alignment
 * accepts; a sender `mail.shop.example` of its own would sign instead). Null when no such domain has a key (the
 * workspace's own domains from its integrations have none).
 */
export function createSigningKeys(load: (workspaceId: string) => Promise<StoredKey[]>, clock: Clock) {
  const remembered = new Map<string, { at: number; keys: Promise<SigningKey[]> }>();

  function keysOf(workspaceId: string): Promise<SigningKey[]> {
    const now = clock();
    const hit = remembered.get(workspaceId);
    if (hit && now - hit.at < REMEMBERED_MS) return hit.keys;
    remembered.delete(workspaceId);
    if (remembered.size >= MAX_WORKSPACES) remembered.delete(remembered.keys().next().value!);
    const keys = load(workspaceId).then((rows) =>
      rows.map((r) => ({ domainName: r.domain, keySelector: r.dkim_selector, privateKey: createPrivateKey(r.dkim_private_key) })),
    );
    remembered.set(workspaceId, { at: now, keys });
    // A failed read is not remembered: the next batch asks again.
    keys.catch(() => remembered.get(workspaceId)?.keys === keys && remembered.delete(workspaceId));
    return keys;
  }

  return {
    async keyFor(workspaceId: string, email: string): Promise<SigningKey | null> {
      const name = dnsName(email.slice(email.lastIndexOf('@') + 1));
      if (name === null) return null;
      let best: SigningKey | null = null;
      for (const key of await keysOf(workspaceId)) {
        const at = name === key.domainName || name.endsWith(`.${key.domainName}`);
        if (at && (best === null || key.domainName.length > best.domainName.length)) best = key;
      }
      return best;
    },
    /** A sender of the workspace was added or removed here. */
    forget(workspaceId: string): void {
      remembered.delete(workspaceId);
    },
  };
}
