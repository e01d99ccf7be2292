import { expect, it } from 'vitest';
import type { Attribution, OrderToAttribute } from '../src/domain/attribution/attribution-service.js';
import { NotFoundError, ValidationError } from '../src/domain/errors.js';
import { uuidv7 } from '../src/domain/shared/ids.js';
import { runEmk } from './helpers/cli.js';
import { describeEachDatabase, type TestWorkspace } from './helpers/harness.js';

const DAY = 86_400_000;
const HOUR = 3_600_000;
/** When the orders of these tests are placed. */
const T = Date.UTC(2026, 5, 15, 12);
const CAMPAIGN_A = uuidv7();
const CAMPAIGN_B = uuidv7();
const FLOW = uuidv7();

describeEachDatabase('attribution', (h) => {
  const knex = () => h().services.db.knex;
  const attribution = () => h().services.attribution;
  let contactCount = 0;
  const contact = async (ws: TestWorkspace) =>
    (await h().services.contacts.upsert(ws.id, { email: `buyer${++contactCount}@example.com` })).contact.id;

  type Target = { campaignId: string } | { flowId: string };
  const engage = (
    ws: TestWorkspace,
    contactId: string,
    kind: 'click' | 'open',
    occurredAt: number,
    target: Target = { campaignId: CAMPAIGN_A },
    messageId?: string,
  ) =>
    attribution().recordEngagement({ workspaceId: ws.id, contactId, kind, occurredAt, ...target, ...(messageId ? { messageId } : {}) });

  const attribute = (ws: TestWorkspace, orders: OrderToAttribute[]) =>
    knex().transaction((trx) => attribution().attributeOrders(trx, ws.id, orders));
  /** The attribution of one order of `contactId` placed at `orderedAt`. */
  const creditOf = async (ws: TestWorkspace, contactId: string, orderedAt = T) =>
    (await attribute(ws, [{ id: 'order-1', contactId, orderedAt }])).get('order-1');

  const click = (campaignId: string, messageId: string | null = null): Attribution => ({
    campaign_id: campaignId,
    flow_id: null,
    message_id: messageId,
    variant: null,
    kind: 'click',
  });
  const open = (campaignId: string, messageId: string | null = null): Attribution => ({ ...click(campaignId, messageId), kind: 'open' });

  let orderCount = 0;
  /** An order row as the orders owner stores it (columns of migrations/202611211102_create_orders.ts). */
  const orderRow = (ws: TestWorkspace, contactId: string, orderedAt: number, origin: 'webhook' | 'sync' | 'api' = 'webhook') => {
    const id = uuidv7();
    const n = ++orderCount;
    return {
      id,
      workspace_id: ws.id,
      contact_id: contactId,
      platform: 'website',
      integration_id: origin === 'webhook' ? ws.integrationId : null,
      origin,
      upsert_key: origin === 'api' ? null : `ext-${n}`,
      external_id: `ext-${n}`,
      order_number: String(n),
      order_number_key: String(n),
      total_amount: 25,
      currency: 'USD',
      status: 'paid',
      ordered_at: orderedAt,
      created_at: Date.now(),
      updated_at: Date.now(),
    };
  };
  const insertOrder = async (...args: Parameters<typeof orderRow>) => {
    const row = orderRow(...args);
    await knex()('orders').insert(row);
    return row.id;
  };
  const storedCredit = async (orderId: string): Promise<Attribution | null> => {
    const row = await knex()('orders').where({ id: orderId }).first();
    return row.attribution_kind === null
      ? (expect([row.attributed_campaign_id, row.attributed_flow_id, row.attributed_message_id]).toEqual([null, null, null]), null)
      : {
          campaign_id: row.attributed_campaign_id,
          flow_id: row.attributed_flow_id,
          message_id: row.attributed_message_id,
          variant: row.attributed_variant,
          kind: row.attribution_kind,
        };
  };
  const recompute = (ws: TestWorkspace, options = {}) => attribution().recompute(ws.id, options);

  it('a click inside the click window wins over a later open', async () => {
    const ws = await h().workspace();
    const buyer = await contact(ws);
    const message = uuidv7();
    await engage(ws, buyer, 'click', T - 2 * DAY, { campaignId: CAMPAIGN_A }, message);
    await engage(ws, buyer, 'open', T - HOUR, { campaignId: CAMPAIGN_B });
    expect(await creditOf(ws, buyer)).toEqual(click(CAMPAIGN_A, message));
  });

  it('the latest click wins, campaign or flow alike', async () => {
    const ws = await h().workspace();
    const buyer = await contact(ws);
    await engage(ws, buyer, 'click', T - 3 * DAY, { campaignId: CAMPAIGN_A });
    await engage(ws, buyer, 'click', T - DAY, { flowId: FLOW });
    await engage(ws, buyer, 'click', T - 2 * DAY, { campaignId: CAMPAIGN_B });
    expect(await creditOf(ws, buyer)).toEqual({ campaign_id: null, flow_id: FLOW, message_id: null, variant: null, kind: 'click' });
  });

  it('an open counts only when no click is inside the click window; then the latest open wins', async () => {
    const ws = await h().workspace();
    const buyer = await contact(ws);
    await engage(ws, buyer, 'click', T - 6 * DAY, { campaignId: CAMPAIGN_A }); // outside 5 days
    await engage(ws, buyer, 'open', T - 2 * DAY, { campaignId: CAMPAIGN_A });
    await engage(ws, buyer, 'open', T - DAY, { flowId: FLOW });
    expect(await creditOf(ws, buyer)).toEqual({ campaign_id: null, flow_id: FLOW, message_id: null, variant: null, kind: 'open' });

    const other = await contact(ws);
    await engage(ws, other, 'open', T - 4 * DAY, { campaignId: CAMPAIGN_A }); // outside 3 days
    await engage(ws, other, 'click', T - 5 * DAY - 1, { campaignId: CAMPAIGN_A });
    expect(await creditOf(ws, other)).toBeNull();
  });

  it('window edges: exactly at the boundary counts, one millisecond outside does not', async () => {
    const ws = await h().workspace();
    const cases: Array<[kind: 'click' | 'open', at: number, expected: Attribution | null]> = [
      ['click', T - 5 * DAY, click(CAMPAIGN_A)],
      ['click', T - 5 * DAY - 1, null],
      ['open', T - 3 * DAY, open(CAMPAIGN_A)],
      ['open', T - 3 * DAY - 1, null],
      ['click', T, click(CAMPAIGN_A)],
      ['open', T, open(CAMPAIGN_A)],
    ];
    for (const [kind, at, expected] of cases) {
      const buyer = await contact(ws); // one contact per case, so cases cannot credit each other
      await engage(ws, buyer, kind, at, { campaignId: CAMPAIGN_A });
      expect(await creditOf(ws, buyer), `${kind} at T${at - T}ms`).toEqual(expected);
    }
  });

  it('engagement after ordered_at never counts', async () => {
    const ws = await h().workspace();
    const buyer = await contact(ws);
    await engage(ws, buyer, 'click', T + 1, { campaignId: CAMPAIGN_A });
    await engage(ws, buyer, 'open', T + HOUR, { campaignId: CAMPAIGN_A });
    expect(await creditOf(ws, buyer)).toBeNull();
    // A later click does not beat an earlier open either.
    await engage(ws, buyer, 'open', T - HOUR, { campaignId: CAMPAIGN_B });
    expect(await creditOf(ws, buyer)).toEqual(open(CAMPAIGN_B));
  });

  it("a contact's engagement never credits another contact's order", async () => {
    const ws = await h().workspace();
    const clicker = await contact(ws);
    const buyer = await contact(ws);
    await engage(ws, clicker, 'click', T - HOUR, { campaignId: CAMPAIGN_A });
    const result = await attribute(ws, [
      { id: 'buyer-order', contactId: buyer, orderedAt: T },
      { id: 'clicker-order', contactId: clicker, orderedAt: T },
    ]);
    expect(result.get('buyer-order')).toBeNull();
    expect(result.get('clicker-order')).toEqual(click(CAMPAIGN_A));
  });

  it('the windows are per workspace, from its settings: a PATCH changes the result', async () => {
    const ws = await h().workspace('long windows');
    const other = await h().workspace('defaults');
    const buyer = await contact(ws);
    const otherBuyer = await contact(other);
    for (const [w, c] of [
      [ws, buyer],
      [other, otherBuyer],
    ] as const) {
      await engage(w, c, 'click', T - 7 * DAY, { campaignId: CAMPAIGN_A });
      await engage(w, c, 'open', T - 2 * DAY, { campaignId: CAMPAIGN_B });
    }
    expect(await creditOf(ws, buyer)).toEqual(open(CAMPAIGN_B));

    const res = await h().request({ method: 'PATCH', url: '/api/v1/settings', key: ws.apiKey, json: { click_window_days: 7 } });
    expect(res.statusCode).toBe(200);
    expect(await creditOf(ws, buyer)).toEqual(click(CAMPAIGN_A));
    expect(await creditOf(other, otherBuyer)).toEqual(open(CAMPAIGN_B));

    await h().services.settings.update(ws.id, { click_window_days: 0, open_window_days: 1 });
    expect(await creditOf(ws, buyer)).toBeNull();
  });

  it('many orders at once: one statement for all of them (plus the settings read), each order right', async () => {
    const ws = await h().workspace();
    const buyers = await Promise.all(Array.from({ length: 30 }, () => contact(ws)));
    for (const [i, buyer] of buyers.entries()) {
      if (i % 3 === 0) await engage(ws, buyer, 'click', T - i * HOUR, { campaignId: CAMPAIGN_A });
      if (i % 3 !== 2) await engage(ws, buyer, 'open', T - HOUR, { campaignId: CAMPAIGN_B });
    }
    // 1,500 orders: more than one internal chunk; each buyer orders 50 times at spread-out times.
    const orders = Array.from({ length: 1500 }, (_, n) => ({
      id: `o${n}`,
      contactId: buyers[n % buyers.length]!,
      orderedAt: T + Math.floor(n / buyers.length) * HOUR * 24 * (n % 2 ? 1 : -1),
    }));
    const queries: string[] = [];
    const onQuery = (q: { sql: string }) => queries.push(q.sql);
    knex().on('query', onQuery);
    const small = await attribute(ws, orders.slice(0, 200));
    knex().off('query', onQuery);
    expect(queries.filter((sql) => /engagements/.test(sql))).toHaveLength(1);
    expect(queries.length).toBeLessThanOrEqual(4); // settings, the statement, begin/commit where logged

    const result = await attribute(ws, orders);
    expect(result.size).toBe(1500);
    for (const [n, o] of orders.entries()) {
      const i = n % buyers.length;
      const clickAt = T - i * HOUR;
      const expected =
        i % 3 === 0 && clickAt <= o.orderedAt && clickAt >= o.orderedAt - 5 * DAY
          ? click(CAMPAIGN_A)
          : i % 3 !== 2 && T - HOUR <= o.orderedAt && T - HOUR >= o.orderedAt - 3 * DAY
            ? open(CAMPAIGN_B)
            : null;
      expect(result.get(o.id), `order ${n}`).toEqual(expected);
      if (n < 200) expect(small.get(o.id)).toEqual(expected);
    }
    expect([...result.values()].filter(Boolean).length).toBeGreaterThan(30);
  });

  it('a webhook order of a contact its own write creates runs no attribution query and no contact lock; a known contact’s order is credited', async () => {
    const ws = await h().workspace();
    const placed = (email: string, id: string) =>
      h().request({
        method: 'POST',
        url: `/ecom/website/${ws.integrationId}`,
        headers: { authorization: `Bearer ${ws.integrationKey}`, 'content-type': 'application/json' },
        payload: JSON.stringify({
          event_type: 'order_placed',
          external_id: `d-${id}`,
          email,
          order: { external_id: id, order_number: id, total_amount: 10, currency: 'EUR', status: 'paid', items: [] },
        }),
      });
    /** Reads of engagements, and contact locks (PostgreSQL: SQLite's one writer needs none), while `send` runs. */
    const queriesOf = async (send: () => Promise<{ statusCode: number }>) => {
      const queries: string[] = [];
      const onQuery = (q: { sql: string }) => queries.push(q.sql);
      knex().on('query', onQuery);
      try {
        expect((await send()).statusCode).toBe(200);
      } finally {
        knex().off('query', onQuery);
      }
      const count = (pattern: RegExp) => queries.filter((sql) => pattern.test(sql)).length;
      return [count(/engagements/), count(/from "contacts".*for update/i)];
    };
    // Row locks are PostgreSQL's; SQLite's one writer needs none.
    const locks = h().services.db.dialect.name === 'postgres' ? 1 : 0;
    const credit = async (id: string) => (await knex()('orders').where({ workspace_id: ws.id, external_id: id }).first('attributed_campaign_id')).attributed_campaign_id;

    expect(await queriesOf(() => placed('first-time@example.com', 'new-1'))).toEqual([0, 0]);
    expect(await credit('new-1')).toBeNull();
    const buyer = await contact(ws);
    await engage(ws, buyer, 'click', Date.now() - HOUR);
    expect(await queriesOf(() => placed(`buyer${contactCount}@example.com`, 'known-1'))).toEqual([1, locks]);
    expect(await credit('known-1')).toBe(CAMPAIGN_A);
  });

  it('no orders: an empty map and no query', async () => {
    const ws = await h().workspace();
    expect((await attribute(ws, [])).size).toBe(0);
  });

  it('recordEngagement refuses bad input and contacts of other workspaces', async () => {
    const ws = await h().workspace();
    const other = await h().workspace('other');
    const buyer = await contact(ws);
    const base = { workspaceId: ws.id, contactId: buyer, kind: 'click' as const, occurredAt: T };
    await expect(attribution().recordEngagement({ ...base, campaignId: CAMPAIGN_A, flowId: FLOW })).rejects.toBeInstanceOf(ValidationError);
    await expect(attribution().recordEngagement(base)).rejects.toBeInstanceOf(ValidationError);
    await expect(
      attribution().recordEngagement({ ...base, kind: 'view' as 'click', campaignId: CAMPAIGN_A }),
    ).rejects.toBeInstanceOf(ValidationError);
    await expect(attribution().recordEngagement({ ...base, occurredAt: Number.NaN, campaignId: CAMPAIGN_A })).rejects.toBeInstanceOf(
      ValidationError,
    );
    await expect(
      attribution().recordEngagement({ ...base, workspaceId: other.id, campaignId: CAMPAIGN_A }),
    ).rejects.toBeInstanceOf(NotFoundError);
    expect(await knex()('engagements').where({ contact_id: buyer })).toHaveLength(0);
    const id = await attribution().recordEngagement({ ...base, campaignId: CAMPAIGN_A, messageId: 'm1' });
    const row = await knex()('engagements').where({ id }).first();
    expect(row).toMatchObject({ workspace_id: ws.id, contact_id: buyer, kind: 'click', campaign_id: CAMPAIGN_A, flow_id: null, message_id: 'm1' });
    expect(Number(row.occurred_at)).toBe(T);
  });

  it('concurrent engagements are written together and each gets its own row', async () => {
    const ws = await h().workspace();
    const buyer = await contact(ws);
    const ids = await Promise.all(Array.from({ length: 40 }, (_, i) => engage(ws, buyer, i % 2 ? 'click' : 'open', T - i)));
    expect(new Set(ids).size).toBe(40);
    expect(await knex()('engagements').where({ contact_id: buyer })).toHaveLength(40);
  });

  it('recompute re-attributes webhook and sync orders, changes only what differs and counts it', async () => {
    const ws = await h().workspace();
    const buyer = await contact(ws);
    const bystander = await contact(ws);
    const webhookOrder = await insertOrder(ws, buyer, T, 'webhook');
    const syncOrder = await insertOrder(ws, buyer, T - 10 * DAY, 'sync');
    const apiOrder = await insertOrder(ws, buyer, T, 'api');
    const quietOrder = await insertOrder(ws, bystander, T, 'webhook');
    // The engagement arrived after the orders were stored (the webhook does not re-attribute by itself).
    const message = uuidv7();
    await engage(ws, buyer, 'click', T - DAY, { campaignId: CAMPAIGN_A }, message);
    await engage(ws, buyer, 'open', T - 10 * DAY - HOUR, { flowId: FLOW });

    expect(await recompute(ws)).toEqual({ examined: 3, changed: 2 });
    expect(await storedCredit(webhookOrder)).toEqual(click(CAMPAIGN_A, message));
    expect(await storedCredit(syncOrder)).toEqual({ campaign_id: null, flow_id: FLOW, message_id: null, variant: null, kind: 'open' });
    expect(await storedCredit(apiOrder)).toBeNull();
    expect(await storedCredit(quietOrder)).toBeNull();

    // Nothing differs now.
    expect(await recompute(ws)).toEqual({ examined: 3, changed: 0 });

    // A stale attribution is corrected; one that no longer qualifies is cleared.
    await knex()('orders').where({ id: webhookOrder }).update({ attributed_campaign_id: CAMPAIGN_B, attribution_kind: 'open' });
    await h().services.settings.update(ws.id, { open_window_days: 0 });
    expect(await recompute(ws)).toEqual({ examined: 3, changed: 2 });
    expect(await storedCredit(webhookOrder)).toEqual(click(CAMPAIGN_A, message));
    expect(await storedCredit(syncOrder)).toBeNull();
  });

  it('direct-create orders (origin api) are never attributed, not even by recompute of that order', async () => {
    const ws = await h().workspace();
    const buyer = await contact(ws);
    const apiOrder = await insertOrder(ws, buyer, T, 'api');
    await engage(ws, buyer, 'click', T - HOUR, { campaignId: CAMPAIGN_A });
    expect(await recompute(ws)).toEqual({ examined: 0, changed: 0 });
    expect(await recompute(ws, { orderId: apiOrder })).toEqual({ examined: 0, changed: 0 });
    expect(await storedCredit(apiOrder)).toBeNull();
  });

  it('recompute --since and --order narrow the orders; an unknown order is NotFound', async () => {
    const ws = await h().workspace();
    const other = await h().workspace('other');
    const buyer = await contact(ws);
    const old = await insertOrder(ws, buyer, T - 30 * DAY);
    const recent = await insertOrder(ws, buyer, T);
    const otherRecent = await insertOrder(ws, buyer, T + HOUR);
    await engage(ws, buyer, 'click', T - 30 * DAY - HOUR, { campaignId: CAMPAIGN_A });
    await engage(ws, buyer, 'click', T - HOUR, { campaignId: CAMPAIGN_B });

    expect(await recompute(ws, { orderId: recent })).toEqual({ examined: 1, changed: 1 });
    expect(await storedCredit(recent)).toEqual(click(CAMPAIGN_B));
    expect(await storedCredit(otherRecent)).toBeNull();
    expect(await storedCredit(old)).toBeNull();

    expect(await recompute(ws, { since: T - DAY })).toEqual({ examined: 2, changed: 1 });
    expect(await storedCredit(otherRecent)).toEqual(click(CAMPAIGN_B));
    expect(await storedCredit(old)).toBeNull();
    // `since` is inclusive.
    expect(await recompute(ws, { since: T - 30 * DAY })).toEqual({ examined: 3, changed: 1 });
    expect(await storedCredit(old)).toEqual(click(CAMPAIGN_A));

    await expect(recompute(ws, { orderId: 'nope' })).rejects.toBeInstanceOf(NotFoundError);
    // Another workspace's recompute does not see these orders.
    await expect(recompute(other, { orderId: recent })).rejects.toBeInstanceOf(NotFoundError);
    expect(await recompute(other)).toEqual({ examined: 0, changed: 0 });
  });

  it('recompute walks many orders in chunks and writes each its own attribution', async () => {
    const ws = await h().workspace();
    const buyers = await Promise.all(Array.from({ length: 5 }, () => contact(ws)));
    const messages = buyers.map(() => uuidv7());
    for (const [i, buyer] of buyers.entries()) {
      if (i < 4) await engage(ws, buyer, i % 2 ? 'open' : 'click', T - HOUR, { campaignId: CAMPAIGN_A }, messages[i]);
    }
    // Chunks end inside runs of equal ordered_at: the walk must neither skip nor repeat an order.
    const rows = Array.from({ length: 2300 }, (_, n) => orderRow(ws, buyers[n % 5]!, T - (n % 7) * 60_000, n % 2 ? 'sync' : 'webhook'));
    await knex().batchInsert('orders', rows, 200);
    expect(await recompute(ws)).toEqual({ examined: 2300, changed: 4 * 460 });
    const stored = await knex()('orders').where({ workspace_id: ws.id }).select('contact_id', 'attributed_message_id', 'attribution_kind');
    for (const row of stored) {
      const i = buyers.indexOf(row.contact_id);
      expect(row.attributed_message_id).toBe(i < 4 ? messages[i] : null);
      expect(row.attribution_kind).toBe(i < 4 ? (i % 2 ? 'open' : 'click') : null);
    }
    expect(await recompute(ws)).toEqual({ examined: 2300, changed: 0 });
  });

  it('emk attribution recompute --json prints {"examined","changed"}; the human form says how many changed', async () => {
    const ws = await h().workspace();
    const buyer = await contact(ws);
    const orderId = await insertOrder(ws, buyer, T);
    await insertOrder(ws, buyer, T - 60 * DAY);
    await engage(ws, buyer, 'click', T - HOUR, { campaignId: CAMPAIGN_A });
    const args = ['attribution', 'recompute', '--db', h().database.url, '--workspace', ws.id];

    const json = await runEmk([...args, '--json']);
    expect(json.code, json.stderr).toBe(0);
    expect(JSON.parse(json.stdout)).toEqual({ examined: 2, changed: 1 });
    expect(json.stdout.trim().split('\n')).toHaveLength(1);
    expect(await storedCredit(orderId)).toEqual(click(CAMPAIGN_A));

    const human = await runEmk([...args, '--since', '2026-06-01']);
    expect(human.code, human.stderr).toBe(0);
    expect(human.stdout.trim()).toBe('0 orders changed (1 examined)');

    await knex()('orders').where({ id: orderId }).update({ attributed_campaign_id: null, attribution_kind: null });
    const one = await runEmk([...args, '--order', orderId, '--since', '2026-06-15T00:00:00Z']);
    expect(one.stdout.trim()).toBe('1 order changed (1 examined)');

    const badDate = await runEmk([...args, '--since', 'last week', '--json']);
    expect(badDate.code).toBe(2);
    expect(badDate.stdout).toBe('');
    expect(badDate.stderr).toMatch(/--since/);
    const unknown = await runEmk([...args, '--order', 'nope', '--json']);
    expect(unknown.code).toBe(1);
    expect(unknown.stderr).toMatch(/order nope not found/);
    expect((await runEmk([...args, '--frobnicate'])).code).toBe(2);
  });
});
