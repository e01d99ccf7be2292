import { expect, it } from 'vitest';
import { describeEachDatabase, type TestWorkspace } from './helpers/harness.js';

describeEachDatabase('events batch', (h) => {
  const newContact = async (ws: TestWorkspace, email: string) =>
    (await h().request({ method: 'POST', url: '/api/v1/contacts', key: ws.apiKey, json: { email } })).json().id as string;
  const postBatch = (ws: TestWorkspace, body: unknown) =>
    h().request({ method: 'POST', url: '/api/v1/events/batch', key: ws.apiKey, json: body });
  const putBatch = (ws: TestWorkspace, body: unknown) =>
    h().request({ method: 'PUT', url: '/api/v1/events/batch', key: ws.apiKey, json: body });
  const knex = () => h().services.db.knex;
  const eventsOf = (ws: TestWorkspace) => knex()('events').where({ workspace_id: ws.id }).orderBy(['created_at', 'id']);
  // Flow triggers only: contact_changed facts (they re-evaluate segments) are tested in segments.test.ts.
  const outboxOf = (ws: TestWorkspace) => knex()('trigger_outbox').where({ workspace_id: ws.id }).whereNot({ trigger_type: 'contact_changed' }).orderBy('id');
  const contactsOf = async (ws: TestWorkspace) => (await knex()('contacts').where({ workspace_id: ws.id })).length;
  const propsOf = (raw: unknown) => (typeof raw === 'string' ? JSON.parse(raw) : raw) as Record<string, unknown>;
  /** Runs `fn`, counting the SQL statements sent meanwhile (knex `query` events). */
  const countStatements = async (fn: () => Promise<void>) => {
    let statements = 0;
    const count = () => statements++;
    knex().on('query', count);
    try {
      await fn();
    } finally {
      knex().removeListener('query', count);
    }
    return statements;
  };
  const manyContacts = async (ws: TestWorkspace, n: number, prefix: string) => {
    for (let i = 0; i < n; i += 200) {
      await Promise.all(
        Array.from({ length: Math.min(200, n - i) }, (_, k) => newContact(ws, `${prefix}-${i + k}@example.com`)),
      );
    }
  };

  it('POST writes every good row, reports bad ones by index, matches emails case-insensitively', async () => {
    const ws = await h().workspace();
    const ann = await newContact(ws, 'ann@example.com');
    const res = await postBatch(ws, {
      events: [
        { email: 'ANN@Example.COM', event_name: 'Loyalty Joined', properties: { tier: 'gold' }, source: 'crm', timestamp: '2026-09-01T10:00:00Z' },
        { email: 'nobody@example.com', event_name: 'x' },
        { email: 'ann@example.com' },
        { email: 'ann@example.com', event_name: 'x', timestamp: 'yesterday' },
        { email: 'ann@example.com', event_name: 'x', properties: 'text' },
        { event_name: 'x' },
        { email: 'ann@example.com', event_name: 'product_viewed' },
        null,
      ],
    });
    expect(res.statusCode).toBe(200);
    const body = res.json();
    expect(body.processed).toBe(2);
    expect(body.skipped).toBe(0);
    expect(body.errors.map((e: { index: number }) => e.index)).toEqual([1, 2, 3, 4, 5, 7]);
    expect(body.errors[5]).toEqual({ index: 7, email: '', error: 'invalid request: events[7] must be an object' });
    expect(body.errors[0]).toEqual({ index: 1, email: 'nobody@example.com', error: 'contact not found' });
    expect(body.errors[1]).toEqual({ index: 2, email: 'ann@example.com', error: 'invalid request: event_name is required' });
    expect(body.errors[2].error).toMatch(/^invalid request: timestamp/);
    expect(body.errors[3].error).toMatch(/^invalid request: properties/);
    expect(body.errors[4]).toEqual({ index: 5, email: '', error: 'invalid request: email is required' });

    const stored = await eventsOf(ws);
    expect(stored.map((e) => [e.contact_id, e.event_name, e.source])).toEqual([
      [ann, 'Loyalty Joined', 'crm'],
      [ann, 'viewed_product', null],
    ]);
    expect(Number(stored[0].created_at)).toBe(Date.parse('2026-09-01T10:00:00Z'));
    expect(Math.abs(Number(stored[1].created_at) - Date.now())).toBeLessThan(60_000);
    expect(propsOf(stored[0].properties)).toEqual({ tier: 'gold' });
    // The timeline shows them.
    const timeline = (await h().request({ method: 'GET', url: `/api/v1/events?contact_id=${ann}`, key: ws.apiKey })).json();
    expect(timeline.meta.total).toBe(2);
  });

  it('POST never creates contacts: an unknown or foreign email is an error and nothing is stored', async () => {
    const ws = await h().workspace();
    const other = await h().workspace();
    await newContact(other, 'theirs@example.com');
    const res = await postBatch(ws, { events: [{ email: 'theirs@example.com', event_name: 'x' }, { email: 'new@example.com', event_name: 'x' }] });
    expect(res.json()).toEqual({
      processed: 0,
      skipped: 0,
      errors: [
        { index: 0, email: 'theirs@example.com', error: 'contact not found' },
        { index: 1, email: 'new@example.com', error: 'contact not found' },
      ],
    });
    expect(await contactsOf(ws)).toBe(0);
    expect(await eventsOf(ws)).toHaveLength(0);
  });

  it('POST refuses a body without an events array, and more than 1000 events, writing nothing', async () => {
    const ws = await h().workspace();
    await newContact(ws, 'limit@example.com');
    for (const body of [{}, { events: 'x' }, { events: { email: 'limit@example.com' } }]) {
      const res = await postBatch(ws, body);
      expect(res.statusCode).toBe(400);
      expect(res.json().error).toBe('invalid request: events must be an array');
    }
    const row = { email: 'limit@example.com', event_name: 'bulk' };
    const tooMany = await postBatch(ws, { events: Array.from({ length: 1001 }, () => row) });
    expect(tooMany.statusCode).toBe(400);
    expect(tooMany.json().error).toBe('invalid request: events must hold at most 1000 events');
    expect(await eventsOf(ws)).toHaveLength(0);
    const max = await postBatch(ws, { events: Array.from({ length: 1000 }, () => row) });
    expect(max.statusCode).toBe(200);
    expect(max.json()).toEqual({ processed: 1000, skipped: 0, errors: [] });
    expect(await eventsOf(ws)).toHaveLength(1000);
  });

  it('POST fires each written event’s trigger; shipping_information fires its own', async () => {
    const ws = await h().workspace();
    const c = await newContact(ws, 'trig@example.com');
    await postBatch(ws, {
      events: [
        { email: 'trig@example.com', event_name: 'Loyalty Joined', source: 'crm' },
        { email: 'trig@example.com', event_name: 'checkout_started' },
        { email: 'trig@example.com', event_name: 'shipping_information', source: 'aftership', properties: { order_number: '1' } },
        { email: 'ghost@example.com', event_name: 'never' },
      ],
    });
    const stored = await eventsOf(ws);
    const outbox = await outboxOf(ws);
    expect(outbox.map((r) => [r.trigger_type, r.event_name, r.contact_id, r.source])).toEqual([
      ['event', 'Loyalty Joined', c, 'crm'],
      ['event', 'started_checkout', c, null],
      ['shipping_information', 'shipping_information', c, 'aftership'],
    ]);
    expect(outbox.map((r) => r.subject_id).sort()).toEqual(stored.map((e) => e.id).sort());
  });

  it('POST skips a row whose dedupe_key is already stored for that contact and name (a re-sent row)', async () => {
    const ws = await h().workspace();
    await newContact(ws, 'dup@example.com');
    const row = { email: 'dup@example.com', event_name: 'paid', properties: { dedupe_key: 'k1' } };
    const first = (await postBatch(ws, { events: [row, row, { ...row, event_name: 'other' }] })).json();
    expect(first).toEqual({ processed: 2, skipped: 1, errors: [] });
    const again = (await postBatch(ws, { events: [{ ...row, email: 'DUP@example.com' }, { ...row, properties: { dedupe_key: 'k2' } }] })).json();
    expect(again).toEqual({ processed: 1, skipped: 1, errors: [] });
    // A value that is no dedupe key (an object, empty text) never skips.
    const odd = [{ ...row, properties: { dedupe_key: { a: 1 } } }, { ...row, properties: { dedupe_key: '' } }];
    expect((await postBatch(ws, { events: [...odd, ...odd] })).json()).toEqual({ processed: 4, skipped: 0, errors: [] });
    expect(await eventsOf(ws)).toHaveLength(7);
    expect(await outboxOf(ws)).toHaveLength(7);
  });

  it('a 1000-event POST is set-based: one transaction, a bounded number of statements', async () => {
    const ws = await h().workspace();
    await manyContacts(ws, 100, 'bulk');
    const events = Array.from({ length: 1000 }, (_, i) => ({
      email: `BULK-${i % 100}@example.com`,
      event_name: `bulk_${i % 3}`,
      properties: { i, ...(i % 2 ? { dedupe_key: `d${i}` } : {}) },
    }));
    const statements = await countStatements(async () => {
      expect((await postBatch(ws, { events })).json()).toEqual({ processed: 1000, skipped: 0, errors: [] });
    });
    // BEGIN, savepoint, contacts lookup, dedupe lookup, 1-2 event inserts, 1-3 outbox inserts, release, COMMIT.
    expect(statements).toBeLessThanOrEqual(12);
    expect(await eventsOf(ws)).toHaveLength(1000);
    expect(await outboxOf(ws)).toHaveLength(1000);
  });

  it('PUT corrects matched events (each field only when sent), fires nothing, and re-running changes nothing', async () => {
    const ws = await h().workspace();
    const c = await newContact(ws, 'fix@example.com');
    await postBatch(ws, {
      events: [
        { email: 'fix@example.com', event_name: 'checkout_started', properties: { dedupe_key: 'o1', total: 1 }, source: 'shop', timestamp: '2026-01-01T00:00:00Z' },
        { email: 'fix@example.com', event_name: 'paid', properties: { dedupe_key: 'o2', total: 2 }, source: 'shop', timestamp: '2026-01-02T00:00:00Z' },
        { email: 'fix@example.com', event_name: 'paid', properties: { dedupe_key: 'o3' }, source: 'shop', timestamp: '2026-01-03T00:00:00Z' },
      ],
    });
    const outboxBefore = (await outboxOf(ws)).length;
    const corrections = {
      events: [
        // Alias and case-insensitive email match; only the timestamp changes.
        { email: 'FIX@example.com', event_name: 'started_checkout', dedupe_key: 'o1', timestamp: '2026-02-01T00:00:00Z' },
        // Replacement properties without dedupe_key keep it; the source is kept.
        { email: 'fix@example.com', event_name: 'paid', dedupe_key: 'o2', properties: { total: 20 } },
        // Only the source.
        { email: 'fix@example.com', event_name: 'paid', dedupe_key: 'o3', source: 'backoffice' },
        { email: 'fix@example.com', event_name: 'paid', dedupe_key: 'nope' },
        { email: 'ghost@example.com', event_name: 'paid', dedupe_key: 'o2' },
        { email: 'fix@example.com', event_name: 'paid' },
      ],
    };
    const res = await putBatch(ws, corrections);
    expect(res.statusCode).toBe(200);
    expect(res.json()).toEqual({
      updated: 3,
      inserted: 0,
      skipped: 0,
      errors: [
        { index: 3, email: 'fix@example.com', error: 'no stored event matches email, event_name and dedupe_key' },
        { index: 4, email: 'ghost@example.com', error: 'contact not found' },
        { index: 5, email: 'fix@example.com', error: 'invalid request: dedupe_key is required' },
      ],
    });
    const byKey = async () => (await eventsOf(ws)).sort((a, b) => (a.dedupe_key < b.dedupe_key ? -1 : 1));
    const stored = await byKey();
    expect(stored.map((e) => [e.contact_id, e.event_name, e.dedupe_key, e.source, Number(e.created_at), propsOf(e.properties)])).toEqual([
      [c, 'started_checkout', 'o1', 'shop', Date.parse('2026-02-01T00:00:00Z'), { dedupe_key: 'o1', total: 1 }],
      [c, 'paid', 'o2', 'shop', Date.parse('2026-01-02T00:00:00Z'), { dedupe_key: 'o2', total: 20 }],
      [c, 'paid', 'o3', 'backoffice', Date.parse('2026-01-03T00:00:00Z'), { dedupe_key: 'o3' }],
    ]);
    expect(await outboxOf(ws)).toHaveLength(outboxBefore);

    const again = (await putBatch(ws, { events: corrections.events.slice(0, 3) })).json();
    expect(again).toEqual({ updated: 0, inserted: 0, skipped: 3, errors: [] });
    expect(await byKey()).toEqual(stored);
  });

  it('PUT with upsert inserts unmatched rows as events of the contact, without a trigger; never creates contacts', async () => {
    const ws = await h().workspace();
    const c = await newContact(ws, 'up@example.com');
    const body = {
      upsert: true,
      events: [
        { email: 'up@example.com', event_name: 'paid', dedupe_key: 7, properties: { total: 5 }, timestamp: '2026-03-01T00:00:00Z' },
        { email: 'new@example.com', event_name: 'paid', dedupe_key: 'x' },
        // Same key later in the request: corrects the row just inserted.
        { email: 'up@example.com', event_name: 'paid', dedupe_key: '7', source: 'late' },
      ],
    };
    const res = (await putBatch(ws, body)).json();
    expect(res).toEqual({ updated: 1, inserted: 1, skipped: 0, errors: [{ index: 1, email: 'new@example.com', error: 'contact not found' }] });
    const stored = await eventsOf(ws);
    expect(stored.map((e) => [e.contact_id, e.event_name, e.dedupe_key, e.source, Number(e.created_at), propsOf(e.properties)])).toEqual([
      [c, 'paid', '7', 'late', Date.parse('2026-03-01T00:00:00Z'), { total: 5, dedupe_key: '7' }],
    ]);
    expect(await outboxOf(ws)).toHaveLength(0);
    expect(await contactsOf(ws)).toBe(1);
    // Re-running the upsert is idempotent.
    expect((await putBatch(ws, body)).json()).toMatchObject({ updated: 0, inserted: 0, skipped: 2 });
    expect(await eventsOf(ws)).toHaveLength(1);
    // Without upsert (the default) an unmatched row is an error.
    const strict = (await putBatch(ws, { events: [{ email: 'up@example.com', event_name: 'paid', dedupe_key: 'other' }] })).json();
    expect(strict).toMatchObject({ updated: 0, inserted: 0, errors: [{ index: 0, error: 'no stored event matches email, event_name and dedupe_key' }] });
  });

  it('PUT corrects every stored event sharing one match key', async () => {
    const ws = await h().workspace();
    await newContact(ws, 'twice@example.com');
    // Two stored events with one key (single-event endpoint does not dedupe).
    const contactId = (await knex()('contacts').where({ workspace_id: ws.id }).first()).id;
    for (let i = 0; i < 2; i++) {
      await h().request({ method: 'POST', url: '/api/v1/events', key: ws.apiKey, json: { contact_id: contactId, event_name: 'paid', properties: { dedupe_key: 'same', i } } });
    }
    const res = (await putBatch(ws, { events: [{ email: 'twice@example.com', event_name: 'paid', dedupe_key: 'same', source: 'fixed' }] })).json();
    expect(res).toEqual({ updated: 1, inserted: 0, skipped: 0, errors: [] });
    const stored = await eventsOf(ws);
    expect(stored.map((e) => [e.source, propsOf(e.properties).i]).sort((a, b) => Number(a[1]) - Number(b[1]))).toEqual([
      ['fixed', 0],
      ['fixed', 1],
    ]);
  });

  it('PUT refuses a bad body and more than 1000 events; a 1000-row correction is a bounded number of statements', async () => {
    const ws = await h().workspace();
    expect((await putBatch(ws, { events: null })).statusCode).toBe(400);
    expect((await putBatch(ws, { events: [], upsert: 'yes' })).json().error).toBe('invalid request: upsert must be a boolean');
    const tooMany = await putBatch(ws, { events: Array.from({ length: 1001 }, () => ({ email: 'a@example.com', event_name: 'x', dedupe_key: 'k' })) });
    expect(tooMany.statusCode).toBe(400);
    expect(tooMany.json().error).toBe('invalid request: events must hold at most 1000 events');

    await manyContacts(ws, 50, 'corr');
    const rows = Array.from({ length: 1000 }, (_, i) => ({ email: `corr-${i % 50}@example.com`, event_name: 'paid', dedupe_key: `k${i}` }));
    expect((await putBatch(ws, { upsert: true, events: rows })).json()).toEqual({ updated: 0, inserted: 1000, skipped: 0, errors: [] });
    // One source for all: identical patches share one UPDATE.
    const statements = await countStatements(async () => {
      const res = (await putBatch(ws, { events: rows.map((r) => ({ ...r, source: 'fixed' })) })).json();
      expect(res).toEqual({ updated: 1000, inserted: 0, skipped: 0, errors: [] });
    });
    expect(statements).toBeLessThanOrEqual(12);
    expect(await knex()('events').where({ workspace_id: ws.id, source: 'fixed' })).toHaveLength(1000);
    // Distinct values: each event gets its own, still in one UPDATE.
    const t0 = Date.parse('2026-05-01T00:00:00Z');
    const distinctStatements = await countStatements(async () => {
      const distinct = (
        await putBatch(ws, { events: rows.map((r, i) => ({ ...r, timestamp: new Date(t0 + i * 1000).toISOString(), properties: { i } })) })
      ).json();
      expect(distinct).toEqual({ updated: 1000, inserted: 0, skipped: 0, errors: [] });
    });
    expect(distinctStatements).toBeLessThanOrEqual(12);
    const k7 = await knex()('events').where({ workspace_id: ws.id, dedupe_key: 'k7' }).first();
    expect([Number(k7.created_at), propsOf(k7.properties)]).toEqual([t0 + 7000, { i: 7, dedupe_key: 'k7' }]);
  });
});
