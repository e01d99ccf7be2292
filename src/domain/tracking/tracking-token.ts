import { createHmac, timingSafeEqual } from 'node:crypto';
import { decodeId, encodeId } from '../identity-tokens/identity-token-codec.js';

/**
 * Tokens in the URLs a message carries (docs/email.md, Tracking): base64url of
 * `version | kind | workspace id | subject id | [url] | [message id] | MAC`. The subject is the message (click,
 * open) or the contact (unsubscribe, preferences); a consent token also names the message it was made for, so an
 * unsubscribe is credited to that message's campaign or flow. The MAC is HMAC-SHA256 under the workspace secret with a purpose label
 * (no identity token or other kind can pass for one), cut to 16 bytes. The workspace id travels in clear so
 * the server knows whose secret to check; nothing is stored per link.
 */
export type TrackingKind = 'click' | 'open' | 'consent';

const VERSION = 1;
const MAC_BYTES = 16;
const PURPOSE = 'emk:tracking:v1\u0000';
const KIND_BYTE: Record<TrackingKind, number> = { click: 1, open: 2, consent: 3 };
/** Links longer than this are left as they are (a token must fit in a URL every client accepts). */
export const MAX_TRACKED_URL_BYTES = 2_000;
const MAX_TOKEN_LENGTH = 2_200;

export interface TrackingClaims {
  kind: TrackingKind;
  workspaceId: string;
  /** The message (click, open) or the contact (consent). */
  subjectId: string;
  /** The link's original URL (click only). */
  url: string | null;
  /** Consent only: the message whose link it is (absent from tokens made before reports counted unsubscribes). */
  messageId?: string | null;
}

const mac = (secret: string, body: Buffer) =>
  createHmac('sha256', secret).update(PURPOSE).update(body).digest().subarray(0, MAC_BYTES);

const NOTHING = Buffer.alloc(0);

/**
 * Signs tokens of one workspace: its id encoded once, and the subject's kept from the last token (a message's
 * links are signed one after another, all naming that message), so a send pays for the MAC and little else.
 */
export function createTrackingTokenSigner(secret: string, workspaceId: string) {
  const workspace = encodeId(workspaceId);
  let lastSubject: { id: string; bytes: Buffer } | null = null;
  return (claims: Omit<TrackingClaims, 'workspaceId'>): string => {
    if (lastSubject?.id !== claims.subjectId) lastSubject = { id: claims.subjectId, bytes: encodeId(claims.subjectId) };
    const body = Buffer.concat([
      Buffer.of(VERSION, KIND_BYTE[claims.kind]),
      workspace,
      lastSubject.bytes,
      claims.url === null ? NOTHING : Buffer.from(claims.url, 'utf8'),
      claims.kind === 'consent' && claims.messageId ? encodeId(claims.messageId) : NOTHING,
    ]);
    return Buffer.concat([body, mac(secret, body)]).toString('base64url');
  };
}

export const signTrackingToken = (secret: string, claims: TrackingClaims): string => createTrackingTokenSigner(secret, claims.workspaceId)(claims);

/** The workspace a token names, read before its MAC can be checked (that needs the workspace's secret). */
export function workspaceOfToken(token: string): string | null {
  if (token.length > MAX_TOKEN_LENGTH || !/^[A-Za-z0-9_-]+$/.test(token)) return null;
  const bytes = Buffer.from(token, 'base64url');
  if (bytes.length < 2 + MAC_BYTES) return null;
  return decodeId(bytes.subarray(0, bytes.length - MAC_BYTES), 2)?.[0] ?? null;
}

/** The claims of a token signed with `secret` and of the expected kind; null for anything else. */
export function verifyTrackingToken(secret: string, token: string, kind: TrackingKind): TrackingClaims | null {
  if (token.length > MAX_TOKEN_LENGTH || !/^[A-Za-z0-9_-]+$/.test(token)) return null;
  const bytes = Buffer.from(token, 'base64url');
  // One spelling per token: no second encoding of the same bytes passes.
  if (bytes.toString('base64url') !== token || bytes.length < 2 + MAC_BYTES) return null;
  const body = bytes.subarray(0, bytes.length - MAC_BYTES);
  if (!timingSafeEqual(bytes.subarray(bytes.length - MAC_BYTES), mac(secret, body))) return null;
  if (body[0] !== VERSION || body[1] !== KIND_BYTE[kind]) return null;
  const workspace = decodeId(body, 2);
  const subject = workspace && decodeId(body, workspace[1]);
  if (!workspace || !subject) return null;
  const rest = body.subarray(subject[1]);
  if (kind === 'consent') {
    const message = rest.length > 0 ? decodeId(body, subject[1]) : null;
    if (rest.length > 0 && (!message || message[1] !== body.length)) return null;
    return { kind, workspaceId: workspace[0], subjectId: subject[0], url: null, messageId: message?.[0] ?? null };
  }
  if (kind !== 'click' && rest.length > 0) return null;
  return { kind, workspaceId: workspace[0], subjectId: subject[0], url: kind === 'click' ? rest.toString('utf8') : null };
}
