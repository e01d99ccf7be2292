import { describe, expect, it } from 'vitest';
import { describeEachDatabase, type TestWorkspace } from './helpers/harness.js';

type Integration = { workspaceId: string; platform: string; domain: string };

const tick = () => new Promise((r) => setTimeout(r, 5));

/**
 * The catalog every filter test reads, created in this order (so `newest` is d, c, b, a):
 *  a  Alpha Shirt   10  [Shirts, Summer]  stock 3 (variants M/Red in stock, L/Blue sold out)  {material: Cotton, brand: Acme}
 *  b  beta Pants    30  [Pants]           stock unknown, in stock                                {material: Linen blend}
 *  c  Gamma Hat     20  [Hats, Summer]    stock 0, out of stock                                  {}
 *  d  Delta Shirt   50  [Shirts]          stock 20 (variant M/Blue in stock), from shopify:other.test {brand: Other}
 */
const CATALOG = [
  {
    external_id: 'a',
    title: 'Alpha Shirt',
    price: 10,
    categories: ['Shirts', 'Summer'],
    metadata: { material: 'Cotton', brand: 'Acme' },
    variants: [
      { external_id: 'a-m', options: { Size: 'M', Color: 'Red' }, in_stock: true, stock_qty: 3 },
      { external_id: 'a-l', options: { Size: 'L', Color: 'Blue' }, in_stock: false, stock_qty: 0 },
    ],
  },
  { external_id: 'b', title: 'beta Pants', price: 30, categories: ['Pants'], in_stock: true, metadata: { material: 'Linen blend' } },
  { external_id: 'c', title: 'Gamma Hat', price: 20, categories: ['Hats', 'Summer'], in_stock: false, stock_qty: 0 },
  {
    external_id: 'd',
    title: 'Delta Shirt',
    price: 50,
    categories: ['Shirts'],
    metadata: { brand: 'Other' },
    variants: [{ external_id: 'd-m', options: { Size: 'M', Color: 'Blue' }, in_stock: true, stock_qty: 20 }],
  },
];

