import { expect, it } from 'vitest';
import { ActivityDelta } from '../src/domain/recommendations/activity-delta.js';
import { createProductActivity } from '../src/domain/recommendations/product-activity.js';
import { describeEachDatabase, type TestWorkspace } from './helpers/harness.js';

const DAY = 86_400_000;
const daysAgo = (days: number) => new Date(Date.now() - days * DAY).toISOString();

/**
 * The shop every test starts from (website products, one manual one):
 *  tee    Tee      10  [Tops]
 *  shirt  Shirt    25  [Tops]
 *  jeans  Jeans    60  [Bottoms]
 *  shorts Shorts   30  [Bottoms]
 *  cap    Cap      15  [Hats]
 *  manual Manual    5  [Tops]   (manual import: never ranked)
 */
const CATALOG = [
  { external_id: 'tee', title: 'Tee', price: 10, categories: ['Tops'] },
  { external_id: 'shirt', title: 'Shirt', price: 25, categories: ['Tops'] },
  { external_id: 'jeans', title: 'Jeans', price: 60, categories: ['Bottoms'] },
  { external_id: 'shorts', title: 'Shorts', price: 30, categories: ['Bottoms'] },
  { external_id: 'cap', title: 'Cap', price: 15, categories: ['Hats'] },
];

describeEachDatabase('recommendations', (h, dialect) => {
  const hook = (ws: TestWorkspace, body: unknown) =>
    h().request({
      method: 'POST',
      url: `/ecom/website/${ws.integrationId}`,
      headers: { authorization: `Bearer ${ws.integrationKey}`, 'content-type': 'application/json' },
      payload: JSON.stringify(body),
    });

  let deliveries = 0;
  const order = async (ws: TestWorkspace, email: string, items: unknown[], extra: Record<string, unknown> = {}) => {
    const id = `o-${++deliveries}`;
    const res = await hook(ws, {
      event_type: 'order_placed',
      external_id: `d-${id}`,
      email,
      order: { external_id: id, order_number: id, total_amount: 10, currency: 'EUR', status: 'paid', ordered_at: daysAgo(1), items, ...extra },
    });
    expect(res.statusCode, res.body).toBe(200);
    return id;
  };

  const contact = async (ws: TestWorkspace, email: string): Promise<string> => {
    const res = await h().request({ method: 'POST', url: '/api/v1/contacts', key: ws.apiKey, json: { email } });
    expect(res.statusCode).toBeLessThan(300);
    return res.json().id;
  };

  const views = async (ws: TestWorkspace, rows: Array<{ email: string; properties: Record<string, unknown>; timestamp?: string; event_name?: string }>) => {
    const res = await h().request({
      method: 'POST',
      url: '/api/v1/events/batch',
      key: ws.apiKey,
      json: { events: rows.map((r) => ({ event_name: 'viewed_product', ...r })) },
    });
    expect(res.statusCode, res.body).toBe(200);
    expect(res.json().errors).toEqual([]);
  };

  const shop = async (): Promise<TestWorkspace> => {
    const ws = await h().workspace();
    for (const product of CATALOG) {
      const res = await hook(ws, { event_type: 'product_created', external_id: `p-${product.external_id}`, product });
      expect(res.statusCode).toBe(200);
    }
    const manual = await h().request({
      method: 'POST',
      url: '/api/v1/ecommerce/products',
      key: ws.apiKey,
      json: { external_id: 'manual', title: 'Manual', price: 5, currency: 'EUR', categories: ['Tops'] },
    });
    expect(manual.statusCode, manual.body).toBeLessThan(300);
    return ws;
  };

  const feed = async (ws: TestWorkspace, body: Record<string, unknown>): Promise<string> => {
    const res = await h().request({ method: 'POST', url: '/api/v1/product-feeds', key: ws.apiKey, json: { name: 'f', max_items: 100, ...body } });
    expect(res.statusCode, res.body).toBe(201);
    return res.json().feed.id;
  };

  /** External ids of the feed's products for a recipient, in ranked order. */
  const ranked = async (ws: TestWorkspace, feedId: string, query = ''): Promise<string[]> => {
    const res = await h().request({ method: 'GET', url: `/api/v1/product-feeds/${feedId}/products${query}`, key: ws.apiKey });
    expect(res.statusCode, res.body).toBe(200);
    return res.json().data.map((p: { external_id: string }) => p.external_id);
  };

  const rank = async (ws: TestWorkspace, type: string, extra: Record<string, unknown> = {}, query = '') =>
    ranked(ws, await feed(ws, { recommendation_type: type, ...extra }), query);

  // ------------------------------------------------------------------ best_selling

  it('best_selling ranks by units sold (quantity), only products with sales, never manual products', async () => {
    const ws = await shop();
    await order(ws, 'a@example.com', [{ external_id: 'jeans', quantity: 3 }, { external_id: 'manual', quantity: 9 }]);
    await order(ws, 'b@example.com', [{ external_id: 'tee', quantity: 1 }, { external_id: 'jeans', quantity: 1 }]);
    await order(ws, 'c@example.com', [{ external_id: 'cap', quantity: 2 }]);
    expect(await rank(ws, 'best_selling')).toEqual(['jeans', 'cap', 'tee']);
  });

  it('best_selling reads legacy line-item spellings and ignores ids the catalog does not hold (no error)', async () => {
    const ws = await shop();
    await order(ws, 'a@example.com', [{ item_id: 'cap', quantity: 2 }, { productId: 'tee', quantity: 3 }, { ProductID: 'shorts' }]);
    await order(ws, 'b@example.com', [{ product_id: 'shirt', quantity: 4 }, { external_id: 'no-such-product', quantity: 50 }, { title: 'no id', quantity: 7 }]);
    expect(await rank(ws, 'best_selling')).toEqual(['shirt', 'tee', 'cap', 'shorts']);
  });

  it('rankings join by catalog external_id only: a SKU or title match ranks nothing', async () => {
    const ws = await shop();
    await order(ws, 'a@example.com', [{ external_id: 'Tee', quantity: 5 }, { external_id: 'p-jeans', quantity: 5 }]);
    expect(await rank(ws, 'best_selling')).toEqual([]);
  });

  it('feed filters apply to rankings, and max_items / limit cut the ranked list', async () => {
    const ws = await shop();
    await order(ws, 'a@example.com', [{ external_id: 'jeans', quantity: 5 }, { external_id: 'tee', quantity: 4 }, { external_id: 'shirt', quantity: 3 }, { external_id: 'cap', quantity: 2 }]);
    expect(await rank(ws, 'best_selling', { categories: ['Tops'] })).toEqual(['tee', 'shirt']);
    expect(await rank(ws, 'best_selling', { price_min: 12, price_max: 40 })).toEqual(['shirt', 'cap']);
    expect(await rank(ws, 'best_selling', { max_items: 2 })).toEqual(['jeans', 'tee']);
    expect(await rank(ws, 'best_selling', {}, '?limit=3')).toEqual(['jeans', 'tee', 'shirt']);
  });

  it('a product ranked below the first candidates is still found when the filters drop all of those', async () => {
    const ws = await shop();
    const unknown = Array.from({ length: 60 }, (_, i) => ({ external_id: `gone-${i}`, quantity: 5 }));
    await order(ws, 'a@example.com', [...unknown, { external_id: 'cap', quantity: 1 }, { external_id: 'tee', quantity: 2 }]);
    expect(await rank(ws, 'best_selling')).toEqual(['tee', 'cap']);
    expect(await rank(ws, 'best_selling', { categories: ['Hats'] })).toEqual(['cap']);
  });

  it('a cancelled order stops counting; replaced items count once (re-sync never double counts)', async () => {
    const ws = await shop();
    const id = await order(ws, 'a@example.com', [{ external_id: 'jeans', quantity: 5 }]);
    await order(ws, 'b@example.com', [{ external_id: 'tee', quantity: 2 }]);
    expect(await rank(ws, 'best_selling')).toEqual(['jeans', 'tee']);
    const cancelled = await hook(ws, { event_type: 'cancelled_order', external_id: `cancel-${id}`, email: 'a@example.com', order: { external_id: id } });
    expect(cancelled.statusCode).toBe(200);
    expect(await rank(ws, 'best_selling')).toEqual(['tee']);

    const sync = (items: unknown[]) =>
      h().request({
        method: 'POST',
        url: '/api/v1/ecommerce/sync-historical-orders',
        key: ws.apiKey,
        json: { orders: [{ email: 's@example.com', external_id: 'h-1', order_number: 'h-1', total_amount: 9, currency: 'EUR', status: 'paid', ordered_at: daysAgo(3), items }] },
      });
    expect((await sync([{ external_id: 'cap', quantity: 3 }])).json().inserted).toBe(1);
    expect((await sync([{ external_id: 'cap', quantity: 3 }])).json().skipped).toBe(1);
    expect(await rank(ws, 'best_selling')).toEqual(['cap', 'tee']);
    expect((await sync([{ external_id: 'shorts', quantity: 1 }])).json().updated).toBe(1);
    expect(await rank(ws, 'best_selling')).toEqual(['tee', 'shorts']);
  });

  it('the 90-day look-back: older orders and views are not counted', async () => {
    const ws = await shop();
    await h().request({
      method: 'POST',
      url: '/api/v1/ecommerce/sync-historical-orders',
      key: ws.apiKey,
      json: {
        orders: [
          { email: 's@example.com', external_id: 'old', order_number: 'old', total_amount: 9, currency: 'EUR', status: 'paid', ordered_at: daysAgo(95), items: [{ external_id: 'jeans', quantity: 50 }] },
          { email: 's@example.com', external_id: 'new', order_number: 'new', total_amount: 9, currency: 'EUR', status: 'paid', ordered_at: daysAgo(80), items: [{ external_id: 'cap', quantity: 1 }] },
        ],
      },
    });
    await contact(ws, 'v@example.com');
    await views(ws, [
      { email: 'v@example.com', properties: { product_id: 'jeans' }, timestamp: daysAgo(91) },
      { email: 'v@example.com', properties: { product_id: 'shorts' }, timestamp: daysAgo(60) },
    ]);
    expect(await rank(ws, 'best_selling')).toEqual(['cap']);
    expect(await rank(ws, 'most_viewed')).toEqual(['shorts']);
  });

  // ------------------------------------------------------------------ most_viewed, combined

  it('most_viewed counts product views from every spelling and alias, anonymous visitors included', async () => {
    const ws = await shop();
    await contact(ws, 'v@example.com');
    await views(ws, [
      { email: 'v@example.com', properties: { product_id: 'cap' } },
      { email: 'v@example.com', properties: { ProductID: 'cap' } },
      { email: 'v@example.com', properties: { productId: 'shorts' } },
      { email: 'v@example.com', properties: { item_id: 'cap' }, event_name: 'product_viewed' },
      { email: 'v@example.com', properties: { product_id: 'jeans' }, event_name: 'added_to_cart' },
      { email: 'v@example.com', properties: { product_id: 'manual' } },
    ]);
    const anonymous = await h().request({
      method: 'POST',
      url: '/collect/event',
      json: { site_id: ws.siteId, anonymous_id: 'anon-1', event_name: 'viewed_product', properties: { product_id: 'shorts' } },
    });
    expect(anonymous.statusCode).toBe(200);
    await h().request({
      method: 'POST',
      url: '/collect/event',
      json: { site_id: ws.siteId, anonymous_id: 'anon-1', event_name: 'viewed_product', properties: { product_id: 'shorts' } },
    });
    expect(await rank(ws, 'most_viewed')).toEqual(['shorts', 'cap']);
  });

  it('best_selling_and_most_viewed weighs one unit sold as ten views', async () => {
    const ws = await shop();
    await order(ws, 'a@example.com', [{ external_id: 'jeans', quantity: 1 }]);
    await contact(ws, 'v@example.com');
    const many = (id: string, n: number) => Array.from({ length: n }, () => ({ email: 'v@example.com', properties: { product_id: id } }));
    await views(ws, [...many('cap', 11), ...many('tee', 9)]);
    expect(await rank(ws, 'best_selling_and_most_viewed')).toEqual(['cap', 'jeans', 'tee']);
  });

  it('an event correction moves its view between days and products, and out of the window', async () => {
    const ws = await shop();
    await contact(ws, 'v@example.com');
    await views(ws, [
      { email: 'v@example.com', properties: { product_id: 'cap', dedupe_key: 'k1' }, timestamp: daysAgo(2) },
      { email: 'v@example.com', properties: { product_id: 'cap', dedupe_key: 'k2' }, timestamp: daysAgo(2) },
      { email: 'v@example.com', properties: { product_id: 'tee', dedupe_key: 'k3' }, timestamp: daysAgo(2) },
    ]);
    expect(await rank(ws, 'most_viewed')).toEqual(['cap', 'tee']);
    const correct = (rows: unknown[]) => h().request({ method: 'PUT', url: '/api/v1/events/batch', key: ws.apiKey, json: { events: rows } });
    // k1 now names tee; k2 moves out of the window; k3 moves to another day inside it.
    const res = await correct([
      { email: 'v@example.com', event_name: 'viewed_product', dedupe_key: 'k1', properties: { product_id: 'tee' } },
      { email: 'v@example.com', event_name: 'viewed_product', dedupe_key: 'k2', timestamp: daysAgo(120) },
      { email: 'v@example.com', event_name: 'viewed_product', dedupe_key: 'k3', timestamp: daysAgo(40) },
    ]);
    expect(res.json()).toMatchObject({ updated: 3, errors: [] });
    expect(await rank(ws, 'most_viewed')).toEqual(['tee']);
    const daily = await h().services.db.knex('product_activity_daily').where({ workspace_id: ws.id, product_key: 'tee' }).orderBy('day');
    expect(daily.map((r) => [Number(r.day), Number(r.views)])).toEqual([
      [Math.floor((Date.now() - 40 * DAY) / DAY), 1],
      [Math.floor((Date.now() - 2 * DAY) / DAY), 1],
    ]);
    // Back into the window: counted again. Re-running a correction changes nothing.
    await correct([{ email: 'v@example.com', event_name: 'viewed_product', dedupe_key: 'k2', timestamp: daysAgo(1) }]);
    await correct([{ email: 'v@example.com', event_name: 'viewed_product', dedupe_key: 'k2', timestamp: daysAgo(1) }]);
    expect(await rank(ws, 'most_viewed')).toEqual(['tee', 'cap']);
    const [cap] = await h().services.db.knex('product_activity_totals').where({ workspace_id: ws.id, product_key: 'cap' });
    expect(Number(cap.views)).toBe(1);
  });

  it('a deleted product leaves the rankings at once', async () => {
    const ws = await shop();
    await order(ws, 'a@example.com', [{ external_id: 'jeans', quantity: 3 }, { external_id: 'tee', quantity: 1 }]);
    expect(await rank(ws, 'best_selling')).toEqual(['jeans', 'tee']);
    await hook(ws, { event_type: 'product_deleted', external_id: 'del-jeans', product: { external_id: 'jeans' } });
    expect(await rank(ws, 'best_selling')).toEqual(['tee']);
  });

  // ------------------------------------------------------------------ rankings restricted to categories

  /** The per-category totals as stored: [category, product, units sold, views, score]. */
  const categoryTotals = async (ws: TestWorkspace) =>
    (await h().services.db.knex('product_category_totals').where({ workspace_id: ws.id }).orderBy(['category', 'product_key'])).map((r) => [
      r.category,
      r.product_key,
      Number(r.units_sold),
      Number(r.views),
      Number(r.score),
    ]);

  /** What they must be: each category of each ranked catalog product, with the product's running totals. */
  const expectedCategoryTotals = async (ws: TestWorkspace) => {
    const { knex } = h().services.db;
    const rows = await knex('products as p')
      .join('product_categories as c', 'c.product_id', 'p.id')
      .leftJoin('product_activity_totals as t', (j) => j.on('t.workspace_id', 'p.workspace_id').andOn('t.product_key', 'p.external_id'))
      .where({ 'p.workspace_id': ws.id })
      .whereNot('p.platform', 'manual')
      .distinct('c.category', 'p.external_id', 't.units_sold', 't.views', 't.score')
      .orderBy(['c.category', 'p.external_id']);
    return rows.map((r) => [r.category, r.external_id, Number(r.units_sold ?? 0), Number(r.views ?? 0), Number(r.score ?? 0)]);
  };

  const updateProduct = async (ws: TestWorkspace, product: Record<string, unknown>) => {
    const res = await hook(ws, { event_type: 'product_updated', external_id: `u-${++deliveries}`, product: { price: 10, ...product } });
    expect(res.statusCode, res.body).toBe(200);
  };

  it('category rankings follow the catalog: a product moved between categories takes its counts along', async () => {
    const ws = await shop();
    await order(ws, 'a@example.com', [{ external_id: 'jeans', quantity: 5 }, { external_id: 'tee', quantity: 4 }, { external_id: 'shirt', quantity: 3 }, { external_id: 'cap', quantity: 2 }]);
    expect(await rank(ws, 'best_selling', { categories: ['Tops'] })).toEqual(['tee', 'shirt']);
    expect(await rank(ws, 'best_selling', { categories: ['Tops', 'Hats'] })).toEqual(['tee', 'shirt', 'cap']);
    expect(await rank(ws, 'best_selling', { categories: ['Tops', 'Hats'], categories_op: 'all' })).toEqual([]);

    await updateProduct(ws, { external_id: 'cap', title: 'Cap', categories: ['Hats', 'Tops'] });
    await updateProduct(ws, { external_id: 'tee', title: 'Tee', categories: ['Bottoms'] });
    expect(await rank(ws, 'best_selling', { categories: ['Tops'] })).toEqual(['shirt', 'cap']);
    expect(await rank(ws, 'best_selling', { categories: ['Bottoms'] })).toEqual(['jeans', 'tee']);
    expect(await rank(ws, 'best_selling', { categories: ['Tops', 'Hats'], categories_op: 'all' })).toEqual(['cap']);

    // New activity reaches every category of its product; a deleted product leaves them.
    await order(ws, 'b@example.com', [{ external_id: 'cap', quantity: 2 }]);
    expect(await rank(ws, 'best_selling', { categories: ['Tops'] })).toEqual(['cap', 'shirt']);
    expect(await rank(ws, 'best_selling', { categories: ['Hats'] })).toEqual(['cap']);
    await hook(ws, { event_type: 'product_deleted', external_id: 'del-shirt', product: { external_id: 'shirt' } });
    expect(await rank(ws, 'best_selling', { categories: ['Tops'] })).toEqual(['cap']);
    expect(await categoryTotals(ws)).toEqual(await expectedCategoryTotals(ws));
  });

  it('a category whose products all sell less than the store’s first 50 candidates ranks from its own totals', async () => {
    const ws = await shop();
    const others = Array.from({ length: 120 }, (_, i) => ({ external_id: `other-${String(i).padStart(3, '0')}`, title: `Other ${i}`, price: 5, categories: ['Misc'] }));
    for (const product of others) await hook(ws, { event_type: 'product_created', external_id: `p-${product.external_id}`, product });
    await order(ws, 'a@example.com', [...others.map((p) => ({ external_id: p.external_id, quantity: 9 })), { external_id: 'cap', quantity: 1 }, { external_id: 'tee', quantity: 2 }]);
    // Ten items a page: the store-wide top 50 keys are all Misc products.
    expect(await rank(ws, 'best_selling', { categories: ['Hats'], max_items: 10 })).toEqual(['cap']);
    expect(await rank(ws, 'best_selling', { categories: ['Hats', 'Tops'], max_items: 10 })).toEqual(['tee', 'cap']);
    expect((await rank(ws, 'best_selling', { categories: ['Misc'], max_items: 3 }))).toEqual(['other-119', 'other-118', 'other-117']);
  });

  it('per-category totals equal the catalog and the totals after every kind of write, the roll-over and a rebuild', async () => {
    const ws = await shop();
    await contact(ws, 'v@example.com');
    await order(ws, 'a@example.com', [{ external_id: 'jeans', quantity: 2 }, { external_id: 'cap' }], { ordered_at: daysAgo(50) });
    await order(ws, 'b@example.com', [{ external_id: 'tee', quantity: 3 }, { external_id: 'manual' }], { ordered_at: daysAgo(1) });
    await views(ws, [
      { email: 'v@example.com', properties: { product_id: 'shorts', dedupe_key: 'v1' }, timestamp: daysAgo(2) },
      { email: 'v@example.com', properties: { product_id: 'cap' }, timestamp: daysAgo(60) },
      { email: 'v@example.com', properties: { product_id: 'not-in-catalog' } },
    ]);
    // A product in two categories, one added later with activity recorded before it existed, a manual one.
    await updateProduct(ws, { external_id: 'shorts', title: 'Shorts', categories: ['Bottoms', 'Sale'] });
    await views(ws, [{ email: 'v@example.com', properties: { product_id: 'later' } }]);
    await hook(ws, { event_type: 'product_created', external_id: 'p-later', product: { external_id: 'later', title: 'Later', price: 9, categories: ['Sale'] } });
    await h().request({ method: 'POST', url: '/api/v1/ecommerce/products', key: ws.apiKey, json: { external_id: 'manual-2', title: 'M', price: 5, categories: ['Sale'] } });
    // A correction moves a view to another product.
    await h().request({
      method: 'PUT',
      url: '/api/v1/events/batch',
      key: ws.apiKey,
      json: { events: [{ email: 'v@example.com', event_name: 'viewed_product', dedupe_key: 'v1', properties: { product_id: 'tee' } }] },
    });
    const stored = await categoryTotals(ws);
    expect(stored).toEqual(await expectedCategoryTotals(ws));
    expect(stored).toContainEqual(['Sale', 'later', 0, 1, 1]);
    expect(stored).toContainEqual(['Tops', 'tee', 3, 1, 31]);
    expect(stored.filter((r) => r[1] === 'shorts').map((r) => r[0])).toEqual(['Bottoms', 'Sale']);
    expect(stored.some((r) => String(r[1]).startsWith('manual'))).toBe(false);

    // Forty days later the 50-day-old order and the 60-day-old view have left the window.
    const { knex, dialect: db, writeTransaction } = h().services.db;
    const later = createProductActivity({ knex, writeTransaction, dialect: db, now: () => Date.now() + 40 * DAY });
    await later.rollOver(ws.id);
    const rolled = await categoryTotals(ws);
    expect(rolled).toEqual(await expectedCategoryTotals(ws));
    expect(rolled.filter((r) => r[1] === 'jeans' || r[1] === 'cap').map((r) => r.slice(2))).toEqual([
      [0, 0, 0],
      [0, 0, 0],
    ]);
    await later.rebuild(ws.id);
    expect(await categoryTotals(ws)).toEqual(rolled);
    // The operator's reindex rebuilds them from the catalog too.
    await h().services.db.knex('product_category_totals').where({ workspace_id: ws.id }).delete();
    await h().services.products.reindexFilters(ws.id);
    expect(await categoryTotals(ws)).toEqual(rolled);
  });

  it('a product created while a write adds its first view: the view reaches the new category (no lost count)', async () => {
    const ws = await shop();
    const { knex, writeTransaction } = h().services.db;
    let release!: () => void;
    const gate = new Promise<void>((r) => (release = r));
    let written!: () => void;
    const viewWritten = new Promise<void>((r) => (written = r));
    const viewing = writeTransaction(async (trx) => {
      const view = { workspace_id: ws.id, event_name: 'viewed_product', properties: { product_id: 'beanie' }, created_at: Date.now() };
      await h().services.productActivity.record(trx, new ActivityDelta().event(view, 1));
      await trx.raw('SELECT 1'); // sends the held upserts: the totals row is written, not yet committed
      written();
      await gate;
    });
    await viewWritten;
    const creating = hook(ws, { event_type: 'product_created', external_id: 'p-beanie', product: { external_id: 'beanie', title: 'Beanie', price: 12, categories: ['Hats'] } });
    let created = false;
    void creating.then(() => (created = true));
    // PostgreSQL: the catalog waits on the new totals row's lock; SQLite: on the writer (its one connection).
    const waiting = async () =>
      dialect === 'postgres'
        ? Number((await knex.raw("SELECT count(*) AS n FROM pg_stat_activity WHERE datname = current_database() AND wait_event_type = 'Lock'")).rows[0].n) > 0
        : (knex.client.pool as { numPendingAcquires(): number }).numPendingAcquires() > 0;
    while (!created && !(await waiting())) await new Promise((r) => setTimeout(r, 10));
    release();
    await viewing;
    expect((await creating).statusCode).toBe(200);
    expect((await categoryTotals(ws)).filter((r) => r[1] === 'beanie')).toEqual([['Hats', 'beanie', 0, 1, 1]]);
    expect(await rank(ws, 'most_viewed', { categories: ['Hats'] })).toEqual(['beanie']);
  });

  // ------------------------------------------------------------------ per recipient

  it('recently_viewed: the recipient’s own views, newest first, each product once; plain order without a recipient', async () => {
    const ws = await shop();
    const me = await contact(ws, 'me@example.com');
    await contact(ws, 'other@example.com');
    await views(ws, [
      { email: 'me@example.com', properties: { product_id: 'cap' }, timestamp: daysAgo(5) },
      { email: 'me@example.com', properties: { ProductID: 'tee' }, timestamp: daysAgo(3) },
      { email: 'me@example.com', properties: { product_id: 'cap' }, timestamp: daysAgo(1) },
      { email: 'me@example.com', properties: { product_id: 'manual' }, timestamp: daysAgo(1) },
      { email: 'me@example.com', properties: { product_id: 'jeans' }, timestamp: daysAgo(100) },
      { email: 'other@example.com', properties: { product_id: 'shorts' }, timestamp: daysAgo(1) },
    ]);
    const id = await feed(ws, { recommendation_type: 'recently_viewed' });
    expect(await ranked(ws, id, `?contact_id=${me}`)).toEqual(['cap', 'tee']);
    expect(await ranked(ws, id, `?contact_id=${me}&limit=1`)).toEqual(['cap']);
    // Without a recipient: the plain ordering (newest first) of every matched product.
    expect(await ranked(ws, id)).toEqual(['manual', 'cap', 'shorts', 'jeans', 'shirt', 'tee']);
    const missing = await h().request({ method: 'GET', url: `/api/v1/product-feeds/${id}/products?contact_id=00000000-0000-0000-0000-000000000000`, key: ws.apiKey });
    expect(missing.statusCode).toBe(404);
  });

  it('recently_viewed reads past the first keys: ids the catalog lacks or the filters drop are skipped, order kept', async () => {
    const ws = await shop();
    const me = await contact(ws, 'me@example.com');
    const minutesBefore = (days: number, minutes: number) => new Date(Date.now() - days * DAY - minutes * 60_000).toISOString();
    // Newest first: jeans, 300 ids the catalog does not hold, then tee, shirt, cap (past the first two slices).
    const gone = Array.from({ length: 300 }, (_, i) => ({ email: 'me@example.com', properties: { product_id: `gone-${i}` }, timestamp: minutesBefore(2, i) }));
    await views(ws, [
      { email: 'me@example.com', properties: { product_id: 'jeans' }, timestamp: daysAgo(1) },
      ...gone,
      { email: 'me@example.com', properties: { product_id: 'tee' }, timestamp: daysAgo(4) },
      { email: 'me@example.com', properties: { product_id: 'shirt' }, timestamp: daysAgo(5) },
      { email: 'me@example.com', properties: { product_id: 'cap' }, timestamp: daysAgo(6) },
    ]);
    const id = await feed(ws, { recommendation_type: 'recently_viewed' });
    expect(await ranked(ws, id, `?contact_id=${me}`)).toEqual(['jeans', 'tee', 'shirt', 'cap']);
    expect(await ranked(ws, id, `?contact_id=${me}&limit=2`)).toEqual(['jeans', 'tee']);
    expect(await rank(ws, 'recently_viewed', { categories: ['Tops'] }, `?contact_id=${me}`)).toEqual(['tee', 'shirt']);
    expect(await rank(ws, 'recently_viewed', { categories: ['Hats'] }, `?contact_id=${me}`)).toEqual(['cap']);
  });

  it('recently_viewed includes views made anonymously before the visitor was identified', async () => {
    const ws = await shop();
    const collect = (body: Record<string, unknown>) => h().request({ method: 'POST', url: '/collect/event', json: { site_id: ws.siteId, ...body } });
    expect((await collect({ anonymous_id: 'anon-9', event_name: 'viewed_product', properties: { product_id: 'shorts' } })).statusCode).toBe(200);
    const identified = await h().request({ method: 'POST', url: '/collect/identify', json: { site_id: ws.siteId, email: 'late@example.com', anonymous_id: 'anon-9' } });
    expect(identified.statusCode).toBeLessThan(300);
    const me = identified.json().contact_id;
    expect(await rank(ws, 'recently_viewed', {}, `?contact_id=${me}`)).toEqual(['shorts']);
  });

  it('added_to_cart: the recipient’s add-to-cart events or carts, either suffices, newest first', async () => {
    const ws = await shop();
    const me = await contact(ws, 'me@example.com');
    await views(ws, [
      { email: 'me@example.com', event_name: 'added_to_cart', properties: { product_id: 'cap' }, timestamp: daysAgo(4) },
      { email: 'me@example.com', event_name: 'added_to_cart', properties: { items: [{ external_id: 'tee' }, { item_id: 'shirt' }] }, timestamp: daysAgo(3) },
    ]);
    const id = await feed(ws, { recommendation_type: 'added_to_cart' });
    expect(await ranked(ws, id, `?contact_id=${me}`)).toEqual(['shirt', 'tee', 'cap']);
    const cart = await hook(ws, {
      event_type: 'added_to_cart',
      external_id: 'cart-delivery-1',
      email: 'me@example.com',
      cart: { external_id: 'cart-1', items: [{ external_id: 'jeans', quantity: 1 }, { external_id: 'cap', quantity: 1 }] },
    });
    expect(cart.statusCode).toBe(200);
    expect(await ranked(ws, id, `?contact_id=${me}`)).toEqual(['cap', 'jeans', 'shirt', 'tee']);
    // Carts alone suffice.
    await contact(ws, 'carts@example.com');
    await hook(ws, { event_type: 'added_to_cart', external_id: 'cart-delivery-2', email: 'carts@example.com', cart: { external_id: 'cart-2', items: [{ product_id: 'shorts' }] } });
    const cartsOnly = (await h().request({ method: 'GET', url: '/api/v1/contacts?email=carts@example.com', key: ws.apiKey })).json().data[0].id;
    expect(await ranked(ws, id, `?contact_id=${cartsOnly}`)).toEqual(['shorts']);
  });

  it('may_also_like: store-wide co-occurrence with the recipient’s orders and carts, topped up by categories', async () => {
    const ws = await shop();
    // Other shoppers: jeans go with the cap (twice) and with the shirt (once).
    await order(ws, 'x@example.com', [{ external_id: 'jeans' }, { external_id: 'cap' }]);
    await order(ws, 'y@example.com', [{ external_id: 'jeans' }, { external_id: 'cap' }, { external_id: 'shirt' }]);
    await order(ws, 'z@example.com', [{ external_id: 'tee', quantity: 5 }]);
    // Me: bought jeans.
    await order(ws, 'me@example.com', [{ external_id: 'jeans' }]);
    const me = (await h().request({ method: 'GET', url: '/api/v1/contacts?email=me@example.com', key: ws.apiKey })).json().data[0].id;
    const id = await feed(ws, { recommendation_type: 'may_also_like' });
    // Bought together first (cap 2, shirt 1), then the seeds' categories (Bottoms: shorts); never the seed itself.
    expect(await ranked(ws, id, `?contact_id=${me}`)).toEqual(['cap', 'shirt', 'shorts']);
    expect(await ranked(ws, id, `?contact_id=${me}&limit=1`)).toEqual(['cap']);
    // A filter applies to both parts.
    expect(await ranked(ws, await feed(ws, { recommendation_type: 'may_also_like', exclude_categories: ['Hats'] }), `?contact_id=${me}`)).toEqual(['shirt', 'shorts']);
    // A recipient with no orders or carts has no recommendations.
    const newcomer = await contact(ws, 'new@example.com');
    expect(await ranked(ws, id, `?contact_id=${newcomer}`)).toEqual([]);
  });

  it('may_also_like: partners bought together equally often come in key order', async () => {
    const ws = await shop();
    await order(ws, 'x@example.com', [{ external_id: 'jeans' }, { external_id: 'shirt' }]);
    await order(ws, 'y@example.com', [{ external_id: 'jeans' }, { external_id: 'cap' }]);
    await order(ws, 'z@example.com', [{ external_id: 'jeans' }, { external_id: 'tee' }]);
    await order(ws, 'me@example.com', [{ external_id: 'jeans' }]);
    const me = (await h().request({ method: 'GET', url: '/api/v1/contacts?email=me@example.com', key: ws.apiKey })).json().data[0].id;
    expect(await rank(ws, 'may_also_like', {}, `?contact_id=${me}`)).toEqual(['cap', 'shirt', 'tee', 'shorts']);
  });

  it('may_also_like tops up by categories best sellers first, and a cart is a seed too', async () => {
    const ws = await shop();
    await order(ws, 'z@example.com', [{ external_id: 'shirt', quantity: 5 }]);
    await hook(ws, { event_type: 'added_to_cart', external_id: 'cd-1', email: 'me@example.com', cart: { external_id: 'c-me', items: [{ external_id: 'tee' }] } });
    const me = (await h().request({ method: 'GET', url: '/api/v1/contacts?email=me@example.com', key: ws.apiKey })).json().data[0].id;
    // Tops besides the tee: the shirt (sold), never the manual product.
    expect(await rank(ws, 'may_also_like', {}, `?contact_id=${me}`)).toEqual(['shirt']);
  });

  // ------------------------------------------------------------------ aggregates

  it('the roll-over takes days that leave the window out of the totals', async () => {
    const ws = await shop();
    await order(ws, 'a@example.com', [{ external_id: 'jeans', quantity: 2 }, { external_id: 'cap' }], { ordered_at: daysAgo(50) });
    await order(ws, 'b@example.com', [{ external_id: 'tee', quantity: 1 }], { ordered_at: daysAgo(1) });
    const { knex, dialect } = h().services.db;
    const later = createProductActivity({
      knex,
      writeTransaction: h().services.db.writeTransaction,
      dialect,
      now: () => Date.now() + 45 * DAY,
    });
    await later.rollOver(ws.id);
    const totals = await knex('product_activity_totals').where({ workspace_id: ws.id }).orderBy('product_key');
    expect(totals.map((t) => [t.product_key, Number(t.units_sold)])).toEqual([['tee', 1]]);
    expect(await knex('product_pairs_daily').where({ workspace_id: ws.id })).toEqual([]);
    expect(await knex('product_pair_totals').where({ workspace_id: ws.id })).toEqual([]);
    expect(await knex('product_activity_daily').where({ workspace_id: ws.id }).count({ n: '*' })).toEqual([{ n: 1 }]);
  });

  it('concurrent orders during a roll-over: the totals still equal a rebuild (no count lost or doubled)', async () => {
    const ws = await shop();
    await order(ws, 'seed@example.com', [{ external_id: 'cap', quantity: 1 }], { ordered_at: daysAgo(85) });
    const { knex, dialect, writeTransaction } = h().services.db;
    const later = createProductActivity({ knex, writeTransaction, dialect, now: () => Date.now() + 10 * DAY });
    const keys = ['tee', 'shirt', 'jeans', 'shorts', 'cap'];
    const writes = Array.from({ length: 24 }, (_, i) =>
      order(ws, `c${i}@example.com`, [{ external_id: keys[i % 5], quantity: 1 + (i % 3) }, { external_id: keys[(i + 1) % 5] }], { ordered_at: daysAgo(i % 4) }),
    );
    await Promise.all([...writes, later.rollOver(ws.id)]);
    const totals = async () =>
      (await knex('product_activity_totals').where({ workspace_id: ws.id }).whereRaw('NOT (units_sold = 0 AND views = 0)').orderBy('product_key')).map(
        (t) => [t.product_key, Number(t.units_sold), Number(t.views), Number(t.score)],
      );
    const kept = await totals();
    await later.rebuild(ws.id);
    expect(await totals()).toEqual(kept);
    // The 85-day-old cap left the window of ten days later; the 24 new orders all count.
    expect(kept.reduce((sum, t) => sum + (t[1] as number), 0)).toBe(24 + Array.from({ length: 24 }, (_, i) => 1 + (i % 3)).reduce((a, b) => a + b, 0));
  });

  it('rebuild from raw data equals the aggregates kept on write, after a mix of writes', async () => {
    const ws = await shop();
    await contact(ws, 'v@example.com');
    const first = await order(ws, 'a@example.com', [{ external_id: 'jeans', quantity: 2 }, { item_id: 'cap' }, { external_id: 'tee' }]);
    await order(ws, 'b@example.com', [{ external_id: 'jeans' }, { external_id: 'cap' }], { ordered_at: daysAgo(30) });
    await order(ws, 'c@example.com', [{ external_id: 'shirt', quantity: 4 }, { external_id: 'shorts' }], { ordered_at: daysAgo(200) });
    await hook(ws, { event_type: 'cancelled_order', external_id: 'c-first', email: 'a@example.com', order: { external_id: first } });
    await order(ws, 'd@example.com', [{ external_id: 'tee' }, { external_id: 'shirt' }]);
    await views(ws, [
      { email: 'v@example.com', properties: { product_id: 'cap', dedupe_key: 'r1' }, timestamp: daysAgo(3) },
      { email: 'v@example.com', properties: { productId: 'tee' }, timestamp: daysAgo(10) },
      { email: 'v@example.com', properties: { product_id: 'jeans' }, timestamp: daysAgo(100) },
    ]);
    await h().request({
      method: 'PUT',
      url: '/api/v1/events/batch',
      key: ws.apiKey,
      json: { events: [{ email: 'v@example.com', event_name: 'viewed_product', dedupe_key: 'r1', timestamp: daysAgo(20) }] },
    });
    const { knex } = h().services.db;
    const snapshot = async () => {
      const normalise = (rows: Array<Record<string, unknown>>) =>
        rows.map((row) => Object.fromEntries(Object.entries(row).map(([k, v]) => [k, typeof v === 'string' && /^-?\d+$/.test(v) ? Number(v) : v])));
      return {
        daily: normalise(
          await knex('product_activity_daily').where({ workspace_id: ws.id }).whereRaw('NOT (units_sold = 0 AND views = 0)').orderBy(['product_key', 'day']),
        ),
        totals: normalise(
          await knex('product_activity_totals').where({ workspace_id: ws.id }).whereRaw('NOT (units_sold = 0 AND views = 0)').orderBy('product_key'),
        ),
        pairs: normalise(await knex('product_pairs_daily').where({ workspace_id: ws.id }).whereNot({ orders: 0 }).orderBy(['product_key', 'other_key', 'day'])),
        pairTotals: normalise(await knex('product_pair_totals').where({ workspace_id: ws.id }).whereNot({ orders: 0 }).orderBy(['product_key', 'other_key'])),
      };
    };
    const kept = await snapshot();
    expect(kept.pairTotals.map((p) => [p.product_key, p.other_key, p.orders])).toEqual([
      ['cap', 'jeans', 1],
      ['jeans', 'cap', 1],
      ['shirt', 'tee', 1],
      ['tee', 'shirt', 1],
    ]);
    expect(kept.totals.map((t) => [t.product_key, t.units_sold, t.views])).toEqual([
      ['cap', 1, 1],
      ['jeans', 1, 0],
      ['shirt', 1, 0],
      ['tee', 1, 1],
    ]);
    await h().services.productActivity.rebuild(ws.id);
    expect(await snapshot()).toEqual(kept);
  });
});
