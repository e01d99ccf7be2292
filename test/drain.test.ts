import { execFile, spawn, type ChildProcess } from 'node:child_process';
import { existsSync } from 'node:fs';
import http from 'node:http';
import net from 'node:net';
import { resolve } from 'node:path';
import { promisify } from 'node:util';
import { afterEach, beforeAll, describe, expect, it } from 'vitest';
import { openDatabase } from '../src/domain/db/database.js';
import { LOAD_TEST_SERVER_ENV } from './helpers/cli.js';
import { createTestDatabase, DIALECTS, type TestDatabase } from './helpers/test-databases.js';

/**
 * Draining (docs/operations.md), end to end: a real `emk serve` process under a steady stream of event writes gets
 * SIGTERM. New requests must get 503 `server draining` with Retry-After, requests in flight must finish with
 * 2xx, the process must exit 0, and every event acknowledged with 2xx must be in the database.
 */

const ROOT = resolve(import.meta.dirname, '..');
const BIN = resolve(ROOT, 'bin/emk');
const execFileAsync = promisify(execFile);

const CHILD_ENV: NodeJS.ProcessEnv = {
  ...LOAD_TEST_SERVER_ENV,
  // Short, so the stream below runs through the whole grace and into the closed listener.
  EMK_DRAIN_GRACE_MS: '300',
};

const COLLECT_EVENT = 'drain_probe_collect';
const API_EVENT = 'drain_probe_api';

const STREAM_CLIENTS_PER_ROUTE = 3;
const STREAM_BEFORE_SIGNAL_MS = 1_000;
const IN_FLIGHT_BATCH_PER_ROUTE = 10;
/** Time for the server to read the headers of the slow requests (so they are surely in flight). */
const SLOW_HEADERS_SETTLE_MS = 400;
/** How long the slow requests hold their body back after the signal: the drain window the stream runs into. */
const SLOW_BODY_HOLD_MS = 400;
const REQUEST_TIMEOUT_MS = 15_000;
const START_TIMEOUT_MS = 20_000;
const EXIT_TIMEOUT_MS = 20_000;

// ---------------------------------------------------------------------------------------------------------
// The server process

interface ServerProcess {
  child: ChildProcess;
  port: number;
  stderr(): string;
  /** Resolves with the exit once the process has exited. */
  exited: Promise<{ code: number | null; signal: NodeJS.Signals | null; at: number }>;
}

async function runCli<T>(args: string[]): Promise<T> {
  const { stdout } = await execFileAsync(process.execPath, [BIN, ...args], {
    cwd: ROOT,
    env: CHILD_ENV,
    timeout: START_TIMEOUT_MS,
  });
  return JSON.parse(stdout) as T;
}

