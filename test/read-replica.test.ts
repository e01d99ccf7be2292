import { execFileSync } from 'node:child_process';
import { appendFileSync, chmodSync, existsSync, mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { createServer, type AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { FastifyInstance } from 'fastify';
import knexFactory, { type Knex } from 'knex';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadConfig } from '../src/domain/config.js';
import { createServices, emailOptionsOf, type Services } from '../src/domain/create-services.js';
import { openDatabase } from '../src/domain/db/database.js';
import { migrateToLatest } from '../src/domain/db/migrate.js';
import { buildApp } from '../src/server/app.js';
import { eventually } from './helpers/browser.js';
import { describeEachDatabase, NO_LIMITS, type TestWorkspace } from './helpers/harness.js';

/*
 * A real hot standby: the test makes its own primary and streaming replica (initdb, pg_basebackup -R, pg_ctl on
 * free ports, as the `postgres` OS user) and points emk's primary and EMK_DATABASE_READ_URL at them. It runs
 * where PostgreSQL is tested (EMK_TEST_DATABASE_URL) and its server binaries are installed.
 */
const POSTGRES_BIN = (() => {
  const root = '/usr/lib/postgresql';
  if (!existsSync(root)) return null;
  const versions = readdirSync(root).sort((a, b) => Number(b) - Number(a));
  const found = versions.map((v) => join(root, v, 'bin')).find((bin) => ['initdb', 'pg_basebackup', 'pg_ctl'].every((tool) => existsSync(join(bin, tool))));
  return found ?? null;
})();
const RUNS = Boolean(process.env.EMK_TEST_DATABASE_URL) && POSTGRES_BIN !== null;

/** A replica further behind than this is skipped; short, so the test sees a paused replay cross it. */
const MAX_LAG_SECONDS = 5;

/** Runs a server tool as the `postgres` user (the clusters' owner; PostgreSQL refuses to run as root). */
function asPostgres(tool: string, args: string[]): string {
  const command = join(POSTGRES_BIN!, tool);
  const asRoot = process.getuid?.() === 0;
  return execFileSync(asRoot ? 'runuser' : command, asRoot ? ['-u', 'postgres', '--', command, ...args] : args, { encoding: 'utf8', cwd: tmpdir(), timeout: 30_000, stdio: ['ignore', 'pipe', 'pipe'] });
}

function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address() as AddressInfo;
      server.close(() => resolve(port));
    });
  });
}

interface Cluster {
  dir: string;
  port: number;
  url: string;
}

function startCluster(root: string, name: string, port: number): Cluster {
  const dir = join(root, name);
  asPostgres('pg_ctl', ['-D', dir, '-l', join(root, `${name}.log`), '-w', '-t', '30', '-o', `-p ${port} -k ${root} -c listen_addresses=127.0.0.1`, 'start']);
  return { dir, port, url: `postgres://postgres@127.0.0.1:${port}/emk` };
}

const stopCluster = (cluster: Cluster, mode: 'fast' | 'immediate') => asPostgres('pg_ctl', ['-D', cluster.dir, '-m', mode, '-w', 'stop']);

