import { createHmac, timingSafeEqual } from 'node:crypto';
import { isUuid } from '../shared/ids.js';
import type { IdentityClaims } from './identity-token.schema.js';

/**
 * The `_ir_id` token: base64url of `version | field mask | fields | MAC`. Fields are the contact id, then the
 * message, campaign and flow ids the mask names; each is a zero byte and a UUID's 16 bytes, or a length byte
 * and that much UTF-8. The MAC is HMAC-SHA256 under the workspace secret (with a purpose label, so no other
 * token signed with the same secret can pass for this one), cut to 16 bytes. About 66 characters for a contact
 * and a message.
 */
const VERSION = 1;
const MAC_BYTES = 16;
const PURPOSE = 'emk:identity-token:v1\u0000';
const OPTIONAL_FIELDS = ['messageId', 'campaignId', 'flowId'] as const;
/** Longer than any token mint can make: refused without decoding. */
export const MAX_TOKEN_LENGTH = 1_400;

function mac(secret: string, workspaceId: string, body: Buffer): Buffer {
  return createHmac('sha256', secret)
    .update(PURPOSE)
    .update(workspaceId)
    .update('\u0000')
    .update(body)
    .digest()
    .subarray(0, MAC_BYTES);
}

export function encodeId(id: string): Buffer {
  if (isUuid(id) && id === id.toLowerCase()) return Buffer.concat([Buffer.of(0), Buffer.from(id.replace(/-/g, ''), 'hex')]);
  const text = Buffer.from(id, 'utf8');
  return Buffer.concat([Buffer.of(text.length), text]);
}

export function decodeId(bytes: Buffer, offset: number): [id: string, next: number] | null {
  const length = bytes[offset];
  if (length === undefined) return null;
  if (length === 0) {
    if (offset + 17 > bytes.length) return null;
    const hex = bytes.subarray(offset + 1, offset + 17).toString('hex');
    return [`${hex.slice(0, 8)}-${hex.slice(8, 12)}-${hex.slice(12, 16)}-${hex.slice(16, 20)}-${hex.slice(20)}`, offset + 17];
  }
  if (offset + 1 + length > bytes.length) return null;
  return [bytes.subarray(offset + 1, offset + 1 + length).toString('utf8'), offset + 1 + length];
}

export function encodeIdentityToken(secret: string, workspaceId: string, claims: IdentityClaims): string {
  let mask = 0;
  const parts = [encodeId(claims.contactId)];
  OPTIONAL_FIELDS.forEach((field, bit) => {
    const id = claims[field];
    if (id === null) return;
    mask |= 1 << bit;
    parts.push(encodeId(id));
  });
  const body = Buffer.concat([Buffer.of(VERSION, mask), ...parts]);
  return Buffer.concat([body, mac(secret, workspaceId, body)]).toString('base64url');
}

/** The claims of a token this workspace's secret signed; null for anything else (never throws). */
export function decodeIdentityToken(secret: string, workspaceId: string, token: string): IdentityClaims | null {
  if (token.length > MAX_TOKEN_LENGTH || !/^[A-Za-z0-9_-]+$/.test(token)) return null;
  const bytes = Buffer.from(token, 'base64url');
  // One spelling per token: no second encoding of the same bytes passes.
  if (bytes.toString('base64url') !== token || bytes.length < 2 + 17 + MAC_BYTES) return null;
  const body = bytes.subarray(0, bytes.length - MAC_BYTES);
  if (!timingSafeEqual(bytes.subarray(bytes.length - MAC_BYTES), mac(secret, workspaceId, body))) return null;
  if (body[0] !== VERSION) return null;
  const mask = body[1]!;
  if (mask >> OPTIONAL_FIELDS.length !== 0) return null;

  const contact = decodeId(body, 2);
  if (!contact) return null;
  const claims: IdentityClaims = { contactId: contact[0], messageId: null, campaignId: null, flowId: null };
  let offset = contact[1];
  for (const [bit, field] of OPTIONAL_FIELDS.entries()) {
    if (!(mask & (1 << bit))) continue;
    const decoded = decodeId(body, offset);
    if (!decoded) return null;
    [claims[field], offset] = decoded;
  }
  return offset === body.length ? claims : null;
}
