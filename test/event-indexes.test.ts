import { expect, it } from 'vitest';
import { explainPlan, insertContacts } from './helpers/plans.js';
import { describeEachDatabase } from './helpers/harness.js';

const CONTACTS = 200;
const EVENTS_EACH = 100;
const NAMES = ['viewed_product', 'added_to_cart', 'started_checkout', 'placed_order'];

/**
 * A contact's events are found through one index, (workspace_id, contact_id, event_name, created_at): the
 * narrower (workspace_id, contact_id, created_at) is gone (it cost a page per contact in every group commit).
 * Every query the domain sends on events that names a contact must seek that index, never read the workspace's
 * events: on a table large enough that a planner prefers an index to a scan, with statistics gathered.
 */
describeEachDatabase("a contact's events", (h) => {
  it('every lookup by contact (list, list by name, export, erasure) seeks the contact index', async () => {
    const ws = await h().workspace();
    const { knex } = h().services.db;
    const contactIds = await insertContacts(knex, ws.id, CONTACTS);
    const events = contactIds.flatMap((contactId, c) =>
      Array.from({ length: EVENTS_EACH }, (_, e) => ({
        id: `e-${String(c).padStart(4, '0')}-${String(e).padStart(4, '0')}`,
        workspace_id: ws.id,
        contact_id: contactId,
        event_name: NAMES[e % NAMES.length],
        properties: '{}',
        created_at: 1_700_000_000_000 + e * 1000 + c,
        received_at: 1_700_000_000_000 + e * 1000 + c,
      })),
    );
    await knex.batchInsert('events', events, 500);
    await knex.raw(h().dialect === 'sqlite' ? 'ANALYZE' : 'ANALYZE events, contacts');

    const sent: Array<{ sql: string; bindings: unknown[] }> = [];
    const capture = (query: { sql: string; bindings?: unknown[] }) => {
      // The erasure's delete of trigger facts reads events too: test/outbox-indexes.test.ts checks its plan.
      if (/\bfrom\s+["`]?events["`]?/i.test(query.sql) && /contact_id/.test(query.sql) && !/trigger_outbox/.test(query.sql)) sent.push({ sql: query.sql, bindings: query.bindings ?? [] });
    };
    knex.on('query', capture);
    try {
      const paging = { page: 2, perPage: 10 };
      expect((await h().services.events.list(ws.id, { contact_id: 'c-0007' }, paging)).data).toHaveLength(10);
      expect((await h().services.events.list(ws.id, { contact_id: 'c-0007', event_name: 'added_to_cart' }, paging)).data).toHaveLength(10);
      expect((await h().services.dataRights.export(ws.id, 'c-0008')).events).toHaveLength(EVENTS_EACH);
      await h().services.dataRights.erase(ws.id, 'c-0009');
    } finally {
      knex.off('query', capture);
    }
    // Both lists (count and page each), the export's list, and the erasure's read of views and its delete.
    expect(sent.length).toBeGreaterThanOrEqual(5);
    expect(sent.some(({ sql }) => /^\s*delete\b/i.test(sql))).toBe(true);
    expect(Number((await knex('events').where({ contact_id: 'c-0009' }).count({ n: '*' }))[0]!.n)).toBe(0);

    const holding =
      h().dialect === 'sqlite' ? ['events'] : ((await knex.raw('SELECT DISTINCT tableoid::regclass::text AS t FROM events')) as { rows: Array<{ t: string }> }).rows.map((row) => row.t);
    for (const { sql, bindings } of sent) {
      const plan = await explainPlan(h().services.db.knex, h().dialect, sql, bindings);
      expect(plan, `${sql}\n${plan}`).toContain('events_contact_name_index');
      // PostgreSQL: the partitions that hold rows are read by the index (an empty month is a scan of nothing).
      for (const table of holding) expect(plan, sql).not.toMatch(new RegExp(`Seq Scan on ${table} `));
      expect(plan, sql).not.toMatch(/SCAN events(?! USING)|events_workspace_id_created_at_index/);
    }
  });

});
