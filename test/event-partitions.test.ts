import { beforeAll, expect, it } from 'vitest';
import type { MonthPartition } from '../src/domain/db/dialect/postgres-partitions.js';
import { createEventPruner } from '../src/domain/events/event-pruner.js';
import { describeEachDatabase, type TestWorkspace } from './helpers/harness.js';
import { attachedTo, monthFrom, rowsOf } from './helpers/partitions.js';
import { sendingHelpers } from './helpers/sending.js';

const DAY = 86_400_000;

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
