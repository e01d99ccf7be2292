import { expect, it } from 'vitest';
import { STANDARD_EVENT_NAMES } from '../src/domain/events/event-names.js';
import { describeEachDatabase, type TestWorkspace } from './helpers/harness.js';

describeEachDatabase('events', (h) => {
  const newContact = async (ws: TestWorkspace, email: string) =>
    (await h().request({ method: 'POST', url: '/api/v1/contacts', key: ws.apiKey, json: { email } })).json().id as string;
  const postEvent = (ws: TestWorkspace, body: Record<string, unknown>) =>
    h().request({ method: 'POST', url: '/api/v1/events', key: ws.apiKey, json: body });
  // Flow triggers only: contact_changed facts (they re-evaluate segments) are tested in segments.test.ts.
  const outboxOf = (ws: TestWorkspace) =>
    h().services.db.knex('trigger_outbox').where({ workspace_id: ws.id }).whereNot({ trigger_type: 'contact_changed' }).orderBy('id');

  it('POST /api/v1/events answers the event record (201) and stores it', async () => {
    const ws = await h().workspace();
    const contactId = await newContact(ws, 'ev1@example.com');
    const res = await postEvent(ws, {
      contact_id: contactId,
      event_name: 'Loyalty Joined',
      properties: { tier: 'gold', nested: { a: [1, 2] } },
      source: 'crm',
    });
    expect(res.statusCode).toBe(201);
    const event = res.json();
    expect(Object.keys(event).sort()).toEqual(['contact_id', 'created_at', 'event_name', 'id', 'properties', 'source']);
    expect(event).toMatchObject({
      contact_id: contactId,
      event_name: 'Loyalty Joined',
      properties: { tier: 'gold', nested: { a: [1, 2] } },
      source: 'crm',
    });
    expect(Math.abs(Date.parse(event.created_at) - Date.now())).toBeLessThan(60_000);
    const listed = (await h().request({ method: 'GET', url: '/api/v1/events', key: ws.apiKey })).json();
    expect(listed.data).toEqual([event]);
  });

  it('POST /api/v1/events requires contact_id and event_name, naming the field', async () => {
    const ws = await h().workspace();
    const contactId = await newContact(ws, 'ev2@example.com');
    const noName = await postEvent(ws, { contact_id: contactId });
    expect(noName.statusCode).toBe(400);
    expect(noName.json().error).toBe('invalid request: event_name is required');
    const noContact = await postEvent(ws, { event_name: 'x' });
    expect(noContact.statusCode).toBe(400);
    expect(noContact.json().error).toBe('invalid request: contact_id is required');
    const badProps = await postEvent(ws, { contact_id: contactId, event_name: 'x', properties: 'text' });
    expect(badProps.statusCode).toBe(400);
    expect(badProps.json().error).toMatch(/^invalid request: properties/);
    expect(await h().services.db.knex('events').where({ workspace_id: ws.id })).toHaveLength(0);
  });

  it("an unknown contact, or another workspace's contact, is 404 and stores nothing", async () => {
    const ws = await h().workspace();
    const other = await h().workspace();
    const foreign = await newContact(other, 'foreign@example.com');
    for (const contactId of ['missing', foreign]) {
      const res = await postEvent(ws, { contact_id: contactId, event_name: 'x' });
      expect(res.statusCode).toBe(404);
    }
    expect(await h().services.db.knex('events').where({ workspace_id: ws.id })).toHaveLength(0);
    expect(await outboxOf(ws)).toHaveLength(0);
  });

  it('aliases become the canonical name wherever an event enters; other names are kept as sent', async () => {
    const ws = await h().workspace();
    const contactId = await newContact(ws, 'alias@example.com');
    const cases: Array<[string, string]> = [
      ['product_viewed', 'viewed_product'],
      ['category_viewed', 'collection_viewed'],
      ['searched', 'search_submitted'],
      ['search', 'search_submitted'],
      ['product_added_to_cart', 'added_to_cart'],
      ['product_removed_from_cart', 'removed_from_cart'],
      ['checkout_started', 'started_checkout'],
      ...STANDARD_EVENT_NAMES.map((n) => [n, n] as [string, string]),
      ['Viewed Product', 'Viewed Product'],
      ['PRODUCT_VIEWED', 'PRODUCT_VIEWED'],
    ];
    for (const [sent, stored] of cases) {
      expect((await postEvent(ws, { contact_id: contactId, event_name: sent })).json().event_name).toBe(stored);
      const collected = await h().request({
        method: 'POST',
        url: '/collect/event',
        json: { site_id: ws.siteId, contact_id: contactId, event_name: sent },
      });
      expect(collected.statusCode).toBe(200);
    }
    const rows = await h().services.db.knex('events').where({ workspace_id: ws.id }).select('event_name');
    const expected = cases.flatMap(([, stored]) => [stored, stored]).sort();
    expect(rows.map((r) => r.event_name).sort()).toEqual(expected);
    // The listing filter takes aliases too.
    const filtered = (await h().request({ method: 'GET', url: '/api/v1/events?event_name=product_viewed', key: ws.apiKey })).json();
    expect(filtered.meta.total).toBe(4);
  });

  it('GET /api/v1/events lists every event newest first, with contact_id / event_name filters and paging', async () => {
    const ws = await h().workspace();
    const a = await newContact(ws, 'list-a@example.com');
    const b = await newContact(ws, 'list-b@example.com');
    const ids: string[] = [];
    for (const [contact, name] of [[a, 'one'], [b, 'two'], [a, 'viewed_product'], [a, 'three']] as const) {
      ids.push((await postEvent(ws, { contact_id: contact, event_name: name })).json().id);
      await new Promise((r) => setTimeout(r, 3));
    }
    await h().request({ method: 'POST', url: '/collect/event', json: { site_id: ws.siteId, anonymous_id: 'v', event_name: 'anon' } });
    const all = (await h().request({ method: 'GET', url: '/api/v1/events', key: ws.apiKey })).json();
    expect(all.meta).toEqual({ page: 1, perPage: 50, total: 5 });
    expect(all.data.slice(1).map((e: { id: string }) => e.id)).toEqual([...ids].reverse());
    expect(all.data[0]).toMatchObject({ event_name: 'anon', contact_id: null });

    const ofA = (await h().request({ method: 'GET', url: `/api/v1/events?contact_id=${a}`, key: ws.apiKey })).json();
    expect(ofA.data.map((e: { event_name: string }) => e.event_name)).toEqual(['three', 'viewed_product', 'one']);
    const named = (await h().request({ method: 'GET', url: '/api/v1/events?event_name=two', key: ws.apiKey })).json();
    expect(named.data.map((e: { contact_id: string }) => e.contact_id)).toEqual([b]);
    const page = (await h().request({ method: 'GET', url: '/api/v1/events?page=2&perPage=2', key: ws.apiKey })).json();
    expect(page.meta).toEqual({ page: 2, perPage: 2, total: 5 });
    expect(page.data.map((e: { id: string }) => e.id)).toEqual([ids[2], ids[1]]);
  });

  it("a workspace's key never lists another workspace's events", async () => {
    const ws = await h().workspace();
    const other = await h().workspace();
    const theirs = await newContact(other, 'theirs@example.com');
    await postEvent(other, { contact_id: theirs, event_name: 'private' });
    const mine = (await h().request({ method: 'GET', url: '/api/v1/events', key: ws.apiKey })).json();
    expect(mine.data).toEqual([]);
    const byId = (await h().request({ method: 'GET', url: `/api/v1/events?contact_id=${theirs}`, key: ws.apiKey })).json();
    expect(byId.meta.total).toBe(0);
  });

  it('each stored event records the flow trigger it fires in the outbox', async () => {
    const ws = await h().workspace();
    const contactId = await newContact(ws, 'trigger@example.com');
    const custom = (await postEvent(ws, { contact_id: contactId, event_name: 'Loyalty Joined', source: 'crm' })).json();
    const alias = (await postEvent(ws, { contact_id: contactId, event_name: 'product_viewed' })).json();
    const shipping = (
      await postEvent(ws, { contact_id: contactId, event_name: 'shipping_information', source: 'aftership', properties: { order_number: '1' } })
    ).json();
    await h().request({ method: 'POST', url: '/collect/event', json: { site_id: ws.siteId, email: 'trigger@example.com', event_name: 'form_submitted' } });

    const outbox = await outboxOf(ws);
    expect(outbox.map((row) => [row.trigger_type, row.event_name, row.contact_id, row.subject_type, row.source])).toEqual([
      ['event', 'Loyalty Joined', contactId, 'event', 'crm'],
      ['event', 'viewed_product', contactId, 'event', null],
      ['shipping_information', 'shipping_information', contactId, 'event', 'aftership'],
      ['event', 'form_submitted', contactId, 'event', null],
    ]);
    expect(outbox.slice(0, 3).map((row) => row.subject_id)).toEqual([custom.id, alias.id, shipping.id]);
    expect(outbox.every((row) => row.processed_at === null)).toBe(true);
  });

  it('an anonymous event fires no trigger (nobody to enrol), before or after its visitor is identified', async () => {
    const ws = await h().workspace();
    await h().request({ method: 'POST', url: '/collect/event', json: { site_id: ws.siteId, anonymous_id: 'anon-t', event_name: 'viewed_product' } });
    await h().request({ method: 'POST', url: '/collect/identify', json: { site_id: ws.siteId, email: 'anon-t@example.com', anonymous_id: 'anon-t' } });
    expect(await outboxOf(ws)).toHaveLength(0);
  });

  it('an event and its trigger are written in one transaction: a failed write leaves neither', async () => {
    const ws = await h().workspace();
    const contactId = await newContact(ws, 'atomic@example.com');
    const { knex } = h().services.db;
    // A trigger row that cannot be stored (a NOT NULL column left empty) must take its event down with it.
    await expect(
      knex.transaction(async (trx) => {
        const [result] = await h().services.events.recordEvents(trx, [
          {
            workspaceId: ws.id,
            owner: { contactId },
            eventName: 'atomic',
            properties: {},
            source: null,
            occurredAt: Date.now(),
            fireTrigger: true,
            contactSource: 'test',
          },
        ]);
        expect(result).toHaveProperty('record');
        await trx('trigger_outbox').insert({ workspace_id: ws.id, trigger_type: null });
      }),
    ).rejects.toThrow();
    expect(await knex('events').where({ workspace_id: ws.id })).toHaveLength(0);
    expect(await outboxOf(ws)).toHaveLength(0);
  });

  it('concurrent events are all stored, each with its trigger', async () => {
    const ws = await h().workspace();
    const contactId = await newContact(ws, 'burst@example.com');
    const replies = await Promise.all(
      Array.from({ length: 200 }, (_, i) => postEvent(ws, { contact_id: contactId, event_name: `burst_${i % 7}`, properties: { i } })),
    );
    expect(replies.every((r) => r.statusCode === 201)).toBe(true);
    expect(new Set(replies.map((r) => r.json().id)).size).toBe(200);
    expect(await h().services.db.knex('events').where({ workspace_id: ws.id })).toHaveLength(200);
    const outbox = await outboxOf(ws);
    expect(new Set(outbox.map((row) => row.subject_id))).toEqual(new Set(replies.map((r) => r.json().id)));
  });
});
