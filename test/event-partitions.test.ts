import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openDatabase, type Database } from '../src/domain/db/database.js';
import { monthPartition, type MonthPartition } from '../src/domain/db/dialect/postgres-partitions.js';
import { createEventPruner } from '../src/domain/events/event-pruner.js';
import * as partitionEvents from '../migrations/202611290600_partition_events_by_month.js';
import { describeEachDatabase, type TestWorkspace } from './helpers/harness.js';
import { sendingHelpers } from './helpers/sending.js';
import { createTestDatabase, DIALECTS, type TestDatabase } from './helpers/test-databases.js';

const DAY = 86_400_000;

/** The month `offset` months from the one `at` falls in (UTC), as the partitions name and bound it. */
const monthFrom = (at: number, offset: number): MonthPartition => {
  const date = new Date(at);
  return monthPartition('events', date.getUTCFullYear(), date.getUTCMonth() + offset);
};

const rowsOf = <T>(result: unknown): T[] => (result as { rows: T[] }).rows;

/** The partitions attached to `events` (pg_inherits). */
async function attachedTo(db: Database['knex']): Promise<string[]> {
  return rowsOf<{ name: string }>(
    await db.raw(`SELECT c.relname AS name FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid WHERE i.inhparent = 'events'::regclass ORDER BY 1`),
  ).map((row) => row.name);
}

