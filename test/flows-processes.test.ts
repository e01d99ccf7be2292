import { spawn, type ChildProcess } from 'node:child_process';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { eventually } from './helpers/browser.js';
import { EMK_BIN } from './helpers/cli.js';
import { closeHarness, createHarness, NO_LIMITS, type Harness } from './helpers/harness.js';

/**
 * Scale-out (PostgreSQL only: SQLite is one process per file): three `emk worker` processes on one database
 * consume the same outbox and run the same enrolments; each trigger fact enrols once and each step is sent once.
 */
describe.skipIf(!process.env.EMK_TEST_DATABASE_URL)('flows on three worker processes [postgres]', () => {
  let h: Harness;
  beforeAll(async () => {
    h = await createHarness('postgres');
  });
  afterAll(async () => {
    if (h) await closeHarness(h);
  });

  /** A worker whose database connections carry `name` (node-postgres reads PGAPPNAME), so the test sees it start. */
  function worker(name: string): { child: ChildProcess; exited: Promise<number | null> } {
    const child = spawn(process.execPath, [EMK_BIN, 'worker', '--db', h.database.url], {
      env: { ...process.env, ...NO_LIMITS, EMK_LOG_LEVEL: 'silent', PGAPPNAME: name },
      stdio: ['ignore', 'ignore', 'pipe'],
    });
    return { child, exited: new Promise((resolve) => child.once('exit', (code) => resolve(code))) };
  }

  it('300 triggers (two per contact): each enrols once per flow, each step is sent once, and every fact is consumed', async () => {
    const ws = await h.workspace();
    const api = (method: 'GET' | 'POST', url: string, json?: unknown) => h.request({ method, url: `/api/v1${url}`, key: ws.apiKey, ...(json === undefined ? {} : { json }) });
    const n = 150;
    const emails = Array.from({ length: n }, (_, i) => `scale${i}@example.com`);
    for (const email of emails) expect((await api('POST', '/contacts', { email, subscription_status: 'subscribed' })).statusCode).toBe(201);
    const create = async (fields: Record<string, unknown>) => (await api('POST', '/flows', { name: 'Scale', status: 'live', trigger: { type: 'event', event_name: 'scale_test' }, ...fields })).json().id as string;
    const twoEmails = await create({
      steps: [
        { type: 'email', subject: 'First', html: '<p>1</p>' },
        { type: 'delay', minutes: 0.001 },
        { type: 'email', subject: 'Second', html: '<p>2</p>' },
      ],
    });
    const once = await create({ reentry: 'once', steps: [{ type: 'email', subject: 'Once', html: '<p>once</p>' }] });

    const names = ['emk-worker-a', 'emk-worker-b', 'emk-worker-c'];
    const workers = names.map(worker);
    try {
      // Barrier: every worker has connected (it listens for SIGTERM from before that), so each takes part.
      await eventually(
        async () => (await h.services.db.knex('pg_stat_activity').whereIn('application_name', names).distinct('application_name')).length,
        (connected) => connected === names.length,
        60_000,
      );
      // Two events per contact, written while the workers run.
      for (let round = 0; round < 2; round++) {
        const reply = await api('POST', '/events/batch', { events: emails.map((email) => ({ email, event_name: 'scale_test' })) });
        expect(reply.json()).toMatchObject({ processed: n, errors: [] });
      }
      const knex = h.services.db.knex;
      await eventually(
        async () => Number((await knex('flow_enrollments').where({ flow_id: twoEmails, status: 'completed' }).count({ c: '*' }))[0]!.c),
        (done) => done === 2 * n,
        60_000,
      );
      await eventually(
        async () => Number((await knex('flow_enrollments').where({ flow_id: once, status: 'completed' }).count({ c: '*' }))[0]!.c),
        (done) => done === n,
        60_000,
      );
    } finally {
      for (const w of workers) w.child.kill('SIGTERM');
      expect(await Promise.all(workers.map((w) => w.exited))).toEqual([0, 0, 0]);
    }
    const knex = h.services.db.knex;
    expect(await knex('trigger_outbox').where({ workspace_id: ws.id }).whereNull('processed_at')).toEqual([]);
    expect(await knex('flow_enrollments').where({ flow_id: twoEmails })).toHaveLength(2 * n);
    expect(await knex('flow_enrollments').where({ flow_id: once })).toHaveLength(n);
    const messages = await knex('messages').where({ workspace_id: ws.id }).select('flow_id', 'enrollment_id', 'subject', 'status', 'contact_id');
    expect(messages).toHaveLength(2 * 2 * n + n);
    expect(messages.every((m) => m.status === 'captured')).toBe(true);
    // One message per enrolment and step.
    expect(new Set(messages.map((m) => `${m.enrollment_id}:${m.subject}`)).size).toBe(messages.length);
    const perContactOnce = messages.filter((m) => m.flow_id === once).map((m) => m.contact_id);
    expect(new Set(perContactOnce).size).toBe(n);
  }, 120_000);
});