function startServer(databaseUrl: string, env: NodeJS.ProcessEnv = {}): Promise<ServerProcess> {
  const child = spawn(process.execPath, [BIN, 'serve', '--db', databaseUrl, '--port', '0', '--host', '127.0.0.1'], {
    cwd: ROOT,
    env: { ...CHILD_ENV, ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let stderr = '';
  let stdout = '';
  child.stdout!.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null; at: number }>((done) =>
    child.once('exit', (code, signal) => done({ code, signal, at: Date.now() })),
  );
  return new Promise((resolvePort, reject) => {
    const timer = setTimeout(() => {
      child.kill('SIGKILL');
      reject(new Error(`emk serve did not start within ${START_TIMEOUT_MS} ms; stderr:\n${stderr}`));
    }, START_TIMEOUT_MS);
    child.stderr!.on('data', (chunk: Buffer) => {
      stderr += chunk.toString();
      const match = /emk listening on http:\/\/[^:\s]+:(\d+)/.exec(stderr);
      if (match) {
        clearTimeout(timer);
        resolvePort({ child, port: Number(match[1]), stderr: () => `${stderr}\n[stdout] ${stdout}`, exited });
      }
    });
    void exited.then(({ code, signal }) => {
      clearTimeout(timer);
      reject(new Error(`emk serve exited early (code ${code}, signal ${signal}); stderr:\n${stderr}`));
    });
  });
}

/** Whether the server still accepts TCP connections (once closed, a listener never reopens). */
function listenerOpen(port: number): Promise<boolean> {
  return new Promise((done) => {
    const socket = net.connect({ port, host: '127.0.0.1' });
    const finish = (open: boolean) => {
      socket.destroy();
      done(open);
    };
    socket.setTimeout(2_000, () => finish(true));
    socket.once('connect', () => finish(true));
    socket.once('error', (error: NodeJS.ErrnoException) => finish(error.code !== 'ECONNREFUSED'));
  });
}

// ---------------------------------------------------------------------------------------------------------
// Requests and what became of them

type Route = 'collect' | 'api';

interface Outcome {
  route: Route;
  seq: number;
  kind: 'stream' | 'batch' | 'slow';
  /** The whole request had been handed to the socket before SIGTERM was sent. */
  writtenBeforeSignal: boolean;
  status?: number;
  body?: string;
  retryAfter?: string | undefined;
  error?: string;
  /** For connection errors: whether the listener was still open right after the error. */
  listenerOpenAfterError?: boolean;
  at: number;
}

interface Target {
  port: number;
  siteId: string;
  apiKey: string;
  contactId: string;
}

interface PreparedRequest {
  path: string;
  headers: http.OutgoingHttpHeaders;
  body: string;
}

function prepare(target: Target, route: Route, seq: number): PreparedRequest {
  const properties = { seq, padding: 'x'.repeat(64) };
  const payload =
    route === 'collect'
      ? { site_id: target.siteId, event_name: COLLECT_EVENT, email: `drain-${seq % 7}@example.com`, properties }
      : { contact_id: target.contactId, event_name: API_EVENT, properties };
  const body = JSON.stringify(payload);
  return {
    path: route === 'collect' ? '/collect/event' : '/api/v1/events',
    headers: {
      'content-type': 'application/json',
      'content-length': Buffer.byteLength(body),
      ...(route === 'api' ? { 'x-api-key': target.apiKey } : {}),
    },
    body,
  };
}

interface Sent {
  /** Resolves once the whole request has been handed to the socket. */
  written: Promise<void>;
  outcome: Promise<Outcome>;
}

/**
 * Sends one request. `hold` sends the headers and the first half of the body at once and the rest only when
 * the returned `release` is called.
 */
function send(
  target: Target,
  agent: http.Agent,
  route: Route,
  seq: number,
  kind: Outcome['kind'],
  signalSentAt: () => number | null,
  hold = false,
): Sent & { release(): void } {
  const { path, headers, body } = prepare(target, route, seq);
  /** Whether the request was complete on the socket before SIGTERM was sent. */
  let writtenBeforeSignal = false;
  let onWritten!: () => void;
  const written = new Promise<void>((done) => (onWritten = done));
  let release = () => {};
  const outcome = new Promise<Outcome>((done) => {
    const base = () => ({ route, seq, kind, writtenBeforeSignal });
    const req = http.request({ host: '127.0.0.1', port: target.port, method: 'POST', path, headers, agent }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (chunk: Buffer) => chunks.push(chunk));
      res.on('end', () =>
        done({
          ...base(),
          status: res.statusCode!,
          body: Buffer.concat(chunks).toString(),
          retryAfter: res.headers['retry-after'],
          at: Date.now(),
        }),
      );
      res.on('error', (error) => done({ ...base(), error: String(error), at: Date.now() }));
    });
    req.setTimeout(REQUEST_TIMEOUT_MS, () => req.destroy(new Error('request timed out')));
    req.on('finish', () => {
      writtenBeforeSignal = signalSentAt() === null;
      onWritten();
    });
    req.on('error', (error: NodeJS.ErrnoException) => {
      const at = Date.now();
      onWritten();
      void listenerOpen(target.port).then((open) =>
        done({ ...base(), error: `${error.code ?? ''} ${error.message}`, listenerOpenAfterError: open, at }),
      );
    });
    if (hold) {
      const half = Math.floor(body.length / 2);
      req.write(body.slice(0, half));
      release = () => req.end(body.slice(half));
    } else {
      req.end(body);
    }
  });
  return { written, outcome, release: () => release() };
}

// ---------------------------------------------------------------------------------------------------------
// The test

const sleep = (ms: number) => new Promise<void>((done) => setTimeout(done, ms));