describeEachDatabase('without a read replica', (h) => {
  it('every read is on the primary and /readyz names no replica', async () => {
    const { db } = h().services;
    expect(db.reader()).toBe(db.knex);
    expect(await db.readReplicaStatus()).toBeNull();
    const reply = await h().request({ method: 'GET', url: '/readyz' });
    expect(reply.statusCode).toBe(200);
    expect(reply.json()).toEqual({ status: 'ready' });
  });

  it('a read replica url that is not PostgreSQL, or a SQLite primary with one, is refused naming the setting', () => {
    expect(() => loadConfig({ EMK_DATABASE_READ_URL: 'sqlite:replica.db' })).toThrow(/EMK_DATABASE_READ_URL.*postgres:\/\//);
    expect(() => loadConfig({ EMK_READ_MAX_LAG_SECONDS: '-1' })).toThrow(/EMK_READ_MAX_LAG_SECONDS/);
    expect(() => openDatabase('sqlite:never-opened.db', { readUrl: 'postgres://127.0.0.1:1/emk' })).toThrow('a read replica needs a PostgreSQL primary');
  });
});

describe.runIf(RUNS)('read replica (a real hot standby)', () => {
  let root: string;
  let primary: Cluster;
  let standby: Cluster;
  let standbyRunning = false;
  let services: Services;
  let app: FastifyInstance;
  /** A connection of the test's own to the standby: to see what it has replayed, and to pause its replay. */
  let onStandby: Knex;
  let ws: TestWorkspace;

  beforeAll(async () => {
    root = mkdtempSync(join(tmpdir(), 'emk-replica-'));
    chmodSync(root, 0o777);
    const [primaryPort, standbyPort] = [await freePort(), await freePort()];
    asPostgres('initdb', ['-D', join(root, 'primary'), '-U', 'postgres', '--auth=trust', '--no-sync']);
    appendFileSync(join(root, 'primary', 'postgresql.conf'), '\nwal_level = replica\nmax_wal_senders = 4\nfsync = off\n');
    appendFileSync(join(root, 'primary', 'pg_hba.conf'), '\nhost replication postgres 127.0.0.1/32 trust\n');
    primary = startCluster(root, 'primary', primaryPort);
    const admin = knexFactory({ client: 'pg', connection: `postgres://postgres@127.0.0.1:${primaryPort}/postgres` });
    await admin.raw('CREATE DATABASE emk');
    await admin.destroy();
    const migrating = openDatabase(primary.url);
    await migrateToLatest(migrating.knex);
    await migrating.close();

    asPostgres('pg_basebackup', ['-h', '127.0.0.1', '-p', String(primaryPort), '-U', 'postgres', '-D', join(root, 'standby'), '-R', '-X', 'stream', '-c', 'fast', '--no-sync']);
    standby = startCluster(root, 'standby', standbyPort);
    standbyRunning = true;
    standby.url = `postgres://postgres@127.0.0.1:${standbyPort}/emk`;
    onStandby = knexFactory({ client: 'pg', connection: standby.url, pool: { min: 0, max: 1 } });

    const config = loadConfig({ ...NO_LIMITS, EMK_DATABASE_URL: primary.url, EMK_DATABASE_READ_URL: standby.url, EMK_READ_MAX_LAG_SECONDS: String(MAX_LAG_SECONDS), EMK_LOG_LEVEL: 'silent' });
    // Checks every 100 ms instead of every 2 s: the test waits for each change of state.
    const db = openDatabase(config.databaseUrl, { readUrl: config.databaseReadUrl, maxReadLagSeconds: config.maxReadLagSeconds, replicaCheckIntervalMs: 100 });
    services = createServices(db, { email: emailOptionsOf(config) });
    app = await buildApp({ services, config, logLevel: 'silent' });
    const { workspace, apiKey, integration } = await services.workspaces.bootstrap({ name: 'Replicated shop', domain: 'shop.test' });
    ws = { id: workspace.id, siteId: workspace.site_id, apiKey: apiKey.key, integrationId: integration.id, integrationKey: integration.api_key };
  }, 60_000);

  afterAll(async () => {
    await app?.close();
    await services?.close();
    await onStandby?.destroy();
    if (standbyRunning) stopCluster(standby, 'immediate');
    if (primary) stopCluster(primary, 'immediate');
    if (root) rmSync(root, { recursive: true, force: true });
  });

  const readyz = async () => {
    const reply = await app.inject({ method: 'GET', url: '/readyz' });
    return { code: reply.statusCode, body: reply.json() as { status: string; read_replica?: { status: string; lag_seconds: number | null } } };
  };
  const replicaStatus = (status: string) => eventually(readyz, (r) => r.body.read_replica?.status === status, 15_000);
  const listedEmails = async () => {
    const reply = await app.inject({ method: 'GET', url: '/api/v1/contacts?limit=100', headers: { 'x-api-key': ws.apiKey } });
    expect(reply.statusCode).toBe(200);
    return (reply.json() as { data: Array<{ email: string }> }).data.map((c) => c.email).sort();
  };
  const addContact = async (email: string) => {
    const reply = await app.inject({ method: 'POST', url: '/api/v1/contacts', headers: { 'x-api-key': ws.apiKey, 'content-type': 'application/json' }, payload: JSON.stringify({ email }) });
    expect(reply.statusCode).toBe(201);
  };
  const onPrimary = async (email: string) => (await services.db.knex('contacts').where({ workspace_id: ws.id, email }).count({ n: '*' }))[0]!.n;
  const inRecovery = async (knex: Knex) => ((await knex.raw('SELECT pg_is_in_recovery() AS r')) as { rows: Array<{ r: boolean }> }).rows[0]!.r;

  it('serves GET lists from the standby, writes on the primary, skips a lagging standby', async () => {
    // Unknown until the first check answers: the primary serves meanwhile.
    const ready = await replicaStatus('up');
    expect(ready.code).toBe(200);
    expect(ready.body).toMatchObject({ status: 'ready', read_replica: { status: 'up' } });
    expect(await inRecovery(services.db.reader())).toBe(true);
    expect(await inRecovery(services.db.knex)).toBe(false);

    await addContact('a@example.com');
    await eventually(() => onStandby('contacts').where({ email: 'a@example.com' }).count({ n: '*' }), (rows) => Number(rows[0]!.n) === 1);
    await onStandby.raw('SELECT pg_wal_replay_pause()');
    // The standby is read-only: this write succeeding, and being on the primary, shows writes go there.
    await addContact('b@example.com');
    expect(Number(await onPrimary('b@example.com'))).toBe(1);
    // The list the standby gives misses what it has not replayed: the standby answered, not the primary.
    expect(await listedEmails()).toEqual(['a@example.com']);

    // Replay stays paused while the primary moves on: past the bound, the primary answers.
    const lagging = await replicaStatus('lagging');
    expect(lagging.code).toBe(200);
    expect(lagging.body.read_replica!.lag_seconds).toBeGreaterThan(MAX_LAG_SECONDS);
    expect(await listedEmails()).toEqual(['a@example.com', 'b@example.com']);

    await onStandby.raw('SELECT pg_wal_replay_resume()');
    await replicaStatus('up');
    expect(await inRecovery(services.db.reader())).toBe(true);
    expect(await listedEmails()).toEqual(['a@example.com', 'b@example.com']);
  }, 45_000);

  it('falls back to the primary when the standby stops, and /readyz says so', async () => {
    await onStandby.destroy();
    stopCluster(standby, 'fast');
    standbyRunning = false;
    // A read sent as the standby goes (here on a pooled connection it closed) is a 503 to retry, never a 500; it
    // marks the standby down, so the retry goes to the primary.
    const first = await app.inject({ method: 'GET', url: '/api/v1/contacts?limit=100', headers: { 'x-api-key': ws.apiKey } });
    expect([200, 503], first.body).toContain(first.statusCode);
    if (first.statusCode === 503) expect(first.headers['retry-after']).toBe('1');
    const down = await replicaStatus('down');
    expect(down.code).toBe(200);
    expect(down.body).toEqual({ status: 'ready', read_replica: { status: 'down', lag_seconds: null } });
    expect(services.db.reader()).toBe(services.db.knex);
    expect(await listedEmails()).toEqual(['a@example.com', 'b@example.com']);
    await addContact('c@example.com');
    expect(await listedEmails()).toEqual(['a@example.com', 'b@example.com', 'c@example.com']);
  }, 30_000);
});