describeEachDatabase('event partitions and retention by month', (h, dialect) => {
  const { api, contact } = sendingHelpers(h);
  const knex = () => h().services.db.knex;
  const partitions = () => h().services.db.dialect.monthlyPartitions!;
  const onPostgres = dialect === 'postgres';
  const inUse = () => h().services.oldestFactInUse();
  const setRetention = async (ws: TestWorkspace, days: number | null) => {
    const reply = await api(ws, 'PATCH', '/settings', { event_retention_days: days });
    expect(reply.statusCode, reply.body).toBe(200);
  };
  /** An anonymous visitor's events (no trigger fact), each at its time. */
  const track = async (ws: TestWorkspace, events: Array<[name: string, at: number]>) => {
    const batch = events.map(([event, at]) => ({ type: 'track', anonymousId: 'visitor', event, timestamp: new Date(at).toISOString() }));
    const reply = await h().request({ method: 'POST', url: '/v1/batch', json: { writeKey: ws.siteId, batch } });
    expect(reply.statusCode, reply.body).toBe(200);
  };
  const eventNames = async (ws: TestWorkspace) =>
    ((await knex()('events').where({ workspace_id: ws.id }).orderBy('created_at').select('event_name')) as Array<{ event_name: string }>).map((row) => row.event_name);
  /** Which partition holds the workspace's event of this name (PostgreSQL). */
  const storedIn = async (ws: TestWorkspace, name: string) =>
    rowsOf<{ part: string }>(await knex().raw('SELECT tableoid::regclass::text AS part FROM events WHERE workspace_id = ? AND event_name = ?', [ws.id, name]))[0]?.part;
  const exists = async (table: string) => rowsOf<{ t: string | null }>(await knex().raw('SELECT to_regclass(?)::text AS t', [table]))[0]!.t !== null;
  /** A look of a pruner of its own (the services' one looks at most once an hour), to its end. */
  const pruneAll = async () => {
    const pruner = createEventPruner({ db: h().services.db, settings: h().services.settings, clock: h().clock, batchSize: 3 });
    for (let n = await pruner.pruneOnce(inUse); n > 0; n = await pruner.pruneOnce(inUse));
    return pruner.droppedMonths();
  };

  let keepsAll: TestWorkspace;
  let now: number;
  beforeAll(async () => {
    // Mid-month, so which months lie wholly past a 30-day retention does not depend on today's date.
    const today = new Date(h().clock());
    h().clock.advance(Date.UTC(today.getUTCFullYear(), today.getUTCMonth() + 1, 15, 12) - h().clock());
    now = h().clock();
    keepsAll = await h().workspace();
  });

  it('a month wholly past the retention is dropped (PostgreSQL: detached, gone from pg_inherits); a fact not yet consumed holds its month back; the cut-off month loses only its past events', async () => {
    const ws = await h().workspace();
    await setRetention(ws, 30);
    const [m4, m3, m2, m1] = [-4, -3, -2, -1].map((k) => monthFrom(now, k)) as [MonthPartition, MonthPartition, MonthPartition, MonthPartition];
    if (onPostgres) await partitions().ensureAhead(knex(), 'events', m4.from, 3);
    const email = 'old@example.com';
    await contact(ws, 'subscribed', {}, email);
    // A contact's event fires a trigger fact: until the dispatcher consumes it, the fact keeps its event.
    const reply = await api(ws, 'POST', '/events/batch', { events: [{ email, event_name: 'paid', timestamp: new Date(m4.from + DAY).toISOString() }] });
    expect(reply.json().errors).toEqual([]);
    await track(ws, [
      ['m4', m4.from + 2 * DAY],
      ['m3', m3.from + 2 * DAY],
      ['m1_past', m1.from + 2 * DAY],
      ['m1_within', m1.from + 25 * DAY],
      ['recent', now - DAY],
    ]);
    await track(keepsAll, [['kept_m3', m3.from + 5 * DAY]]);
    if (onPostgres) {
      expect(await storedIn(ws, 'm4')).toBe(m4.name);
      expect(await storedIn(ws, 'recent')).toBe(monthFrom(now, 0).name);
    }

    // The months before the cut-off: m2 is empty, m3 holds an event of a workspace keeping everything, m4 an event
    // a live fact names.
    expect(await pruneAll()).toEqual(onPostgres ? [m2.name] : []);
    expect(await eventNames(ws)).toEqual(['paid', 'm1_within', 'recent']);
    expect(await eventNames(keepsAll)).toEqual(['kept_m3']);
    if (onPostgres) {
      const attached = await attachedTo(knex());
      expect(attached).toEqual(expect.arrayContaining([m4.name, m3.name, m1.name, 'events_default']));
      expect(attached).not.toContain(m2.name);
      expect(await exists(m2.name)).toBe(false);
    }

    // Consumed, the fact keeps nothing: the month goes whole, and the fact with it.
    await h().services.dispatcher.drain();
    expect(await pruneAll()).toEqual(onPostgres ? [m4.name] : []);
    expect(await eventNames(ws)).toEqual(['m1_within', 'recent']);
    expect(await knex()('trigger_outbox').where({ workspace_id: ws.id, subject_type: 'event' }).select('id')).toEqual([]);
    if (onPostgres) {
      expect(await attachedTo(knex())).not.toContain(m4.name);
      expect(await exists(m4.name)).toBe(false);
    }
    expect(await pruneAll()).toEqual([]);
  });

  it('ingest goes on while a month is pruned: every event acknowledged meanwhile is stored', async () => {
    const ws = await h().workspace();
    await setRetention(ws, 30);
    const m5 = monthFrom(now, -5);
    if (onPostgres) await partitions().ensureAhead(knex(), 'events', m5.from, 0);
    await track(
      ws,
      Array.from({ length: 30 }, (_, i) => [`old_${i}`, m5.from + i * 3_600_000] as [string, number]),
    );
    const live = await h().workspace();
    const ingest = Promise.all(Array.from({ length: 20 }, (_, i) => track(live, [[`live_${i}`, now - i * 1000]])));
    const [dropped] = await Promise.all([pruneAll(), ingest]);
    if (onPostgres) expect(dropped).toContain(m5.name);
    expect(await eventNames(ws)).toEqual([]);
    expect((await eventNames(live)).sort()).toEqual(Array.from({ length: 20 }, (_, i) => `live_${i}`).sort());
  });

  it('dedupe keys still hold with the new primary key, for the same row sent several times at once', async () => {
    const ws = await h().workspace();
    const email = 'dup@example.com';
    await contact(ws, 'subscribed', {}, email);
    const row = { email, event_name: 'paid', properties: { dedupe_key: 'order-1' }, timestamp: new Date(now - DAY).toISOString() };
    const replies = await Promise.all(Array.from({ length: 4 }, () => api(ws, 'POST', '/events/batch', { events: [row] })));
    for (const reply of replies) expect(reply.statusCode, reply.body).toBe(200);
    expect(replies.map((reply) => reply.json().processed).reduce((a: number, b: number) => a + b, 0)).toBe(1);
    expect(await eventNames(ws)).toEqual(['paid']);
    const again = (await api(ws, 'POST', '/events/batch', { events: [row] })).json();
    expect(again).toMatchObject({ processed: 0, skipped: 1 });
  });

  it('an event far in the past or the future is stored (PostgreSQL: in the default partition); the worker creates months ahead and moves the default\'s rows into theirs', async () => {
    const ws = await h().workspace();
    const later = monthFrom(now, 4);
    await track(ws, [
      ['ancient', Date.UTC(2019, 0, 15)],
      ['future', later.from + DAY],
    ]);
    expect(await eventNames(ws)).toEqual(['ancient', 'future']);
    if (!onPostgres) return;
    expect(await storedIn(ws, 'ancient')).toBe('events_default');
    expect(await storedIn(ws, 'future')).toBe('events_default');

    h().clock.advance(later.from + 10 * DAY - now);
    await pruneAll();
    const attached = await attachedTo(knex());
    for (const k of [0, 1, 2]) expect(attached).toContain(monthFrom(h().clock(), k).name);
    expect(await storedIn(ws, 'future')).toBe(later.name);
    expect(await storedIn(ws, 'ancient')).toBe('events_default');
    // Several processes creating the same months at once agree.
    await Promise.all([0, 1].map(() => partitions().ensureAhead(knex(), 'events', h().clock(), 3)));
    expect(await attachedTo(knex())).toContain(monthFrom(h().clock(), 3).name);
  });
});

