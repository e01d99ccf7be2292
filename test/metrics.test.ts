import { spawn } from 'node:child_process';
import type { AddressInfo } from 'node:net';
import type { FastifyInstance } from 'fastify';
import { SMTPServer } from 'smtp-server';
import { afterAll, expect, it } from 'vitest';
import type { EmkConfig } from '../src/domain/config.js';
import { createObservations } from '../src/domain/shared/observations.js';
import { buildApp } from '../src/server/app.js';
import { EMK_BIN, runEmk } from './helpers/cli.js';
import { describeEachDatabase, NO_LIMITS, type Harness } from './helpers/harness.js';
import { explainPlan, insertContacts } from './helpers/plans.js';
import { createTestDatabase } from './helpers/test-databases.js';
import { sendingHelpers } from './helpers/sending.js';

interface Sample {
  name: string;
  labels: Record<string, string>;
  value: number;
}

const METRIC_NAME = /^[a-zA-Z_:][a-zA-Z0-9_:]*$/;
const SAMPLE = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})? (\S+)$/;
const LABEL = /^([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\\n]|\\[\\"n])*)"(,|$)/;

/**
 * Prometheus' text format (0.0.4), read strictly: every line a comment, a HELP, a TYPE or a sample; every sample
 * of a family declared with its TYPE and HELP first. Throws on the first line that is none of these.
 */
function parseExposition(text: string): Sample[] {
  const types = new Map<string, string>();
  const helps = new Set<string>();
  const samples: Sample[] = [];
  for (const line of text.split('\n')) {
    if (line === '') continue;
    const meta = /^# (HELP|TYPE) (\S+) (.+)$/.exec(line);
    if (meta) {
      expect(meta[2], line).toMatch(METRIC_NAME);
      if (meta[1] === 'TYPE') {
        expect(['counter', 'gauge', 'histogram', 'summary', 'untyped'], line).toContain(meta[3]);
        types.set(meta[2]!, meta[3]!);
      } else helps.add(meta[2]!);
      continue;
    }
    const sample = SAMPLE.exec(line);
    if (!sample) throw new Error(`not a line of the text format: ${line}`);
    const labels: Record<string, string> = {};
    let rest = sample[2] ?? '';
    while (rest !== '') {
      const label = LABEL.exec(rest);
      if (!label) throw new Error(`bad labels in: ${line}`);
      labels[label[1]!] = label[2]!.replace(/\\n/g, '\n').replace(/\\(["\\])/g, '$1');
      rest = rest.slice(label[0].length);
    }
    // As Prometheus reads them (Go's ParseFloat): NaN and Inf in any case (prom-client writes `Nan`).
    const value = Number(sample[3]!.replace(/^([+-]?)inf$/i, '$1Infinity'));
    if (Number.isNaN(value) && !/^nan$/i.test(sample[3]!)) throw new Error(`bad value in: ${line}`);
    const name = sample[1]!;
    const family = types.has(name) ? name : name.replace(/_(bucket|sum|count)$/, '');
    expect(types.has(family), `no TYPE before ${line}`).toBe(true);
    expect(helps.has(family), `no HELP before ${line}`).toBe(true);
    if (family !== name) expect(types.get(family), line).toBe('histogram');
    samples.push({ name, labels, value });
  }
  return samples;
}

/** The one sample of `name` whose labels are exactly these (undefined: none). */
function valueOf(samples: Sample[], name: string, labels: Record<string, string> = {}): number | undefined {
  const wanted = JSON.stringify(Object.entries(labels).sort());
  const found = samples.filter((s) => s.name === name && JSON.stringify(Object.entries(s.labels).sort()) === wanted);
  expect(found.length, `${name}${JSON.stringify(labels)}`).toBeLessThanOrEqual(1);
  return found[0]?.value;
}

/** A message of the workspace's contact as its row, written directly (`key`: unique in the test's database). */
const messageRow = (workspaceId: string, contactId: string, key: string, fields: Record<string, unknown>) => ({
  id: `m-${key}-${workspaceId.slice(0, 8)}`,
  workspace_id: workspaceId,
  contact_id: contactId,
  dedupe_key: `metrics:${key}:${workspaceId}`,
  message_type: 'marketing',
  to_email: 'p0@example.com',
  created_at: 1,
  updated_at: 1,
  ...fields,
});

/** Another app on the harness's services, as another process of the database would be, closed after `use`. */
async function withApp(h: Harness, config: EmkConfig, use: (app: FastifyInstance) => Promise<void>): Promise<void> {
  const app = await buildApp({ services: h.services, config, logLevel: 'silent' });
  try {
    await use(app);
  } finally {
    await app.close();
  }
}

async function scrape(h: Harness, headers: Record<string, string> = {}): Promise<Sample[]> {
  const res = await h.request({ method: 'GET', url: '/metrics', headers });
  expect(res.statusCode, res.body).toBe(200);
  expect(res.headers['content-type']).toBe('text/plain; version=0.0.4; charset=utf-8');
  return parseExposition(res.body);
}

describeEachDatabase('metrics and status', (h, dialect) => {
  it('GET /metrics is the text format, with every metric of the contract and those of the process', async () => {
    expect((await h().request({ method: 'GET', url: '/healthz' })).statusCode).toBe(200);
    const samples = await scrape(h());
    const names = new Set(samples.map((s) => s.name));
    for (const name of [
      'emk_http_request_duration_seconds_bucket',
      'emk_jobs_ready',
      'emk_jobs_oldest_ready_age_seconds',
      'emk_outbox_lag_seconds',
      'emk_messages_total',
      'emk_db_pool_connections',
      'emk_database_up',
      'process_cpu_user_seconds_total',
      'nodejs_eventloop_lag_seconds',
    ]) {
      expect(names, name).toContain(name);
    }
    expect(valueOf(samples, 'emk_database_up')).toBe(1);
    // SQLite runs one connection; PostgreSQL's pool holds ten.
    expect(valueOf(samples, 'emk_db_pool_max', { pool: 'main' })).toBe(dialect === 'sqlite' ? 1 : 10);
    expect(valueOf(samples, 'emk_db_pool_connections', { pool: 'main', state: 'pending' })).toBe(0);
  });

  it('requests are counted and timed by the route pattern, never the raw URL; writes by their group commit', async () => {
    const ws = await h().workspace();
    const id = `missing-${Math.random().toString(36).slice(2)}`;
    const labels = { route: '/api/v1/contacts/:id', method: 'GET', status: '404' };
    const before = await scrape(h());
    const counted = valueOf(before, 'emk_http_requests_total', labels) ?? 0;
    const timed = valueOf(before, 'emk_http_request_duration_seconds_count', { route: '/api/v1/contacts/:id', method: 'GET' }) ?? 0;
    const groups = valueOf(before, 'emk_group_commit_size_count') ?? 0;
    for (let i = 0; i < 3; i++) expect((await h().request({ method: 'GET', url: `/api/v1/contacts/${id}`, key: ws.apiKey })).statusCode).toBe(404);
    expect((await h().request({ method: 'GET', url: `/no/such/${id}` })).statusCode).toBe(404);
    expect((await h().request({ method: 'POST', url: '/api/v1/contacts', key: ws.apiKey, json: { email: `${id}@example.com` } })).statusCode).toBe(201);

    const after = await scrape(h());
    expect(valueOf(after, 'emk_http_requests_total', labels)).toBe(counted + 3);
    expect(valueOf(after, 'emk_http_request_duration_seconds_count', { route: '/api/v1/contacts/:id', method: 'GET' })).toBe(timed + 3);
    expect(valueOf(after, 'emk_http_request_duration_seconds_bucket', { route: '/api/v1/contacts/:id', method: 'GET', le: '+Inf' })).toBe(timed + 3);
    expect(valueOf(after, 'emk_http_requests_total', { route: '(unmatched)', method: 'GET', status: '404' })).toBeGreaterThanOrEqual(1);
    expect(valueOf(after, 'emk_http_requests_total', { route: '/api/v1/contacts', method: 'POST', status: '201' })).toBeGreaterThanOrEqual(1);
    // The scrape before this one is counted too, under its own pattern.
    expect(valueOf(after, 'emk_http_requests_total', { route: '/metrics', method: 'GET', status: '200' })).toBeGreaterThanOrEqual(2);
    expect(after.filter((s) => Object.values(s.labels).some((v) => v.includes(id)))).toEqual([]);
    expect(valueOf(after, 'emk_group_commit_size_count')).toBeGreaterThan(groups);
  });

  it('EMK_METRICS_TOKEN set: 401 without the bearer token or with another, 200 with it', async () => {
    await withApp(h(), { ...h().config, metricsToken: 'scrape-me' }, async (app) => {
      const get = (authorization?: string) => app.inject({ method: 'GET', url: '/metrics', headers: authorization ? { authorization } : {} });
      for (const refused of [await get(), await get('Bearer scrape-m'), await get('Bearer scrape-me-too'), await get('Basic scrape-me')]) {
        expect(refused.statusCode).toBe(401);
        expect(refused.json()).toEqual({ error: 'missing or wrong metrics token', request_id: refused.headers['x-request-id'] });
        expect(refused.headers['www-authenticate']).toBe('Bearer realm="emk metrics"');
        expect(refused.body).not.toContain('emk_');
      }
      const allowed = await get('Bearer scrape-me');
      expect(allowed.statusCode).toBe(200);
      // The refusals were counted before the answer that lists them.
      expect(valueOf(parseExposition(allowed.body), 'emk_http_requests_total', { route: '/metrics', method: 'GET', status: '401' })).toBe(4);
    });
    // Unset: anyone may scrape (the harness's app).
    expect((await h().request({ method: 'GET', url: '/metrics' })).statusCode).toBe(200);
  });

  it("a budget's refusals are counted by its scope", async () => {
    await withApp(h(), { ...h().config, limits: { ...h().config.limits, authPerIp: 1 } }, async (app) => {
      const login = () => app.inject({ method: 'POST', url: '/api/v1/auth/login', payload: { email: 'nobody@example.com', password: 'x' }, remoteAddress: '192.0.2.77' });
      expect((await login()).statusCode).not.toBe(429);
      expect((await login()).statusCode).toBe(429);
      expect((await login()).statusCode).toBe(429);
      const samples = parseExposition((await app.inject({ method: 'GET', url: '/metrics' })).body);
      expect(valueOf(samples, 'emk_rate_limit_refusals_total', { scope: 'auth:ip' })).toBe(2);
      expect(valueOf(samples, 'emk_http_requests_total', { route: '/api/v1/auth/login', method: 'POST', status: '429' })).toBe(2);
    });
  });

  it('the jobs, outbox and messages gauges are the database: every process of it sees the same', async () => {
    const { knex } = h().services.db;
    const ws = await h().workspace();
    const now = Date.now();
    const [kind, idleKind] = Object.keys(h().services.jobHandlers).sort();
    await knex('jobs').delete();
    const job = (fields: Record<string, unknown>) => ({ kind, payload: '{}', run_at: now, attempts: 0, max_attempts: 10, created_at: now, ...fields });
    await knex('jobs').insert([
      job({ run_at: now - 90_000 }),
      job({ run_at: now - 30_000 }),
      // A lease that ran out (its process died): the job waits for a worker again.
      job({ run_at: now - 20_000, locked_by: 'gone', locked_until: now - 1_000, attempts: 1 }),
      job({ run_at: now - 5_000, locked_by: 'busy', locked_until: now + 60_000, attempts: 1 }),
      // Scheduled later: not due, counted nowhere.
      job({ run_at: now + 3_600_000 }),
      job({ failed_at: now - 1_000, attempts: 10 }),
      job({ failed_at: now - 2_000, attempts: 10 }),
    ]);
    await knex('trigger_outbox').whereNull('processed_at').update({ processed_at: now });
    const fact = (createdAt: number, processedAt: number | null) => ({
      workspace_id: ws.id,
      trigger_type: 'contact_changed',
      subject_type: 'contact',
      subject_id: 'c-x',
      payload: '{}',
      created_at: createdAt,
      processed_at: processedAt,
    });
    await knex('trigger_outbox').insert([fact(now - 600_000, now - 500_000), fact(now - 120_000, null), fact(now - 60_000, null), fact(now - 1_000, null)]);
    const messagesBefore = await scrape(h());
    const countOf = (samples: Sample[], status: string) => valueOf(samples, 'emk_messages_total', { status }) ?? -1;
    const [contactId] = await insertContacts(knex, ws.id, 1);
    const message = (n: number, status: string) => messageRow(ws.id, contactId!, `gauges-${n}`, { status, sent_at: status === 'sent' ? now - n * 1000 : null });
    await knex('messages').insert([message(1, 'queued'), message(2, 'queued'), message(3, 'sent'), message(4, 'sent'), message(5, 'sent'), message(6, 'failed')]);

    const elapsed = (Date.now() - now) / 1000;
    const samples = await scrape(h());
    expect(valueOf(samples, 'emk_jobs_ready', { kind: kind! })).toBe(3);
    expect(valueOf(samples, 'emk_jobs_running', { kind: kind! })).toBe(1);
    expect(valueOf(samples, 'emk_jobs_failed', { kind: kind! })).toBe(2);
    const age = valueOf(samples, 'emk_jobs_oldest_ready_age_seconds', { kind: kind! })!;
    expect(age).toBeGreaterThanOrEqual(90);
    expect(age).toBeLessThan(91 + elapsed);
    // Every kind the worker runs has its series, at zero when nothing waits.
    expect(valueOf(samples, 'emk_jobs_ready', { kind: idleKind! })).toBe(0);
    expect(valueOf(samples, 'emk_jobs_oldest_ready_age_seconds', { kind: idleKind! })).toBe(0);

    expect(valueOf(samples, 'emk_outbox_pending')).toBe(3);
    const lag = valueOf(samples, 'emk_outbox_lag_seconds')!;
    expect(lag).toBeGreaterThanOrEqual(120);
    expect(lag).toBeLessThan(121 + elapsed);

    for (const [status, added] of Object.entries({ queued: 2, sent: 3, failed: 1, captured: 0, sending: 0, bounced: 0, complained: 0 })) {
      expect(countOf(samples, status), status).toBe(countOf(messagesBefore, status) + added);
    }

    // Consumed, the outbox has no lag; a second app (another process of the database) reads the same queues.
    await knex('trigger_outbox').whereNull('processed_at').update({ processed_at: Date.now() });
    await withApp(h(), h().config, async (other) => {
      const seen = parseExposition((await other.inject({ method: 'GET', url: '/metrics' })).body);
      expect(valueOf(seen, 'emk_outbox_lag_seconds')).toBe(0);
      expect(valueOf(seen, 'emk_outbox_pending')).toBe(0);
      expect(valueOf(seen, 'emk_jobs_ready', { kind: kind! })).toBe(3);
    });
  });

  it('`emk status --json` reads the same from the database, with the recent rates', async () => {
    const { knex } = h().services.db;
    const ws = await h().workspace();
    const now = Date.now();
    const event = (n: number, agoMs: number) => ({
      id: `ev-status-${ws.id.slice(0, 8)}-${n}`,
      workspace_id: ws.id,
      event_name: 'viewed_product',
      properties: '{}',
      created_at: now - agoMs,
      received_at: now - agoMs,
    });
    await knex('events').insert([event(1, 60_000), event(2, 120_000), event(3, 180_000), event(4, 1_800_000), event(5, 7_200_000)]);
    const counted = await h().services.status.overview();

    const result = await runEmk(['status', '--json', '--db', h().database.url, '--no-migrate']);
    expect(result.code, result.stderr).toBe(0);
    const status = JSON.parse(result.stdout);
    expect(Object.keys(status).sort()).toEqual(['at', 'jobs', 'messages', 'outbox', 'recent']);
    expect(status.jobs).toEqual(counted.jobs.map((j) => ({ ...j, oldest_ready_age_seconds: expect.any(Number) })));
    expect(status.messages).toEqual(counted.messages);
    expect(status.outbox.pending).toBe(counted.outbox.pending);
    const [fiveMinutes, hour] = status.recent;
    // The other tests of this file wrote events of their own in the last minutes (contacts created: none).
    expect(fiveMinutes).toMatchObject({ minutes: 5, events: counted.recent[0]!.events });
    expect(hour).toMatchObject({ minutes: 60, events: counted.recent[1]!.events });
    expect(hour.events - fiveMinutes.events).toBe(1);
    expect(fiveMinutes.events).toBeGreaterThanOrEqual(3);
    expect(fiveMinutes.events_per_minute).toBe(Math.round((fiveMinutes.events / 5) * 10) / 10);
    expect(hour.messages_handed_over).toBe(counted.recent[1]!.messages_handed_over);

    const human = await runEmk(['status', '--db', h().database.url, '--no-migrate']);
    expect(human.code, human.stderr).toBe(0);
    expect(human.stdout).toMatch(/^jobs\b/m);
    expect(human.stdout).toMatch(/^outbox\s+\d+ pending, lag \d+ s$/m);
    expect(human.stdout).toMatch(/^messages\s+queued \d+/m);
    expect(human.stdout).toMatch(/^last 5 min\s+[\d.]+ events\/min, [\d.]+ messages\/min$/m);
  });

  it('the queue reads seek their indexes: what is due, what waits, messages by status alone', async () => {
    const { knex } = h().services.db;
    const ws = await h().workspace();
    const now = Date.now();
    const [kind] = Object.keys(h().services.jobHandlers);
    // A table of scheduled jobs (flow steps days away), facts long consumed, mail long sent, old events.
    const rows = (n: number, row: (i: number) => Record<string, unknown>) => Array.from({ length: n }, (_, i) => row(i));
    await knex.batchInsert('jobs', rows(3000, (i) => ({ kind, payload: '{}', run_at: now + 86_400_000 + i, attempts: 0, max_attempts: 10, created_at: now })), 500);
    await knex.batchInsert(
      'trigger_outbox',
      rows(3000, (i) => ({ workspace_id: ws.id, trigger_type: 'event', subject_type: 'event', subject_id: `s${i}`, payload: '{}', created_at: 1, processed_at: 2 })),
      500,
    );
    const contactId = (await h().request({ method: 'POST', url: '/api/v1/contacts', key: ws.apiKey, json: { email: 'plans@example.com' } })).json().id;
    const html = `<p>${'Hello reader. '.repeat(80)}</p>`;
    await knex.batchInsert(
      'messages',
      rows(3000, (i) => messageRow(ws.id, contactId, `plan-${i}`, { html, status: 'sent', sent_at: 1_700_000_000_000 + i })),
      250,
    );
    await knex.batchInsert(
      'events',
      rows(3000, (i) => ({ id: `plan-ev-${ws.id.slice(0, 8)}-${i}`, workspace_id: ws.id, event_name: 'viewed_product', properties: '{}', created_at: 1_700_000_000_000 + i, received_at: 1 })),
      500,
    );
    await knex.raw(dialect === 'sqlite' ? 'ANALYZE' : 'VACUUM ANALYZE jobs, trigger_outbox, messages, events, workspaces');

    const sent: Array<{ sql: string; bindings: unknown[] }> = [];
    const capture = (query: { sql: string; bindings?: unknown[] }) => sent.push({ sql: query.sql, bindings: query.bindings ?? [] });
    knex.on('query', capture);
    try {
      await h().services.status.overview();
    } finally {
      knex.off('query', capture);
    }
    // Jobs due and given up, the outbox's oldest and count, messages by status, and per window events and hand-overs.
    expect(sent).toHaveLength(9);
    const TABLE_SCAN = /Seq Scan on (jobs|trigger_outbox|messages|events)\b|SCAN (jobs|trigger_outbox|messages|events)(?! USING)/;
    for (const { sql, bindings } of sent) {
      const plan = await explainPlan(knex, dialect, sql, bindings);
      expect(plan, `${sql}\n${plan}`).not.toMatch(TABLE_SCAN);
      if (/from ["`]messages["`].*sent_at/.test(sql)) expect(plan, `${sql}\n${plan}`).toContain('messages_status_index');
      if (/from ["`]jobs["`]/.test(sql)) expect(plan, `${sql}\n${plan}`).toContain('jobs_failed_at_run_at_index');
      if (/from ["`]trigger_outbox["`]/.test(sql)) expect(plan, `${sql}\n${plan}`).toContain('trigger_outbox_pending_index');
      if (/from ["`]events["`]/.test(sql)) expect(plan, `${sql}\n${plan}`).toContain('events_workspace_id_created_at_index');
    }
    // Counting messages reads an index alone (PostgreSQL may take (campaign_id, status), as small), never the rows
    // that carry the rendered mail.
    const [byStatus] = sent.filter(({ sql }) => /from ["`]messages["`]/.test(sql) && /group by/i.test(sql));
    expect(await explainPlan(knex, dialect, byStatus!.sql, byStatus!.bindings)).toMatch(/COVERING INDEX messages_\w+_index|Index Only Scan using messages_\w+_index/);
    await knex('jobs').where('run_at', '>', now).delete();
  });

  it('the server logs JSON lines, each request with its id (`reqId`), at EMK_LOG_LEVEL; /metrics answers on a real socket', async () => {
    const serve = await startEmk(['serve', '--port', '0', '--host', '127.0.0.1', '--no-worker', '--no-migrate', '--db', h().database.url], /emk listening on (http:\/\/127\.0\.0\.1:\d+)/, {
      ...NO_LIMITS,
      EMK_LOG_LEVEL: 'info',
      EMK_DRAIN_GRACE_MS: '0',
      EMK_METRICS_TOKEN: 'socket-token',
    });
    try {
      await scrapeOverSocket(serve.base, 'socket-token');
      expect((await fetch(`${serve.base}/healthz`, { headers: { 'x-request-id': 'metrics-test-log-1' } })).status).toBe(200);
    } finally {
      serve.stop();
    }
    expect(await serve.exited).toBe(0);
    const entries = serve
      .stdout()
      .split('\n')
      .filter((line) => line.startsWith('{'))
      .map((line) => JSON.parse(line) as { level: number; reqId?: string; msg: string; res?: { statusCode: number } });
    const ours = entries.filter((entry) => entry.reqId === 'metrics-test-log-1');
    expect(ours.map((entry) => entry.msg)).toEqual(['incoming request', 'request completed']);
    expect(ours[1]!.res!.statusCode).toBe(200);
    // Every request's lines carry an id; info is pino's level 30.
    expect(entries.filter((entry) => /request/.test(entry.msg)).every((entry) => typeof entry.reqId === 'string' && entry.level === 30)).toBe(true);
  });

  it('`emk worker --metrics-port` serves its own metrics and the shared queues, with the same token rule', async () => {
    const refused = await runEmk(['worker', '--once', '--metrics-port', '0', '--db', h().database.url, '--no-migrate']);
    expect(refused.code).toBe(2);
    expect(refused.stderr).toMatch(/--metrics-port is for a running worker/);
    expect((await runEmk(['worker', '--metrics-port', 'x', '--db', h().database.url])).stderr).toMatch(/--metrics-port/);

    // Its own database: the worker takes every job due, and those the other tests seeded would fail noisily.
    const database = await createTestDatabase(dialect);
    const worker = await startEmk(['worker', '--metrics-port', '0', '--db', database.url], /emk worker metrics on (http:\/\/127\.0\.0\.1:\d+)\/metrics/, {
      HOST: '127.0.0.1',
      EMK_LOG_LEVEL: 'silent',
      EMK_METRICS_TOKEN: 'worker-token',
    });
    try {
      const samples = await scrapeOverSocket(worker.base, 'worker-token');
      expect(valueOf(samples, 'emk_database_up')).toBe(1);
      expect(valueOf(samples, 'emk_jobs_ready', { kind: Object.keys(h().services.jobHandlers)[0]! })).toBe(0);
    } finally {
      worker.stop();
      expect(await worker.exited).toBe(0);
      await database.drop();
    }
  });
});

/** A child's /metrics: refused without the token, then read with it, the refusal counted. */
async function scrapeOverSocket(base: string, token: string): Promise<Sample[]> {
  expect((await fetch(`${base}/metrics`)).status).toBe(401);
  const res = await fetch(`${base}/metrics`, { headers: { authorization: `Bearer ${token}` } });
  expect(res.status).toBe(200);
  const samples = parseExposition(await res.text());
  expect(valueOf(samples, 'emk_http_requests_total', { route: '/metrics', method: 'GET', status: '401' })).toBe(1);
  return samples;
}

/** `emk …` as a child until stderr says where it listens (`listening`'s group 1: the base URL); stop() sends SIGTERM. */
async function startEmk(args: string[], listening: RegExp, env: Record<string, string>) {
  const child = spawn(process.execPath, [EMK_BIN, ...args], { env: { ...process.env, ...env } });
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (chunk) => (stdout += chunk));
  const exited = new Promise<number | null>((resolve) => child.on('close', resolve));
  const base = await new Promise<string>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`emk ${args[0]} did not start:\n${stderr}`)), 20_000);
    child.stderr.on('data', (chunk) => {
      stderr += chunk;
      const found = listening.exec(stderr);
      if (found) {
        clearTimeout(timer);
        resolve(found[1]!);
      }
    });
  });
  return { base, exited, stdout: () => stdout, stop: () => child.kill('SIGTERM') };
}

/** A relay on a loopback port that takes every recipient but those it is told to refuse (with that code). */
async function startRelay() {
  const answers = new Map<string, number>();
  const server = new SMTPServer({
    authOptional: true,
    disabledCommands: ['STARTTLS'],
    logger: false,
    onRcptTo(address, _session, callback) {
      const code = answers.get(address.address);
      if (code === undefined) return callback();
      return callback(Object.assign(new Error(code >= 500 ? 'mailbox unavailable' : 'try again later'), { responseCode: code }));
    },
    onData(stream, _session, callback) {
      stream.resume();
      stream.on('end', () => callback());
    },
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.server.address() as AddressInfo;
  return { url: `smtp://127.0.0.1:${port}`, answers, close: () => new Promise<void>((resolve) => server.close(() => resolve())) };
}

const relay = await startRelay();
afterAll(() => relay.close());

describeEachDatabase(
  'SMTP hand-over metrics',
  (h) => {
    const { api, contact, campaign, work } = sendingHelpers(h);

    it('each hand-over is timed by its outcome: sent, rejected (5xx), temporary (4xx)', async () => {
      const ws = await h().workspace();
      await api(ws, 'PATCH', '/settings', { sender: { from_email: 'news@shop.test', from_name: 'Shop News' } });
      const tag = Math.random().toString(36).slice(2);
      for (const name of ['ok1', 'ok2', 'gone', 'busy']) await contact(ws, 'subscribed', {}, `${name}-${tag}@example.com`);
      relay.answers.set(`gone-${tag}@example.com`, 550);
      relay.answers.set(`busy-${tag}@example.com`, 451);
      const id = await campaign(ws);
      await api(ws, 'POST', `/campaigns/${id}/send`);
      await work();

      const samples = await scrape(h());
      const handedOver = (outcome: string) => valueOf(samples, 'emk_smtp_handover_duration_seconds_count', { outcome });
      expect(handedOver('sent')).toBe(2);
      expect(handedOver('rejected')).toBe(1);
      expect(handedOver('temporary')).toBe(1);
      expect(handedOver('error')).toBeUndefined();
      expect(valueOf(samples, 'emk_smtp_handover_duration_seconds_bucket', { outcome: 'sent', le: '60' })).toBe(2);
      expect(valueOf(samples, 'emk_smtp_handover_duration_seconds_sum', { outcome: 'sent' })).toBeGreaterThan(0);
    });
  },
  { EMK_SMTP_URL: relay.url, EMK_SMTP_RATE: '0' },
);

it("a watcher's failure never becomes the reporter's: it is a process warning", async () => {
  const observations = createObservations<number>();
  const seen: number[] = [];
  observations.watch(() => {
    throw new Error('broken histogram');
  });
  observations.watch((n) => seen.push(n));
  const warned = new Promise<Error>((resolve) => process.once('warning', resolve));
  expect(() => observations.report(7)).not.toThrow();
  expect(seen).toEqual([7]);
  expect((await warned).message).toBe('a watcher of an observation failed: broken histogram');
});