describeEachDatabase('product feeds', (h) => {
  const send = (integration: Integration, product: unknown) =>
    h().services.db.knex.transaction((trx) =>
      h().services.products.applyWebhookEvent(trx, integration, 'product_updated', product),
    );

  /** A workspace holding CATALOG (d from a second integration). */
  const shop = async (): Promise<TestWorkspace> => {
    const ws = await h().workspace();
    for (const product of CATALOG) {
      const integration =
        product.external_id === 'd'
          ? { workspaceId: ws.id, platform: 'shopify', domain: 'other.test' }
          : { workspaceId: ws.id, platform: 'website', domain: 'shop.test' };
      expect(await send(integration, product)).toBe('applied');
      await tick();
    }
    return ws;
  };

  let shared: Promise<TestWorkspace> | null = null;
  const catalog = () => (shared ??= shop());

  const create = (ws: TestWorkspace, body: unknown) =>
    h().request({ method: 'POST', url: '/api/v1/product-feeds', key: ws.apiKey, json: body });
  const get = (ws: TestWorkspace, id: string, query = '') =>
    h().request({ method: 'GET', url: `/api/v1/product-feeds/${id}${query}`, key: ws.apiKey });
  const put = (ws: TestWorkspace, id: string, body: unknown) =>
    h().request({ method: 'PUT', url: `/api/v1/product-feeds/${id}`, key: ws.apiKey, json: body });

  /** External ids of everything the feed matches, in its order (via preview of 100). */
  const matches = async (body: Record<string, unknown>): Promise<string[]> => {
    const ws = await catalog();
    const created = await create(ws, { name: 'f', ...body });
    expect(created.statusCode, created.body).toBe(201);
    const res = await get(ws, created.json().feed.id, '?preview=100');
    expect(res.statusCode).toBe(200);
    const ids = res.json().products.map((p: { external_id: string }) => p.external_id);
    expect(res.json().product_count).toBe(ids.length);
    return ids;
  };

  describe('POST /api/v1/product-feeds', () => {
    it('only name is required; the defaults are max_items 10, sort_by newest, ops any, no recommendation type', async () => {
      const ws = await catalog();
      const res = await create(ws, { name: 'All products' });
      expect(res.statusCode).toBe(201);
      const { feed, product_count } = res.json();
      expect(product_count).toBe(4);
      expect(feed).toMatchObject({
        name: 'All products',
        recommendation_type: '',
        sort_by: 'newest',
        max_items: 10,
        categories: [],
        exclude_categories: [],
        categories_op: 'any',
        exclude_categories_op: 'any',
        price_min: null,
        price_max: null,
        stock_min: null,
        stock_max: null,
        stock_status: null,
        source: null,
        metadata: [],
        variant_options: {},
        variant_in_stock: false,
      });
      expect(typeof feed.id).toBe('string');
      expect(Date.parse(feed.created_at)).not.toBeNaN();
      expect(Date.parse(feed.updated_at)).not.toBeNaN();
    });

    it('stores every field sent and answers with them', async () => {
      const ws = await catalog();
      const body = {
        name: 'Everything set',
        recommendation_type: 'best_selling',
        sort_by: 'price_desc',
        max_items: 4,
        categories: ['Shirts'],
        exclude_categories: ['Hats'],
        categories_op: 'all',
        exclude_categories_op: 'all',
        price_min: 1.5,
        price_max: 99.99,
        stock_min: 0,
        stock_max: 100,
        stock_status: 'in_stock',
        source: 'shopify:other.test',
        metadata: [
          { key: 'brand', operator: 'equals', value: 'Other' },
          { key: 'gift', operator: 'not_exists' },
        ],
        variant_options: { Size: ['M', 'L'] },
        variant_in_stock: true,
      };
      const res = await create(ws, body);
      expect(res.statusCode).toBe(201);
      expect(res.json().feed).toMatchObject({ ...body, metadata: [body.metadata[0], { key: 'gift', operator: 'not_exists', value: null }] });
      expect(res.json().product_count).toBe(1);
      const again = await get(ws, res.json().feed.id);
      expect(again.json().feed).toEqual(res.json().feed);
    });

    it('accepts every recommendation type of the spec, and the empty string for a plain sort', async () => {
      const ws = await catalog();
      for (const type of [
        'best_selling',
        'most_viewed',
        'best_selling_and_most_viewed',
        'newest',
        'random',
        'recently_viewed',
        'added_to_cart',
        'may_also_like',
        '',
      ]) {
        const res = await create(ws, { name: type || 'plain', recommendation_type: type });
        expect(res.statusCode, type).toBe(201);
        expect(res.json().feed.recommendation_type).toBe(type);
        expect(res.json().product_count).toBe(4);
      }
    });

    it('max_items accepts 1 and 100', async () => {
      const ws = await catalog();
      expect((await create(ws, { name: 'one', max_items: 1 })).json().feed.max_items).toBe(1);
      expect((await create(ws, { name: 'hundred', max_items: 100 })).json().feed.max_items).toBe(100);
    });
  });

  describe('validation: a value the feed cannot use is refused with 400 naming the field', () => {
    const refused: Array<[string, unknown, string]> = [
      ['no name', {}, 'name'],
      ['empty name', { name: '  ' }, 'name'],
      ['name not text', { name: 5 }, 'name'],
      ['max_items 0', { max_items: 0 }, 'max_items'],
      ['max_items 101', { max_items: 101 }, 'max_items'],
      ['max_items not an integer', { max_items: 2.5 }, 'max_items'],
      ['max_items as text', { max_items: 'ten' }, 'max_items'],
      ['unknown recommendation_type', { recommendation_type: 'top_rated' }, 'recommendation_type'],
      ['unknown sort_by', { sort_by: 'cheapest' }, 'sort_by'],
      ['unknown categories_op', { categories_op: 'some' }, 'categories_op'],
      ['unknown exclude_categories_op', { exclude_categories_op: 'none' }, 'exclude_categories_op'],
      ['unknown stock_status', { stock_status: 'maybe' }, 'stock_status'],
      ['categories not a list', { categories: 'Shirts' }, 'categories'],
      ['exclude_categories holding a number', { exclude_categories: [{}] }, 'exclude_categories[0]'],
      ['negative price_min', { price_min: -1 }, 'price_min'],
      ['price_max as text', { price_max: 'cheap' }, 'price_max'],
      ['price_min above price_max', { price_min: 30, price_max: 10 }, 'price_min'],
      ['stock_min not an integer', { stock_min: 1.5 }, 'stock_min'],
      ['stock_min above stock_max', { stock_min: 5, stock_max: 1 }, 'stock_min'],
      ['source not text', { source: 5 }, 'source'],
      ['metadata not a list', { metadata: { brand: 'x' } }, 'metadata'],
      ['unknown metadata operator', { metadata: [{ key: 'a', operator: 'like', value: 'x' }] }, 'metadata[0].operator'],
      ['metadata condition without a key', { metadata: [{ operator: 'exists' }] }, 'metadata[0].key'],
      ['metadata condition without its value', { metadata: [{ key: 'a', operator: 'equals' }] }, 'metadata[0].value'],
      ['variant_options not an object', { variant_options: ['M'] }, 'variant_options'],
      ['variant_options axis not a list', { variant_options: { Size: 'M' } }, 'variant_options.Size'],
      ['variant_options axis with no value', { variant_options: { Size: [] } }, 'variant_options.Size'],
      ['variant_in_stock not a boolean', { variant_in_stock: 'yes' }, 'variant_in_stock'],
    ];

    for (const [what, body, field] of refused) {
      it(`POST: ${what}`, async () => {
        const ws = await catalog();
        const res = await create(ws, 'name' in (body as object) || what.includes('name') ? body : { name: 'x', ...(body as object) });
        expect(res.statusCode).toBe(400);
        expect(res.json().error).toContain(field);
      });
    }

    it('a body that is not an object is refused', async () => {
      const ws = await catalog();
      const res = await create(ws, ['name']);
      expect(res.statusCode).toBe(400);
    });

    it('a refused PUT changes nothing', async () => {
      const ws = await catalog();
      const created = (await create(ws, { name: 'Keep me', price_min: 5, stock_max: 10 })).json().feed;
      for (const [, body, field] of refused.filter(([what]) => !what.includes('name'))) {
        const res = await put(ws, created.id, { name: 'Changed', ...(body as object) });
        expect(res.statusCode, JSON.stringify(body)).toBe(400);
        expect(res.json().error).toContain(field);
      }
      // Crossing a stored bound is refused too.
      const crossing = await put(ws, created.id, { name: 'Changed', price_max: 1 });
      expect(crossing.statusCode).toBe(400);
      expect(crossing.json().error).toContain('price_min');
      expect((await put(ws, created.id, { stock_min: 11 })).statusCode).toBe(400);
      expect((await get(ws, created.id)).json().feed).toEqual(created);
    });
  });

  describe('GET, PUT, DELETE', () => {
    it('GET /product-feeds lists the workspace feeds, each with its product count', async () => {
      const ws = await shop();
      await create(ws, { name: 'Shirts', categories: ['Shirts'] });
      await tick();
      await create(ws, { name: 'Cheap', price_max: 15 });
      const res = await h().request({ method: 'GET', url: '/api/v1/product-feeds', key: ws.apiKey });
      expect(res.statusCode).toBe(200);
      const body = res.json();
      expect(body.meta).toEqual({ page: 1, perPage: 50, total: 2 });
      expect(body.data.map((d: { feed: { name: string }; product_count: number }) => [d.feed.name, d.product_count])).toEqual([
        ['Cheap', 1],
        ['Shirts', 2],
      ]);
      const paged = await h().request({ method: 'GET', url: '/api/v1/product-feeds?perPage=1&page=2', key: ws.apiKey });
      expect(paged.json().data.map((d: { feed: { name: string } }) => d.feed.name)).toEqual(['Shirts']);
    });

    it('GET /product-feeds/{id} answers {feed, product_count}; preview=N adds the first N products in plain order', async () => {
      const ws = await catalog();
      const { feed } = (await create(ws, { name: 'By price', sort_by: 'price_asc' })).json();
      const plain = await get(ws, feed.id);
      expect(plain.statusCode).toBe(200);
      expect(plain.json()).toEqual({ feed, product_count: 4 });
      const preview = await get(ws, feed.id, '?preview=2');
      expect(preview.json().product_count).toBe(4);
      expect(preview.json().products.map((p: { external_id: string }) => p.external_id)).toEqual(['a', 'c']);
      // Products in the catalog's read shape.
      const first = preview.json().products[0];
      expect(first).toMatchObject({ external_id: 'a', title: 'Alpha Shirt', price: 10, categories: ['Shirts', 'Summer'] });
      expect(first.variants).toHaveLength(2);
      expect(first.source).toBe('website:shop.test');
    });

    it('preview of a personalised type falls back to the plain ordering', async () => {
      const ws = await catalog();
      const { feed } = (await create(ws, { name: 'For you', recommendation_type: 'recently_viewed', sort_by: 'title_asc' })).json();
      const res = await get(ws, feed.id, '?preview=10');
      expect(res.json().products.map((p: { external_id: string }) => p.external_id)).toEqual(['a', 'b', 'd', 'c']);
    });

    it('preview must be a whole number from 1 to 100', async () => {
      const ws = await catalog();
      const { feed } = (await create(ws, { name: 'p' })).json();
      for (const bad of ['0', '101', 'x', '1.5']) {
        const res = await get(ws, feed.id, `?preview=${bad}`);
        expect(res.statusCode, bad).toBe(400);
        expect(res.json().error).toContain('preview');
      }
    });

    it('PUT changes only the fields sent', async () => {
      const ws = await catalog();
      const { feed } = (await create(ws, { name: 'Shirts', categories: ['Shirts'], price_min: 5, sort_by: 'title_asc' })).json();
      await tick();
      const res = await put(ws, feed.id, { max_items: 3, exclude_categories: ['Summer'] });
      expect(res.statusCode).toBe(200);
      expect(res.json().feed).toMatchObject({
        id: feed.id,
        name: 'Shirts',
        categories: ['Shirts'],
        price_min: 5,
        sort_by: 'title_asc',
        max_items: 3,
        exclude_categories: ['Summer'],
        created_at: feed.created_at,
      });
      expect(res.json().feed.updated_at >= feed.updated_at).toBe(true);
      expect(res.json().product_count).toBe(1);
      expect((await get(ws, feed.id)).json().feed).toEqual(res.json().feed);
    });

    it('PUT clear_stock_min / clear_stock_max remove a bound; null clears the others', async () => {
      const ws = await catalog();
      const { feed } = (await create(ws, { name: 's', stock_min: 1, stock_max: 10, price_max: 40, stock_status: 'in_stock' })).json();
      expect((await get(ws, feed.id)).json().product_count).toBe(1);
      const cleared = await put(ws, feed.id, { clear_stock_min: true });
      expect(cleared.json().feed).toMatchObject({ stock_min: null, stock_max: 10 });
      expect(cleared.json().product_count).toBe(1);
      const both = await put(ws, feed.id, { clear_stock_max: true, price_max: null, stock_status: null });
      expect(both.json().feed).toMatchObject({ stock_min: null, stock_max: null, price_max: null, stock_status: null });
      expect(both.json().product_count).toBe(4);
      expect((await put(ws, feed.id, { clear_stock_min: 'yes' })).statusCode).toBe(400);
    });

    it('DELETE removes the feed: 204, then 404', async () => {
      const ws = await catalog();
      const { feed } = (await create(ws, { name: 'gone' })).json();
      const res = await h().request({ method: 'DELETE', url: `/api/v1/product-feeds/${feed.id}`, key: ws.apiKey });
      expect(res.statusCode).toBe(204);
      expect((await get(ws, feed.id)).statusCode).toBe(404);
      const again = await h().request({ method: 'DELETE', url: `/api/v1/product-feeds/${feed.id}`, key: ws.apiKey });
      expect(again.statusCode).toBe(404);
    });

    it('unknown ids answer 404 {error: "not found"} on every path', async () => {
      const ws = await catalog();
      for (const [method, url] of [
        ['GET', '/api/v1/product-feeds/nope'],
        ['PUT', '/api/v1/product-feeds/nope'],
        ['DELETE', '/api/v1/product-feeds/nope'],
        ['GET', '/api/v1/product-feeds/nope/products'],
      ] as const) {
        const res = await h().request({ method, url, key: ws.apiKey, ...(method === 'PUT' ? { json: { name: 'x' } } : {}) });
        expect(res.statusCode, `${method} ${url}`).toBe(404);
        expect(res.json().error).toBe('not found');
      }
    });

    it('feeds and products of one workspace are invisible to another', async () => {
      const mine = await catalog();
      const other = await h().workspace('Other shop');
      const { feed } = (await create(mine, { name: 'mine' })).json();
      expect((await get(other, feed.id)).statusCode).toBe(404);
      expect((await put(other, feed.id, { name: 'taken' })).statusCode).toBe(404);
      const del = await h().request({ method: 'DELETE', url: `/api/v1/product-feeds/${feed.id}`, key: other.apiKey });
      expect(del.statusCode).toBe(404);
      const list = await h().request({ method: 'GET', url: '/api/v1/product-feeds', key: other.apiKey });
      expect(list.json().data).toEqual([]);
      // The other workspace's feed counts only its own (empty) catalog.
      expect((await create(other, { name: 'empty' })).json().product_count).toBe(0);
      expect((await get(mine, feed.id)).json().feed.name).toBe('mine');
    });

    it('requires the API key', async () => {
      const res = await h().request({ method: 'GET', url: '/api/v1/product-feeds' });
      expect(res.statusCode).toBe(401);
    });
  });

  describe('filters', () => {
    it('categories any / all', async () => {
      expect(await matches({ categories: ['Shirts', 'Summer'] })).toEqual(['d', 'c', 'a']);
      expect(await matches({ categories: ['Shirts', 'Summer'], categories_op: 'all' })).toEqual(['a']);
      expect(await matches({ categories: ['shirts'] })).toEqual([]);
    });

    it('exclude_categories any / all', async () => {
      expect(await matches({ exclude_categories: ['Summer'] })).toEqual(['d', 'b']);
      expect(await matches({ exclude_categories: ['Shirts', 'Summer'] })).toEqual(['b']);
      expect(await matches({ exclude_categories: ['Shirts', 'Summer'], exclude_categories_op: 'all' })).toEqual(['d', 'c', 'b']);
      expect(await matches({ categories: ['Summer'], exclude_categories: ['Hats'] })).toEqual(['a']);
    });

    it('price bounds, inclusive', async () => {
      expect(await matches({ price_min: 20 })).toEqual(['d', 'c', 'b']);
      expect(await matches({ price_max: 20 })).toEqual(['c', 'a']);
      expect(await matches({ price_min: 15, price_max: 35 })).toEqual(['c', 'b']);
      expect(await matches({ price_min: 10, price_max: 10 })).toEqual(['a']);
    });

    it('stock bounds exclude products of unknown quantity', async () => {
      expect(await matches({ stock_min: 0 })).toEqual(['d', 'c', 'a']);
      expect(await matches({ stock_max: 5 })).toEqual(['c', 'a']);
      expect(await matches({ stock_min: 1, stock_max: 10 })).toEqual(['a']);
      expect(await matches({ stock_max: 1_000_000 })).not.toContain('b');
    });

    it('stock_status in_stock / out_of_stock', async () => {
      expect(await matches({ stock_status: 'in_stock' })).toEqual(['d', 'b', 'a']);
      expect(await matches({ stock_status: 'out_of_stock' })).toEqual(['c']);
    });

    it('source: only products from that integration', async () => {
      expect(await matches({ source: 'shopify:other.test' })).toEqual(['d']);
      expect(await matches({ source: 'website:shop.test' })).toEqual(['c', 'b', 'a']);
      expect(await matches({ source: 'website:elsewhere.test' })).toEqual([]);
    });

    it('metadata: every operator; several conditions must all hold', async () => {
      const one = (key: string, operator: string, value?: string) => matches({ metadata: [{ key, operator, value }] });
      expect(await one('material', 'equals', 'Cotton')).toEqual(['a']);
      expect(await one('material', 'equals', 'cotton')).toEqual([]);
      expect(await one('material', 'not_equals', 'Cotton')).toEqual(['d', 'c', 'b']);
      expect(await one('material', 'contains', 'linen')).toEqual(['b']);
      expect(await one('material', 'not_contains', 'linen')).toEqual(['d', 'c', 'a']);
      expect(await one('brand', 'exists')).toEqual(['d', 'a']);
      expect(await one('brand', 'not_exists')).toEqual(['c', 'b']);
      expect(
        await matches({
          metadata: [
            { key: 'brand', operator: 'exists' },
            { key: 'material', operator: 'not_exists' },
          ],
        }),
      ).toEqual(['d']);
    });

    it('variant_options: one variant must match every axis', async () => {
      expect(await matches({ variant_options: { Size: ['M'] } })).toEqual(['d', 'a']);
      // a has an M variant and a Blue variant, but no M and Blue variant.
      expect(await matches({ variant_options: { Size: ['M'], Color: ['Blue'] } })).toEqual(['d']);
      expect(await matches({ variant_options: { Size: ['L'], Color: ['Blue'] } })).toEqual(['a']);
      expect(await matches({ variant_options: { Size: ['M', 'L'], Color: ['Red', 'Blue'] } })).toEqual(['d', 'a']);
      expect(await matches({ variant_options: { Fit: ['Slim'] } })).toEqual([]);
    });

    it('variant_in_stock: the matching variant must be in stock', async () => {
      expect(await matches({ variant_options: { Size: ['L'] }, variant_in_stock: true })).toEqual([]);
      expect(await matches({ variant_options: { Size: ['M', 'L'] }, variant_in_stock: true })).toEqual(['d', 'a']);
      expect(await matches({ variant_options: { Color: ['Blue'] }, variant_in_stock: true })).toEqual(['d']);
      expect(await matches({ variant_in_stock: true })).toEqual(['d', 'a']);
    });

    it('filters combine', async () => {
      expect(await matches({ categories: ['Shirts'], price_max: 40, stock_status: 'in_stock' })).toEqual(['a']);
      expect(await matches({ categories: ['Summer'], stock_min: 0, metadata: [{ key: 'brand', operator: 'not_exists' }] })).toEqual(['c']);
    });

    it('product_count follows the catalog: a new matching product is counted', async () => {
      const ws = await shop();
      const { feed } = (await create(ws, { name: 'Shirts', categories: ['Shirts'] })).json();
      expect((await get(ws, feed.id)).json().product_count).toBe(2);
      await send({ workspaceId: ws.id, platform: 'website', domain: 'shop.test' }, { external_id: 'e', title: 'Epsilon Shirt', price: 5, categories: ['Shirts'] });
      expect((await get(ws, feed.id)).json().product_count).toBe(3);
    });
  });

  describe('orderings', () => {
    it('sort_by newest (default), price_asc, price_desc, title_asc', async () => {
      expect(await matches({})).toEqual(['d', 'c', 'b', 'a']);
      expect(await matches({ sort_by: 'newest' })).toEqual(['d', 'c', 'b', 'a']);
      expect(await matches({ sort_by: 'price_asc' })).toEqual(['a', 'c', 'b', 'd']);
      expect(await matches({ sort_by: 'price_desc' })).toEqual(['d', 'b', 'c', 'a']);
      // Titles compare without regard to case: beta sorts before Delta.
      expect(await matches({ sort_by: 'title_asc' })).toEqual(['a', 'b', 'd', 'c']);
    });

    const products = async (ws: TestWorkspace, id: string, query = '') => {
      const res = await h().request({ method: 'GET', url: `/api/v1/product-feeds/${id}/products${query}`, key: ws.apiKey });
      expect(res.statusCode, res.body).toBe(200);
      return res.json().data.map((p: { external_id: string }) => p.external_id);
    };

    it('GET /product-feeds/{id}/products: at most max_items by default, limit overrides', async () => {
      const ws = await catalog();
      const { feed } = (await create(ws, { name: 'two', max_items: 2, sort_by: 'price_desc' })).json();
      expect(await products(ws, feed.id)).toEqual(['d', 'b']);
      expect(await products(ws, feed.id, '?limit=3')).toEqual(['d', 'b', 'c']);
      expect(await products(ws, feed.id, '?contact_id=someone')).toEqual(['d', 'b']);
      const bad = await h().request({ method: 'GET', url: `/api/v1/product-feeds/${feed.id}/products?limit=0`, key: ws.apiKey });
      expect(bad.statusCode).toBe(400);
      expect(bad.json().error).toContain('limit');
    });

    it('recommendation_type newest orders newest first whatever sort_by says', async () => {
      const ws = await catalog();
      const { feed } = (await create(ws, { name: 'new', recommendation_type: 'newest', sort_by: 'price_asc' })).json();
      expect(await products(ws, feed.id)).toEqual(['d', 'c', 'b', 'a']);
    });

    it('recommendation_type random returns the matched products in some order', async () => {
      const ws = await catalog();
      const { feed } = (await create(ws, { name: 'rnd', recommendation_type: 'random', categories: ['Shirts', 'Summer'] })).json();
      const seen = new Set<string>();
      for (let i = 0; i < 20; i++) {
        const ids = await products(ws, feed.id);
        expect([...ids].sort()).toEqual(['a', 'c', 'd']);
        seen.add(ids.join(','));
      }
      expect(seen.size).toBeGreaterThan(1);
    });

    it('a store-wide ranking with no sales or views is empty (no error); its preview stays in plain order', async () => {
      const ws = await catalog();
      const { feed } = (await create(ws, { name: 'bs', recommendation_type: 'best_selling', sort_by: 'price_asc' })).json();
      expect(await products(ws, feed.id)).toEqual([]);
      expect((await get(ws, feed.id, '?preview=4')).json().products.map((p: { external_id: string }) => p.external_id)).toEqual(['a', 'c', 'b', 'd']);
    });

    it('the filters apply to every type (per-recipient types without a recipient: the plain ordering)', async () => {
      const ws = await catalog();
      for (const type of ['newest', 'random', 'recently_viewed', 'may_also_like']) {
        const { feed } = (await create(ws, { name: type, recommendation_type: type, price_max: 20 })).json();
        expect((await products(ws, feed.id)).sort(), type).toEqual(['a', 'c']);
      }
    });
  });
});