for (const dialect of DIALECTS.filter((name) => name === 'postgres')) {
  describe(`the events partitioning migration [${dialect}]`, () => {
    let database: TestDatabase;
    let db: Database;
    beforeAll(async () => {
      database = await createTestDatabase(dialect);
      db = openDatabase(database.url);
    });
    afterAll(async () => {
      await db.close();
      await database.drop();
    });

    it('converts a populated events table and back, rows, indexes and foreign keys kept', async () => {
      const knex = db.knex;
      const indexes = async () =>
        rowsOf<{ name: string; def: string }>(
          await knex.raw(`SELECT indexname AS name, replace(indexdef, ' ON ONLY ', ' ON ') AS def FROM pg_indexes WHERE tablename = 'events' ORDER BY 1`),
        );
      const keys = async () =>
        rowsOf<{ name: string; def: string }>(await knex.raw(`SELECT conname AS name, pg_get_constraintdef(oid) AS def FROM pg_constraint WHERE conrelid = 'events'::regclass ORDER BY 1`));
      const partitioned = async () => Number(rowsOf<{ n: unknown }>(await knex.raw(`SELECT count(*) AS n FROM pg_partitioned_table WHERE partrelid = 'events'::regclass`))[0]!.n) === 1;
      expect(await partitioned()).toBe(true);
      const partitionedIndexes = await indexes();

      await partitionEvents.down(knex);
      expect(await partitioned()).toBe(false);
      const plainIndexes = await indexes();
      expect(plainIndexes.find((index) => index.name === 'events_pkey')?.def).toMatch(/\(id\)$/);
      const plainKeys = await keys();

      await knex('workspaces').insert({ id: 'w', name: 'n', site_id: 's', created_at: 1 });
      await knex('contacts').insert({ id: 'c', workspace_id: 'w', email: 'a@b', email_key: 'a@b', properties: '{}', subscription_status: 'subscribed', created_at: 1, updated_at: 1 });
      const now = Date.now();
      const at = [Date.UTC(2001, 0, 1), now - 400 * DAY, now - 40 * DAY, now, now + 200 * DAY];
      const rows = at.map((createdAt, i) => ({
        id: `e${i}`,
        workspace_id: 'w',
        contact_id: i % 2 ? 'c' : null,
        anonymous_id: 'v',
        event_name: 'viewed',
        properties: JSON.stringify({ i }),
        dedupe_key: i === 1 ? 'k' : null,
        created_at: createdAt,
        received_at: now,
      }));
      await knex('events').insert(rows);

      await partitionEvents.up(knex);
      expect(await partitioned()).toBe(true);
      const stored = rowsOf<{ id: string; part: string }>(await knex.raw('SELECT id, tableoid::regclass::text AS part FROM events ORDER BY id'));
      expect(stored).toEqual([
        { id: 'e0', part: 'events_default' },
        { id: 'e1', part: monthFrom(at[1]!, 0).name },
        { id: 'e2', part: monthFrom(at[2]!, 0).name },
        { id: 'e3', part: monthFrom(now, 0).name },
        { id: 'e4', part: 'events_default' },
      ]);
      const attached = await attachedTo(knex);
      expect(attached[0]).toBe('events_default');
      // From the oldest row's month, but at most 36 months back (the 2001 row went to the default), to 2 months ahead.
      expect(attached.slice(1)).toEqual(Array.from({ length: 39 }, (_, k) => monthFrom(now, k - 36).name));
      expect(await indexes()).toEqual(partitionedIndexes);
      expect((await keys()).filter((key) => key.name !== 'events_pkey')).toEqual(plainKeys.filter((key) => key.name !== 'events_pkey'));
      // The foreign keys hold: an erased contact's events go with it, through every partition.
      await knex('contacts').where({ id: 'c' }).delete();
      expect((await knex('events').orderBy('id').select('id')).map((row: { id: string }) => row.id)).toEqual(['e0', 'e2', 'e4']);

      await partitionEvents.down(knex);
      expect(await partitioned()).toBe(false);
      expect(await indexes()).toEqual(plainIndexes);
      expect((await knex('events').orderBy('id').select('id')).map((row: { id: string }) => row.id)).toEqual(['e0', 'e2', 'e4']);
      await partitionEvents.up(knex);
      expect(await partitioned()).toBe(true);
    });
  });
}
