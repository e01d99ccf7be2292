import { createHmac } from 'node:crypto';
import { lookup as dnsLookup, type LookupAddress } from 'node:dns';
import http from 'node:http';
import https from 'node:https';
import { isIP, type LookupFunction } from 'node:net';
import { classifyHost, isRefusedAddress, normaliseHost, webhookUrlProblem } from './webhook-guard.js';

/** How webhook steps call out (docs/flows.md, Webhook steps): `EMK_WEBHOOK_*`. */
export interface WebhookOptions {
  /** Hosts that may be reached over http:// and on loopback or private addresses. */
  allowHosts: ReadonlySet<string>;
  /** The whole call: connect, send, answer. */
  timeoutMs: number;
  /** The first retry's wait; each later one doubles it. */
  retryBaseMs: number;
}

export const DEFAULT_WEBHOOK_OPTIONS: WebhookOptions = { allowHosts: new Set(), timeoutMs: 10_000, retryBaseMs: 60_000 };

/** Of an answer, at most this much is read (and thrown away): a receiver cannot hold the worker's memory. */
const MAX_RESPONSE_BYTES = 64 * 1024;

export interface WebhookResult {
  /** The HTTP status, when an answer came. */
  statusCode: number | null;
  /** Why the call failed (null: a 2xx answer). */
  error: string | null;
  durationMs: number;
}

export const signatureOf = (body: string, secret: string) => `sha256=${createHmac('sha256', secret).update(body).digest('hex')}`;

/**
 * A DNS lookup that answers only addresses the guard accepts, so the connection is made to the address that
 * was checked (a name that resolves elsewhere on a second lookup cannot slip past).
 */
function guardedLookup(allowed: boolean): LookupFunction {
  return (hostname, options, callback) => {
    dnsLookup(hostname, { ...options, all: true }, (error, addresses: LookupAddress[]) => {
      if (error) return callback(error, '', 0);
      const usable = allowed ? addresses : addresses.filter((a) => !isRefusedAddress(a.address));
      if (usable.length === 0) {
        const refusal = Object.assign(new Error(`${hostname} resolves to a loopback, private or reserved address (${addresses.map((a) => a.address).join(', ')})`), { code: 'EREFUSEDADDRESS' });
        return callback(refusal, '', 0);
      }
      if (options.all) (callback as unknown as (e: null, a: LookupAddress[]) => void)(null, usable);
      else callback(null, usable[0]!.address, usable[0]!.family);
    });
  };
}

/**
 * POSTs a JSON body signed with `call.secret`, with the call's idempotency key and its step's headers; never
 * follows a redirect, gives up after the timeout, reads at most 64 KiB of the answer. A 2xx answer is success;
 * anything else (an answer or none) is an error for the caller to retry.
 */
export async function callWebhook(
  rawUrl: string,
  body: string,
  call: { secret: string; idempotencyKey: string; headers?: Readonly<Record<string, string>> | undefined },
  options: WebhookOptions,
): Promise<WebhookResult> {
  const started = performance.now();
  const done = (statusCode: number | null, error: string | null): WebhookResult => ({ statusCode, error, durationMs: Math.round(performance.now() - started) });
  const problem = webhookUrlProblem(rawUrl, options.allowHosts);
  if (problem) return done(null, `url ${problem}`);
  const url = new URL(rawUrl);
  const host = normaliseHost(url.hostname)!;
  const allowed = classifyHost(host, options.allowHosts) === 'allowed';
  const client = url.protocol === 'https:' ? https : http;
  return new Promise<WebhookResult>((resolve) => {
    let settled = false;
    const finish = (statusCode: number | null, error: string | null) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      request.destroy();
      resolve(done(statusCode, error));
    };
    const request = client.request(
      url,
      {
        method: 'POST',
        // The step's own headers first: emk's, after them, are what the receiver gets whatever the step says.
        headers: {
          ...call.headers,
          'content-type': 'application/json',
          'content-length': Buffer.byteLength(body),
          'user-agent': 'emk-webhook/1',
          'x-emk-signature': signatureOf(body, call.secret),
          'x-emk-idempotency-key': call.idempotencyKey,
        },
        // IP literals never reach a lookup: the guard judged them above.
        ...(isIP(host) === 0 ? { lookup: guardedLookup(allowed) } : {}),
        agent: false,
      },
      (response) => {
        const status = response.statusCode ?? 0;
        let read = 0;
        response.on('data', (part: Buffer) => {
          read += part.length;
          if (read > MAX_RESPONSE_BYTES) finish(status, status >= 200 && status < 300 ? null : `HTTP ${status}`);
        });
        response.on('end', () => {
          if (status >= 300 && status < 400) finish(status, `redirect refused (HTTP ${status})`);
          else finish(status, status >= 200 && status < 300 ? null : `HTTP ${status}`);
        });
        response.on('error', (error) => finish(status, error.message));
      },
    );
    const timer = setTimeout(() => finish(null, `timed out after ${options.timeoutMs} ms`), options.timeoutMs);
    request.on('error', (error) => finish(null, error.message));
    request.end(body);
  });
}