function withTimeout<T>(promise: Promise<T>, ms: number, what: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  return Promise.race([
    promise.finally(() => clearTimeout(timer)),
    new Promise<never>((_, reject) => (timer = setTimeout(() => reject(new Error(`${what}: no result within ${ms} ms`)), ms))),
  ]);
}

async function storedSeqs(databaseUrl: string): Promise<Record<Route, number[]>> {
  const db = openDatabase(databaseUrl);
  try {
    const rows = (await db.knex('events').whereIn('event_name', [COLLECT_EVENT, API_EVENT]).select('event_name', 'properties')) as Array<{
      event_name: string;
      properties: unknown;
    }>;
    const seqs: Record<Route, number[]> = { collect: [], api: [] };
    for (const row of rows) {
      const properties = (typeof row.properties === 'string' ? JSON.parse(row.properties) : row.properties) as { seq: number };
      seqs[row.event_name === COLLECT_EVENT ? 'collect' : 'api'].push(properties.seq);
    }
    return seqs;
  } finally {
    await db.close();
  }
}

const sorted = (values: number[]) => [...values].sort((a, b) => a - b);
const isSuccess = (o: Outcome) => o.status !== undefined && o.status >= 200 && o.status < 300;
const isDrain503 = (o: Outcome) => {
  if (o.status !== 503 || !o.body) return false;
  try {
    return (JSON.parse(o.body) as { error?: unknown }).error === 'server draining' && /^\d+$/.test(o.retryAfter ?? '');
  } catch {
    return false;
  }
};
const describeOutcome = (o: Outcome) =>
  `${o.kind} ${o.route}#${o.seq}: ${o.error ?? `${o.status} ${o.body?.slice(0, 200)} retry-after=${o.retryAfter}`}` +
  (o.error ? ` (listener open after error: ${o.listenerOpenAfterError})` : '');

/** Counts of outcomes by kind, route, result and timing, for failure messages. */
function tally(outcomes: Outcome[]): string {
  const counts = new Map<string, number>();
  for (const o of outcomes) {
    const result = o.error ? `connection error (listener ${o.listenerOpenAfterError ? 'open' : 'closed'})` : String(o.status);
    const key = `${o.kind} ${o.route} ${result}, written ${o.writtenBeforeSignal ? 'before' : 'after'} SIGTERM`;
    counts.set(key, (counts.get(key) ?? 0) + 1);
  }
  return [...counts].sort().map(([key, n]) => `  ${key}: ${n}`).join('\n');
}

