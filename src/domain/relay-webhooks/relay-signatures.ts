import { createHash, createHmac, createPublicKey, timingSafeEqual, verify, X509Certificate, type KeyObject } from 'node:crypto';

/**
 * How each relay proves a webhook call is its own (docs/email.md, Deliverability): SNS signs every message with
 * a certificate of its own host, SendGrid signs with ECDSA P-256, Mailgun with an HMAC of its signing key, and
 * Postmark sends the Basic credentials written into the webhook's URL. Every comparison of secrets is in
 * constant time.
 */

/** Fetches a text over HTTPS (SNS certificates, SNS subscription links); injectable so tests never go out. */
export type RelayFetch = (url: string) => Promise<string>;

const FETCH_TIMEOUT_MS = 5_000;
const MAX_FETCHED_BYTES = 64 * 1024;

/** The real one: a GET with a timeout, no redirects, at most 64 KiB. */
export const httpsFetch: RelayFetch = async (url) => {
  const response = await fetch(url, { redirect: 'error', signal: AbortSignal.timeout(FETCH_TIMEOUT_MS) });
  if (!response.ok) throw new Error(`GET ${url}: ${response.status}`);
  const body = await response.text();
  if (body.length > MAX_FETCHED_BYTES) throw new Error(`GET ${url}: too large`);
  return body;
};

/** Equal strings, compared in constant time (hashed first, so their lengths leak nothing either). */
export function sameSecret(a: string, b: string): boolean {
  const digest = (s: string) => createHash('sha256').update(s).digest();
  return timingSafeEqual(digest(a), digest(b));
}

/** An SNS host: `sns.<region>.amazonaws.com` (or `.amazonaws.com.cn`), over https. */
export function isSnsUrl(value: unknown): value is string {
  if (typeof value !== 'string') return false;
  try {
    const url = new URL(value);
    return url.protocol === 'https:' && url.port === '' && /^sns\.[a-z0-9-]+\.amazonaws\.com(\.cn)?$/.test(url.hostname);
  } catch {
    return false;
  }
}

/** The fields SNS signs, in order, per message type (SNS developer guide, "Verifying message signatures"). */
const SIGNED_FIELDS: Record<string, string[]> = {
  Notification: ['Message', 'MessageId', 'Subject', 'Timestamp', 'TopicArn', 'Type'],
  SubscriptionConfirmation: ['Message', 'MessageId', 'SubscribeURL', 'Timestamp', 'Token', 'TopicArn', 'Type'],
  UnsubscribeConfirmation: ['Message', 'MessageId', 'SubscribeURL', 'Timestamp', 'Token', 'TopicArn', 'Type'],
};

/** The string SNS signs: `name\nvalue\n` for each signed field present (Subject only when the message has one). */
export function snsStringToSign(message: Record<string, unknown>): string | null {
  const fields = SIGNED_FIELDS[String(message.Type)];
  if (!fields) return null;
  let out = '';
  for (const name of fields) {
    const value = message[name];
    if (value === undefined && name === 'Subject') continue;
    if (typeof value !== 'string') return null;
    out += `${name}\n${value}\n`;
  }
  return out;
}

const CACHED_CERTIFICATES = 32;

/**
 * Verifies SNS message signatures. SignatureVersion 1 is SHA1withRSA, 2 SHA256withRSA, with the key of the
 * certificate at SigningCertURL, fetched only from an SNS host and kept (SNS rotates it rarely; a handful at most).
 */
export function createSnsVerifier(fetchText: RelayFetch) {
  const certificates = new Map<string, Promise<KeyObject>>();

  function keyAt(url: string): Promise<KeyObject> {
    let key = certificates.get(url);
    if (!key) {
      key = fetchText(url).then((pem) => new X509Certificate(pem).publicKey);
      // A failed fetch is not kept: the relay retries, and the next call fetches again.
      key.catch(() => certificates.delete(url));
      if (certificates.size >= CACHED_CERTIFICATES) certificates.delete(certificates.keys().next().value!);
      certificates.set(url, key);
    }
    return key;
  }

  return async (message: Record<string, unknown>): Promise<boolean> => {
    const algorithm = message.SignatureVersion === '1' ? 'sha1' : message.SignatureVersion === '2' ? 'sha256' : null;
    const signed = snsStringToSign(message);
    if (!algorithm || signed === null || typeof message.Signature !== 'string' || !isSnsUrl(message.SigningCertURL)) return false;
    if (!new URL(message.SigningCertURL).pathname.endsWith('.pem')) return false;
    try {
      return verify(algorithm, Buffer.from(signed, 'utf8'), await keyAt(message.SigningCertURL), Buffer.from(message.Signature, 'base64'));
    } catch {
      return false;
    }
  };
}

/** SendGrid's Event Webhook: ECDSA (P-256, SHA-256, DER) over the timestamp header followed by the raw body. */
export function sendGridSignatureValid(publicKey: string, signature: string | undefined, timestamp: string | undefined, body: Buffer): boolean {
  if (!signature || !timestamp) return false;
  try {
    const key = createPublicKey({ key: Buffer.from(publicKey, 'base64'), format: 'der', type: 'spki' });
    return verify('sha256', Buffer.concat([Buffer.from(timestamp, 'utf8'), body]), { key, dsaEncoding: 'der' }, Buffer.from(signature, 'base64'));
  } catch {
    return false;
  }
}

/** Mailgun: `signature` is the hex HMAC-SHA256 of timestamp + token under the webhook signing key. */
export function mailgunSignatureValid(signingKey: string, signature: unknown): boolean {
  if (!signature || typeof signature !== 'object') return false;
  const { timestamp, token, signature: hex } = signature as Record<string, unknown>;
  if (typeof timestamp !== 'string' && typeof timestamp !== 'number') return false;
  if (typeof token !== 'string' || typeof hex !== 'string') return false;
  const expected = createHmac('sha256', signingKey).update(`${timestamp}${token}`).digest('hex');
  return sameSecret(expected, hex.toLowerCase());
}

/** Postmark: Basic credentials `emk:<secret>`, as written into the webhook URL given to Postmark. */
export function postmarkCredentialValid(secret: string, authorization: string | undefined): boolean {
  const expected = `Basic ${Buffer.from(`emk:${secret}`, 'utf8').toString('base64')}`;
  return sameSecret(expected, (authorization ?? '').trim());
}
