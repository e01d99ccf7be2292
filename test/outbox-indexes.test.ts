import { expect, it } from 'vitest';
import { explainPlan, insertContacts } from './helpers/plans.js';
import { describeEachDatabase } from './helpers/harness.js';

const CONTACTS = 200;
const EVENTS_EACH = 40;
const NAMES = ['viewed_product', 'added_to_cart', 'started_checkout', 'placed_order', 'shipping_information'];

type FactRow = { workspace_id: string; trigger_type: string; event_name: string | null; contact_id: string; subject_type: string; subject_id: string };

/**
 * The outbox's contact index holds only the facts read by contact (cart activity, orders and the rarer facts);
 * event facts and contact changes, most of what ingest writes, are found by their subject. Every query by
 * contact must seek one of the two indexes, and the erasure must still find every fact of the contact.
 */
describeEachDatabase("a contact's trigger facts", (h) => {
  const pad = (n: number) => String(n).padStart(4, '0');

  async function seed() {
    const ws = await h().workspace();
    const { knex } = h().services.db;
    const contactIds = await insertContacts(knex, ws.id, CONTACTS);
    const events = contactIds.flatMap((contactId, c) =>
      Array.from({ length: EVENTS_EACH }, (_, e) => ({
        id: `e-${pad(c)}-${pad(e)}`,
        workspace_id: ws.id,
        contact_id: contactId,
        event_name: NAMES[e % NAMES.length]!,
        properties: '{}',
        created_at: 1_700_000_000_000 + e * 1000 + c,
        received_at: 1_700_000_000_000 + e * 1000 + c,
      })),
    );
    await knex.batchInsert('events', events, 500);
    // The facts each kind of write records: an event's (a shipment's names its event too), a contact change,
    // a cart, an order, a segment entry.
    const facts: FactRow[] = events.map((event, i) => {
      const shipping = event.event_name === 'shipping_information';
      return {
        workspace_id: ws.id,
        trigger_type: shipping ? 'shipping_information' : 'event',
        event_name: event.event_name,
        contact_id: event.contact_id,
        subject_type: shipping && i % 2 === 0 ? 'shipment' : 'event',
        subject_id: event.id,
      };
    });
    for (const contactId of contactIds) {
      facts.push(
        { workspace_id: ws.id, trigger_type: 'contact_changed', event_name: null, contact_id: contactId, subject_type: 'contact', subject_id: contactId },
        { workspace_id: ws.id, trigger_type: 'cart', event_name: null, contact_id: contactId, subject_type: 'cart', subject_id: `cart-${contactId}` },
        { workspace_id: ws.id, trigger_type: 'order_placed', event_name: null, contact_id: contactId, subject_type: 'order', subject_id: `order-${contactId}` },
        { workspace_id: ws.id, trigger_type: 'segment_entered', event_name: null, contact_id: contactId, subject_type: 'segment', subject_id: 'segment-1' },
      );
    }
    await knex.batchInsert(
      'trigger_outbox',
      facts.map((fact) => ({ ...fact, payload: '{}', created_at: 1, processed_at: 2 })),
      500,
    );
    await knex.raw(h().dialect === 'sqlite' ? 'ANALYZE' : 'ANALYZE trigger_outbox, events, contacts');
    return { ws, facts };
  }

  const factsOf = async (contactId: string) =>
    (await h().services.db.knex('trigger_outbox').where({ contact_id: contactId }).select('trigger_type', 'subject_type')) as Array<{
      trigger_type: string;
      subject_type: string;
    }>;

  it('cart checks and the erasure seek an index; the erasure deletes every fact of the contact and no other', async () => {
    const { ws, facts } = await seed();
    const { knex } = h().services.db;
    const { outbox } = h().services;
    const kinds = (rows: Array<{ trigger_type: string; subject_type: string }>) => [...new Set(rows.map((r) => `${r.trigger_type}/${r.subject_type}`))].sort();
    const everyKind = kinds(facts);
    expect(everyKind).toEqual([
      'cart/cart',
      'contact_changed/contact',
      'event/event',
      'order_placed/order',
      'segment_entered/segment',
      'shipping_information/event',
      'shipping_information/shipment',
    ]);
    expect(kinds(await factsOf('c-0009'))).toEqual(everyKind);

    const cartActivity = { triggerTypes: ['cart' as const], eventNames: ['added_to_cart', 'started_checkout'] };
    const firstFact = Number((await knex('trigger_outbox').where({ contact_id: 'c-0007' }).min({ id: 'id' }).first())!.id);
    const newestCart = await knex('trigger_outbox')
      .where({ contact_id: 'c-0007' })
      .where((q) => q.where({ trigger_type: 'cart' }).orWhereIn('event_name', cartActivity.eventNames))
      .max({ id: 'id' })
      .first();
    const sent: Array<{ sql: string; bindings: unknown[] }> = [];
    const capture = (query: { sql: string; bindings?: unknown[] }) => {
      if (/trigger_outbox/.test(query.sql) && /contact_id/.test(query.sql)) sent.push({ sql: query.sql, bindings: query.bindings ?? [] });
    };
    knex.on('query', capture);
    try {
      expect(await outbox.latestFactId(knex, 'c-0007', { after: firstFact }, cartActivity)).toBe(Number(newestCart!.id));
      const orders = await outbox.latestFactIds(knex, ['c-0007', 'c-0008'], ['order_placed']);
      expect([...orders.keys()].sort()).toEqual(['c-0007', 'c-0008']);
      await h().services.dataRights.erase(ws.id, 'c-0009');
    } finally {
      knex.off('query', capture);
    }
    // The two reads, and the erasure's three deletes.
    expect(sent.filter(({ sql }) => /^\s*delete\b/i.test(sql))).toHaveLength(3);
    expect(sent.length).toBeGreaterThanOrEqual(5);

    expect(await factsOf('c-0009')).toEqual([]);
    expect(kinds(await factsOf('c-0010'))).toEqual(everyKind);
    expect(Number((await knex('trigger_outbox').count({ n: '*' }))[0]!.n)).toBe(facts.length - facts.filter((f) => f.contact_id === 'c-0009').length);

    for (const { sql, bindings } of sent) {
      const plan = await explainPlan(knex, h().dialect, sql, bindings);
      expect(plan, `${sql}\n${plan}`).toMatch(/trigger_outbox_contact_history_index|trigger_outbox_subject_index/);
      expect(plan, `${sql}\n${plan}`).not.toMatch(/Seq Scan on trigger_outbox|SCAN trigger_outbox(?! USING)/);
    }
  });

  it('refuses to read by contact the facts its index leaves out', async () => {
    const { knex } = h().services.db;
    const { outbox } = h().services;
    await expect(outbox.latestFactId(knex, 'c-0001', { after: 0 }, { triggerTypes: ['event'] })).rejects.toThrow(/not indexed by contact/);
    await expect(outbox.latestFactId(knex, 'c-0001', { after: 0 }, { triggerTypes: ['cart'], eventNames: ['viewed_product'] })).rejects.toThrow(
      /not indexed by contact/,
    );
    await expect(outbox.latestFactIds(knex, ['c-0001'], ['contact_changed'])).rejects.toThrow(/not indexed by contact/);
  });
});