describe('draining on SIGTERM (emk serve process)', () => {
  const cleanups: Array<() => Promise<void>> = [];
  beforeAll(() => {
    if (!existsSync(resolve(ROOT, 'dist/src/cli/main.js'))) throw new Error('bin/emk runs dist/: run `npm run build` first');
  });
  afterEach(async () => {
    for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
  });

  for (const dialect of DIALECTS) {
    it(
      `finishes in-flight requests, answers new ones 503 and exits 0 [${dialect}]`,
      async () => {
        const database: TestDatabase = await createTestDatabase(dialect);
        cleanups.push(() => database.drop());

        const init = await runCli<{ site_id: string; api_key: string }>([
          'init', '--db', database.url, '--json', '--name', 'Drain shop', '--domain', 'drain.test',
        ]);
        const server = await startServer(database.url);
        cleanups.push(async () => {
          if (server.child.exitCode === null && server.child.signalCode === null) server.child.kill('SIGKILL');
        });

        const contactRes = await fetch(`http://127.0.0.1:${server.port}/api/v1/contacts`, {
          method: 'POST',
          headers: { 'content-type': 'application/json', 'x-api-key': init.api_key },
          body: JSON.stringify({ email: 'known@example.com' }),
        });
        expect(contactRes.status).toBe(201);
        const contactId = ((await contactRes.json()) as { id: string }).id;

        const target: Target = { port: server.port, siteId: init.site_id, apiKey: init.api_key, contactId };
        let signalAt: number | null = null;
        const signalSentAt = () => signalAt;
        let seq = 0;
        const outcomes: Outcome[] = [];
        let exitInfo: { code: number | null; signal: NodeJS.Signals | null; at: number } | null = null;
        void server.exited.then((info) => (exitInfo = info));

        // A steady stream: a few keep-alive clients, each sending one request after the other until the
        // process has gone (or its listener is closed).
        const deadline = Date.now() + START_TIMEOUT_MS + EXIT_TIMEOUT_MS;
        const agents: http.Agent[] = [];
        const streamClient = async (route: Route) => {
          const agent = new http.Agent({ keepAlive: true, maxSockets: 1 });
          agents.push(agent);
          while (exitInfo === null && Date.now() < deadline) {
            const outcome = await send(target, agent, route, seq++, 'stream', signalSentAt).outcome;
            outcomes.push(outcome);
            if (outcome.error && !outcome.listenerOpenAfterError) break;
            if (outcome.status === 503) await sleep(5);
          }
        };
        const streams = (['collect', 'api'] as const).flatMap((route) =>
          Array.from({ length: STREAM_CLIENTS_PER_ROUTE }, () => streamClient(route)),
        );

        await sleep(STREAM_BEFORE_SIGNAL_MS);

        // Slow requests: headers and half the body now, so the server has surely started them before the signal;
        // the rest of the body follows only after the signal.
        const slowAgent = new http.Agent({ keepAlive: true });
        agents.push(slowAgent);
        const slow = (['collect', 'api'] as const).map((route) => send(target, slowAgent, route, seq++, 'slow', signalSentAt, true));
        await sleep(SLOW_HEADERS_SETTLE_MS);

        // A batch written in full right before the signal.
        const batchAgent = new http.Agent({ keepAlive: true });
        agents.push(batchAgent);
        const batch = (['collect', 'api'] as const).flatMap((route) =>
          Array.from({ length: IN_FLIGHT_BATCH_PER_ROUTE }, () => send(target, batchAgent, route, seq++, 'batch', signalSentAt)),
        );
        await withTimeout(Promise.all(batch.map((b) => b.written)), REQUEST_TIMEOUT_MS, 'writing the batch');

        signalAt = Date.now();
        server.child.kill('SIGTERM');
        await sleep(SLOW_BODY_HOLD_MS);
        for (const s of slow) s.release();

        const exit = await withTimeout(server.exited, EXIT_TIMEOUT_MS, `emk serve exit after SIGTERM; stderr:\n${server.stderr()}`);
        const held = await withTimeout(
          Promise.all([...slow, ...batch].map((s) => s.outcome)),
          REQUEST_TIMEOUT_MS,
          'in-flight requests',
        );
        outcomes.push(...held);
        await withTimeout(Promise.all(streams), REQUEST_TIMEOUT_MS, 'stream clients');
        for (const agent of agents) agent.destroy();

        const summary = `${tally(outcomes)}\nexited ${exit.at - signalAt} ms after SIGTERM\nserver stderr:\n${server.stderr()}`;

        // The process drained and exited cleanly.
        expect({ code: exit.code, signal: exit.signal }, summary).toEqual({ code: 0, signal: null });

        // Every reply is 2xx or the draining 503 (with its body and Retry-After).
        const badReplies = outcomes.filter((o) => o.status !== undefined && !isSuccess(o) && !isDrain503(o));
        expect(badReplies.map(describeOutcome)).toEqual([]);

        // Connection errors only once the listener is closed (or the process gone).
        const earlyErrors = outcomes.filter((o) => o.error && o.listenerOpenAfterError && o.at < exit.at);
        expect(earlyErrors.map(describeOutcome)).toEqual([]);

        // Requests the server had started before the signal finish with 2xx.
        const slowOutcomes = held.filter((o) => o.kind === 'slow');
        expect(slowOutcomes.filter((o) => !isSuccess(o)).map(describeOutcome)).toEqual([]);
        // Requests fully written before the signal get an answer: 2xx, or 503 when the server had not read them yet.
        const batchOutcomes = held.filter((o) => o.kind === 'batch');
        expect(batchOutcomes.every((o) => o.writtenBeforeSignal)).toBe(true);
        expect(batchOutcomes.filter((o) => !isSuccess(o) && !isDrain503(o)).map(describeOutcome)).toEqual([]);

        // The stream really ran into the drain: accepted before it, refused with 503 during it.
        const stream = outcomes.filter((o) => o.kind === 'stream');
        expect(stream.filter((o) => isSuccess(o) && o.writtenBeforeSignal).length, summary).toBeGreaterThan(0);
        expect(stream.filter(isDrain503).length, summary).toBeGreaterThan(0);

        // Every acknowledged event is stored, and nothing else.
        const stored = await storedSeqs(database.url);
        for (const route of ['collect', 'api'] as const) {
          const acknowledged = outcomes.filter((o) => o.route === route && isSuccess(o)).map((o) => o.seq);
          expect(sorted(stored[route]), `${route} events stored vs acknowledged`).toEqual(sorted(acknowledged));
        }
        const acknowledgedTotal = outcomes.filter(isSuccess).length;
        expect(stored.collect.length + stored.api.length).toBe(acknowledgedTotal);
      },
      90_000,
    );
  }

  /**
   * A deploy answers every request: load through a SIGTERM, then count resets. Clients behave as behind a
   * load balancer: each sends until it is told the server drains (503 + Retry-After), then goes elsewhere;
   * new clients arriving during the grace are told the same; once the grace is over the listener closes and a
   * connection is refused (safe: nothing was sent). No request may see its connection reset.
   */
  for (const dialect of DIALECTS) {
    it(
      `a deploy answers every request: 2xx or 503 during the grace, refused after it, never reset [${dialect}]`,
      async () => {
        const GRACE_MS = 3_000;
        const database: TestDatabase = await createTestDatabase(dialect);
        cleanups.push(() => database.drop());
        const init = await runCli<{ site_id: string; api_key: string }>(['init', '--db', database.url, '--json', '--name', 'Deploy', '--domain', 'deploy.test']);
        const server = await startServer(database.url, { EMK_DRAIN_GRACE_MS: String(GRACE_MS) });
        cleanups.push(async () => {
          if (server.child.exitCode === null && server.child.signalCode === null) server.child.kill('SIGKILL');
        });
        const contactRes = await fetch(`http://127.0.0.1:${server.port}/api/v1/contacts`, {
          method: 'POST',
          headers: { 'content-type': 'application/json', 'x-api-key': init.api_key },
          body: JSON.stringify({ email: 'deploy@example.com' }),
        });
        const target: Target = { port: server.port, siteId: init.site_id, apiKey: init.api_key, contactId: ((await contactRes.json()) as { id: string }).id };
        let signalAt: number | null = null;
        const signalSentAt = () => signalAt;
        let seq = 0;
        const outcomes: Outcome[] = [];
        const agents: http.Agent[] = [];
        let onEnoughServed!: () => void;
        const enoughServed = new Promise<void>((done) => (onEnoughServed = done));

        // Keep-alive clients (one socket each, re-used) and clients that open a fresh connection per request.
        const client = async (route: Route, keepAlive: boolean) => {
          const agent = new http.Agent({ keepAlive, maxSockets: 1 });
          agents.push(agent);
          for (;;) {
            const outcome = await send(target, agent, route, seq++, 'stream', signalSentAt).outcome;
            outcomes.push(outcome);
            if (outcomes.filter(isSuccess).length >= 60) onEnoughServed();
            if (outcome.error || outcome.status === 503) return;
          }
        };
        const clients = (['collect', 'api'] as const).flatMap((route) => [true, true, false, false].map((keepAlive) => client(route, keepAlive)));

        await withTimeout(enoughServed, REQUEST_TIMEOUT_MS, 'the first 60 answers');
        signalAt = Date.now();
        server.child.kill('SIGTERM');
        await withTimeout(Promise.all(clients), REQUEST_TIMEOUT_MS, 'clients told to go elsewhere');

        // Newcomers during the grace: the listener still takes them, and tells them to go elsewhere.
        const newcomerAgent = new http.Agent({ keepAlive: false });
        agents.push(newcomerAgent);
        const newcomers = await Promise.all(
          (['collect', 'api', 'collect', 'api'] as const).map((route) => send(target, newcomerAgent, route, seq++, 'batch', signalSentAt).outcome),
        );
        const graceLeft = GRACE_MS - (Date.now() - signalAt);

        const exit = await withTimeout(server.exited, EXIT_TIMEOUT_MS, `emk serve exit after SIGTERM; stderr:\n${server.stderr()}`);
        // After the grace: refused, never reset.
        const late = await send(target, new http.Agent({ keepAlive: false }), 'api', seq++, 'batch', signalSentAt).outcome;
        for (const agent of agents) agent.destroy();

        const all = [...outcomes, ...newcomers, late];
        const summary = `${tally(all)}\nexited ${exit.at - signalAt} ms after SIGTERM (grace ${GRACE_MS} ms)\nserver stderr:\n${server.stderr()}`;
        expect({ code: exit.code, signal: exit.signal }, summary).toEqual({ code: 0, signal: null });
        expect(exit.at - signalAt, summary).toBeGreaterThanOrEqual(GRACE_MS);

        const resets = all.filter((o) => o.error && !/ECONNREFUSED/.test(o.error));
        expect(resets.map(describeOutcome), summary).toEqual([]);
        expect(all.filter((o) => o.status !== undefined && !isSuccess(o) && !isDrain503(o)).map(describeOutcome)).toEqual([]);
        expect(outcomes.filter(isDrain503).length, summary).toBeGreaterThan(0);
        if (graceLeft > 500) expect(newcomers.map((o) => o.status), summary).toEqual([503, 503, 503, 503]);
        expect(late.error, summary).toMatch(/ECONNREFUSED/);

        // Every 2xx was stored, and nothing else.
        const stored = await storedSeqs(database.url);
        for (const route of ['collect', 'api'] as const) {
          expect(sorted(stored[route])).toEqual(sorted(all.filter((o) => o.route === route && isSuccess(o)).map((o) => o.seq)));
        }
      },
      90_000,
    );
  }

  /**
   * A client that disconnects while its handler still waits on the database must not make the drain "idle"
   * early: the handler's write would then meet closed services. Deterministic on PostgreSQL: a lock on
   * `workspaces` holds the Collect API handler in its first query.
   */
  if (DIALECTS.includes('postgres')) {
    it(
      'exits promptly when a client disconnects while its request waits on the database [postgres]',
      async () => {
        const database = await createTestDatabase('postgres');
        cleanups.push(() => database.drop());
        const init = await runCli<{ site_id: string }>(['init', '--db', database.url, '--json', '--name', 'Drain shop', '--domain', 'drain.test']);
        const server = await startServer(database.url);
        cleanups.push(async () => {
          if (server.child.exitCode === null && server.child.signalCode === null) server.child.kill('SIGKILL');
        });

        // Hold the Collect API's workspace lookup.
        const locker = openDatabase(database.url);
        let releaseLock = () => {};
        let onLocked!: () => void;
        const locked = new Promise<void>((done) => (onLocked = done));
        const lockDone = locker.knex.transaction(async (trx) => {
          await trx.raw('LOCK TABLE workspaces IN ACCESS EXCLUSIVE MODE');
          onLocked();
          await new Promise<void>((done) => (releaseLock = done));
        });
        cleanups.push(async () => {
          releaseLock();
          await lockDone.catch(() => {});
          await locker.close();
        });
        await locked;

        const body = JSON.stringify({ site_id: init.site_id, event_name: COLLECT_EVENT, email: 'gone@example.com', properties: { seq: 0 } });
        const req = http.request({
          host: '127.0.0.1',
          port: server.port,
          method: 'POST',
          path: '/collect/event',
          headers: { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) },
        });
        req.on('error', () => {});
        req.end(body);
        await sleep(300); // the handler now waits for the lock
        req.destroy(); // and its client goes away
        await sleep(100);

        server.child.kill('SIGTERM');
        await sleep(500);
        releaseLock();
        await lockDone;

        const exit = await withTimeout(server.exited, 10_000, `emk serve exit after SIGTERM; stderr:\n${server.stderr()}`);
        expect({ code: exit.code, signal: exit.signal }).toEqual({ code: 0, signal: null });
        // The request was in flight before the signal: its event is stored even though nobody waits for the reply.
        expect((await storedSeqs(database.url)).collect).toEqual([0]);
      },
      60_000,
    );
  }
});
