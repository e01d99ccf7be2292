import { describe, expect, it } from 'vitest';
import { describeEachDatabase, type TestWorkspace } from './helpers/harness.js';
import { summariseVariants } from '../src/domain/products/product-service.js';

type ProductEvent = 'product_created' | 'product_updated' | 'product_deleted';
type Integration = { workspaceId: string; platform: string; domain: string };

const PRODUCT_KEYS = [
  'categories',
  'compare_at_price',
  'created_at',
  'currency',
  'description',
  'external_id',
  'id',
  'image_url',
  'in_stock',
  'metadata',
  'platform',
  'price',
  'product_type',
  'source',
  'stock_qty',
  'synced_at',
  'title',
  'url',
  'variants',
  'weight',
];
const VARIANT_KEYS = [
  'compare_at_price',
  'external_id',
  'image_url',
  'in_stock',
  'options',
  'position',
  'price',
  'sku',
  'stock_qty',
  'title',
  'url',
];

const tick = () => new Promise((r) => setTimeout(r, 5));

describeEachDatabase('product catalog', (h, dialect) => {
  /** The workspace's own Website integration (platform `website`, domain `shop.test`). */
  const website = (ws: TestWorkspace): Integration => ({ workspaceId: ws.id, platform: 'website', domain: 'shop.test' });

  const send = (integration: Integration, eventType: ProductEvent, product: unknown) =>
    h().services.db.knex.transaction((trx) => h().services.products.applyWebhookEvent(trx, integration, eventType, product));

  const upsert = (ws: TestWorkspace, product: unknown) => send(website(ws), 'product_updated', product);

  const list = async (ws: TestWorkspace, query = '') => {
    const res = await h().request({ method: 'GET', url: `/api/v1/ecommerce/products${query}`, key: ws.apiKey });
    expect(res.statusCode).toBe(200);
    return res.json();
  };

  /** The product of that external id on `platform`, read back through the API. */
  const read = async (ws: TestWorkspace, externalId: string, platform = 'website') => {
    const body = await list(ws, `?platform=${platform}&external_id=${encodeURIComponent(externalId)}`);
    expect(body.data.length).toBeLessThanOrEqual(1);
    return body.data[0];
  };

  const base = { external_id: 'p-1', title: 'Linen Shirt', price: 49 };

  describe('the Product table, field by field', () => {
    it('external_id is required: a product without it is invalid and nothing is stored', async () => {
      const ws = await h().workspace();
      expect(await upsert(ws, { title: 'No id', price: 5 })).toBe('invalid');
      expect(await upsert(ws, { external_id: '  ', title: 'Blank id', price: 5 })).toBe('invalid');
      expect((await list(ws)).meta.total).toBe(0);
    });

    it('external_id sent as a number is stored as text', async () => {
      const ws = await h().workspace();
      expect(await upsert(ws, { ...base, external_id: 8_123_456_789 })).toBe('applied');
      expect((await read(ws, '8123456789')).external_id).toBe('8123456789');
    });

    it('title is required: a product without a title is invalid', async () => {
      const ws = await h().workspace();
      expect(await upsert(ws, { external_id: 'p-1', price: 5 })).toBe('invalid');
      expect(await upsert(ws, { external_id: 'p-1', title: '', price: 5 })).toBe('invalid');
      expect((await list(ws)).meta.total).toBe(0);
    });

    it('price is the unit price as sent', async () => {
      const ws = await h().workspace();
      await upsert(ws, { ...base, price: 19.99 });
      expect((await read(ws, 'p-1')).price).toBe(19.99);
      await upsert(ws, { ...base, price: '21.50' });
      expect((await read(ws, 'p-1')).price).toBe(21.5);
    });

    it('a later price of 0 never overwrites a known price', async () => {
      const ws = await h().workspace();
      await upsert(ws, { ...base, price: 49 });
      expect(await upsert(ws, { ...base, price: 0, title: 'Renamed' })).toBe('applied');
      const product = await read(ws, 'p-1');
      expect(product.title).toBe('Renamed');
      expect(product.price).toBe(49);
    });

    it('a missing price never overwrites a known price', async () => {
      const ws = await h().workspace();
      await upsert(ws, { ...base, price: 49 });
      await upsert(ws, { external_id: 'p-1', title: 'Linen Shirt', description: 'now with a description' });
      const product = await read(ws, 'p-1');
      expect(product.description).toBe('now with a description');
      expect(product.price).toBe(49);
    });

    it('a new product with price 0 stores 0', async () => {
      const ws = await h().workspace();
      await upsert(ws, { ...base, price: 0 });
      expect((await read(ws, 'p-1')).price).toBe(0);
    });

    it('a price of 0 racing the first delivery of a product still never overwrites its price', async () => {
      const ws = await h().workspace();
      const { knex } = h().services.db;
      let release!: () => void;
      const gate = new Promise<void>((r) => (release = r));
      let written!: () => void;
      const firstWritten = new Promise<void>((r) => (written = r));
      const first = knex.transaction(async (trx) => {
        const result = await h().services.products.applyWebhookEvent(trx, website(ws), 'product_created', base);
        written();
        await gate;
        return result;
      });
      await firstWritten;
      // PostgreSQL: the second reads no row yet and waits on the first's insert; SQLite: it waits for the writer
      // (the one connection). Released only once it is seen waiting, so the race surely happens.
      const second = send(website(ws), 'product_updated', { ...base, price: 0, title: 'Second' });
      const waiting = async () =>
        dialect === 'postgres'
          ? Number(
              (await knex.raw("SELECT count(*) AS n FROM pg_stat_activity WHERE datname = current_database() AND wait_event_type = 'Lock'"))
                .rows[0].n,
            ) > 0
          : (knex.client.pool as { numPendingAcquires(): number }).numPendingAcquires() > 0;
      while (!(await waiting())) await new Promise((r) => setTimeout(r, 10));
      release();
      expect(await first).toBe('applied');
      expect(await second).toBe('applied');
      expect(await read(ws, 'p-1')).toMatchObject({ title: 'Second', price: 49 });
    });

    it('a later positive price replaces the known price', async () => {
      const ws = await h().workspace();
      await upsert(ws, { ...base, price: 49 });
      await upsert(ws, { ...base, price: 39 });
      expect((await read(ws, 'p-1')).price).toBe(39);
    });

    it('currency defaults to USD', async () => {
      const ws = await h().workspace();
      await upsert(ws, base);
      expect((await read(ws, 'p-1')).currency).toBe('USD');
      await upsert(ws, { ...base, currency: 'eur' });
      expect((await read(ws, 'p-1')).currency).toBe('EUR');
      expect(await upsert(ws, { ...base, currency: 'euro' })).toBe('invalid');
    });

    it('url and image_url are stored as sent', async () => {
      const ws = await h().workspace();
      const url = 'https://shop.test/products/linen-shirt?variant=1';
      const image_url = 'https://cdn.shop.test/img/linen.jpg';
      await upsert(ws, { ...base, url, image_url });
      expect(await read(ws, 'p-1')).toMatchObject({ url, image_url });
    });

    it('in_stock is stored as sent (false is sold, not unknown)', async () => {
      const ws = await h().workspace();
      await upsert(ws, { ...base, in_stock: false, stock_qty: 7 });
      expect((await read(ws, 'p-1')).in_stock).toBe(false);
      await upsert(ws, { ...base, in_stock: true, stock_qty: 0 });
      expect((await read(ws, 'p-1')).in_stock).toBe(true);
    });

    it('in_stock not sent follows stock_qty, and stays unknown without one', async () => {
      const ws = await h().workspace();
      await upsert(ws, { ...base, stock_qty: 3 });
      expect((await read(ws, 'p-1')).in_stock).toBe(true);
      await upsert(ws, { ...base, stock_qty: 0 });
      expect((await read(ws, 'p-1')).in_stock).toBe(false);
      await upsert(ws, base);
      expect((await read(ws, 'p-1')).in_stock).toBeNull();
    });

    it('stock_qty null means unknown and 0 means sold out', async () => {
      const ws = await h().workspace();
      await upsert(ws, { ...base, external_id: 'unknown', stock_qty: null });
      await upsert(ws, { ...base, external_id: 'sold-out', stock_qty: 0 });
      expect((await read(ws, 'unknown')).stock_qty).toBeNull();
      expect((await read(ws, 'sold-out')).stock_qty).toBe(0);
      expect(await upsert(ws, { ...base, stock_qty: 1.5 })).toBe('invalid');
    });

    it('categories are shown as sent', async () => {
      const ws = await h().workspace();
      const categories = ['Summer Sale', 'shirts', 'Äpfel & Birnen'];
      await upsert(ws, { ...base, categories });
      expect((await read(ws, 'p-1')).categories).toEqual(categories);
    });

    it('compare_at_price is the original price, or null', async () => {
      const ws = await h().workspace();
      await upsert(ws, { ...base, price: 39, compare_at_price: 49.95 });
      expect((await read(ws, 'p-1')).compare_at_price).toBe(49.95);
      await upsert(ws, { ...base, price: 39, compare_at_price: null });
      expect((await read(ws, 'p-1')).compare_at_price).toBeNull();
    });

    it('description is the long description, stored as sent', async () => {
      const ws = await h().workspace();
      const description = 'Line one.\n\n  Line two, with <b>markup</b> and “quotes”.';
      await upsert(ws, { ...base, description });
      expect((await read(ws, 'p-1')).description).toBe(description);
    });

    it('product_type is independent of categories', async () => {
      const ws = await h().workspace();
      await upsert(ws, { ...base, product_type: 'Apparel', categories: ['Shirts'] });
      expect(await read(ws, 'p-1')).toMatchObject({ product_type: 'Apparel', categories: ['Shirts'] });
      await upsert(ws, { ...base, product_type: 'Apparel' });
      expect(await read(ws, 'p-1')).toMatchObject({ product_type: 'Apparel', categories: [] });
    });

    it('weight is stored, not interpreted', async () => {
      const ws = await h().workspace();
      await upsert(ws, { ...base, weight: 1234.5678 });
      expect((await read(ws, 'p-1')).weight).toBe(1234.5678);
    });

    it('variants become the variant rows, in the order sent, with every variant field', async () => {
      const ws = await h().workspace();
      const variants = [
        {
          external_id: 'v-m',
          sku: 'LS-M',
          title: 'M / Blue',
          options: { size: 'M', color: 'Blue' },
          price: 49,
          compare_at_price: 59,
          in_stock: true,
          stock_qty: 4,
          image_url: 'https://cdn.shop.test/m.jpg',
          url: 'https://shop.test/p?v=m',
          position: 1,
        },
        { external_id: 'v-s', sku: 'LS-S', title: 'S / Blue', options: { size: 'S', color: 'Blue' }, price: 45 },
      ];
      await upsert(ws, { ...base, variants });
      const product = await read(ws, 'p-1');
      expect(product.variants).toHaveLength(2);
      expect(Object.keys(product.variants[0]).sort()).toEqual(VARIANT_KEYS);
      expect(product.variants[0]).toEqual(variants[0]);
      expect(product.variants[1]).toEqual({
        ...variants[1],
        compare_at_price: null,
        in_stock: null,
        stock_qty: null,
        image_url: null,
        url: null,
        position: 2,
      });
    });

    it('variants sent with the same position keep the order they were sent in', async () => {
      const ws = await h().workspace();
      const ids = Array.from({ length: 12 }, (_, i) => `v-${(i * 7) % 12}`);
      await upsert(ws, { ...base, variants: ids.map((external_id) => ({ external_id, position: 1 })) });
      expect((await read(ws, 'p-1')).variants.map((v: { external_id: string }) => v.external_id)).toEqual(ids);
    });

    it("a variant's external_id is its own, never the product's", async () => {
      const ws = await h().workspace();
      await upsert(ws, { ...base, variants: [{ external_id: 'v-1', price: 5 }] });
      const product = await read(ws, 'p-1');
      expect(product.external_id).toBe('p-1');
      expect(product.variants[0].external_id).toBe('v-1');
      expect(await read(ws, 'v-1')).toBeUndefined();
    });

    it("variants set the parent's price: the lowest variant price above 0", async () => {
      const ws = await h().workspace();
      await upsert(ws, {
        ...base,
        price: 99,
        variants: [
          { external_id: 'a', price: 0 },
          { external_id: 'b', price: 45.5 },
          { external_id: 'c', price: 52 },
          { external_id: 'd' },
        ],
      });
      expect((await read(ws, 'p-1')).price).toBe(45.5);
    });

    it("variants set the parent's stock: stock_qty is their sum, in_stock is any variant in stock", async () => {
      const ws = await h().workspace();
      await upsert(ws, {
        ...base,
        stock_qty: 100,
        in_stock: false,
        variants: [
          { external_id: 'a', stock_qty: 0, in_stock: false },
          { external_id: 'b', stock_qty: 3, in_stock: true },
          { external_id: 'c', stock_qty: null },
        ],
      });
      expect(await read(ws, 'p-1')).toMatchObject({ stock_qty: 3, in_stock: true });
      await upsert(ws, {
        ...base,
        variants: [
          { external_id: 'a', stock_qty: 0, in_stock: false },
          { external_id: 'b', stock_qty: 0, in_stock: false },
        ],
      });
      expect(await read(ws, 'p-1')).toMatchObject({ stock_qty: 0, in_stock: false });
    });

    it('stock_qty stays null when no variant tracks stock', async () => {
      const ws = await h().workspace();
      await upsert(ws, {
        ...base,
        stock_qty: 5,
        variants: [
          { external_id: 'a', in_stock: true },
          { external_id: 'b', stock_qty: null, in_stock: false },
        ],
      });
      expect(await read(ws, 'p-1')).toMatchObject({ stock_qty: null, in_stock: true });
    });

    it('sending variants replaces all stored variants', async () => {
      const ws = await h().workspace();
      await upsert(ws, { ...base, variants: [{ external_id: 'a' }, { external_id: 'b' }] });
      await upsert(ws, { ...base, variants: [{ external_id: 'c', sku: 'C' }] });
      const product = await read(ws, 'p-1');
      expect(product.variants.map((v: { external_id: string }) => v.external_id)).toEqual(['c']);
      const rows = await h().services.db.knex('product_variants').where({ product_id: product.id });
      expect(rows).toHaveLength(1);
    });

    it('omitting variants leaves stored variants alone', async () => {
      const ws = await h().workspace();
      await upsert(ws, { ...base, variants: [{ external_id: 'a', price: 10 }, { external_id: 'b', price: 12 }] });
      await upsert(ws, { ...base, title: 'Renamed' });
      const product = await read(ws, 'p-1');
      expect(product.title).toBe('Renamed');
      expect(product.variants.map((v: { external_id: string }) => v.external_id)).toEqual(['a', 'b']);
    });

    it('variants: [] clears them', async () => {
      const ws = await h().workspace();
      await upsert(ws, { ...base, variants: [{ external_id: 'a' }, { external_id: 'b' }] });
      await upsert(ws, { ...base, variants: [] });
      const product = await read(ws, 'p-1');
      expect(product.variants).toEqual([]);
      expect(await h().services.db.knex('product_variants').where({ product_id: product.id })).toHaveLength(0);
      // `null` is an explicit "no variants" too.
      await upsert(ws, { ...base, variants: [{ external_id: 'c' }] });
      await upsert(ws, { ...base, variants: null });
      expect((await read(ws, 'p-1')).variants).toEqual([]);
    });

    it('metadata is a string-to-string object', async () => {
      const ws = await h().workspace();
      await upsert(ws, { ...base, metadata: { brand: 'Acme', pack_size: 6, organic: true, dropped: null } });
      expect((await read(ws, 'p-1')).metadata).toEqual({ brand: 'Acme', pack_size: '6', organic: 'true' });
      expect(await upsert(ws, { ...base, metadata: { nested: { a: 1 } } })).toBe('invalid');
      expect(await upsert(ws, { ...base, metadata: ['a'] })).toBe('invalid');
    });

    it('platform is taken from the integration the write arrived on, never from the payload', async () => {
      const ws = await h().workspace();
      await upsert(ws, { ...base, platform: 'shopify', source: 'forged:x' });
      const product = await read(ws, 'p-1');
      expect(product).toMatchObject({ platform: 'website', source: 'website:shop.test' });
      expect(await read(ws, 'p-1', 'shopify')).toBeUndefined();
    });

    it('source is platform:shop_domain of the writing integration', async () => {
      const ws = await h().workspace();
      await send({ workspaceId: ws.id, platform: 'shopify', domain: 'acme.myshopify.com' }, 'product_created', base);
      expect((await read(ws, 'p-1', 'shopify')).source).toBe('shopify:acme.myshopify.com');
      const bySource = await list(ws, '?source=shopify:acme.myshopify.com');
      expect(bySource.data.map((p: { external_id: string }) => p.external_id)).toEqual(['p-1']);
    });

    it('synced_at is bumped on every applied write', async () => {
      const ws = await h().workspace();
      await upsert(ws, base);
      const first = await read(ws, 'p-1');
      await tick();
      await upsert(ws, { ...base, title: 'Changed' });
      const second = await read(ws, 'p-1');
      expect(Date.parse(second.synced_at)).toBeGreaterThan(Date.parse(first.synced_at));
      expect(second.created_at).toBe(first.created_at);
    });

    it('the same external_id on two platforms is two products', async () => {
      const ws = await h().workspace();
      await upsert(ws, { ...base, title: 'On the website' });
      await send({ workspaceId: ws.id, platform: 'shopify', domain: 'acme.myshopify.com' }, 'product_created', {
        ...base,
        title: 'On Shopify',
      });
      expect((await read(ws, 'p-1', 'website')).title).toBe('On the website');
      expect((await read(ws, 'p-1', 'shopify')).title).toBe('On Shopify');
      expect((await list(ws, '?external_id=p-1')).meta.total).toBe(2);
    });

    it('manual products get a generated external_id', async () => {
      const ws = await h().workspace();
      const res = await h().request({
        method: 'POST',
        url: '/api/v1/ecommerce/products',
        key: ws.apiKey,
        json: { title: 'Hand-made mug', price: 12 },
      });
      expect(res.statusCode).toBe(201);
      const product = res.json();
      expect(product.external_id).toMatch(/^man_[A-Za-z0-9]{20}$/);
      expect(product).toMatchObject({ platform: 'manual', source: 'manual' });
    });

    it('the read shape has every write field name, plus id, platform, source, synced_at, created_at', async () => {
      const ws = await h().workspace();
      await upsert(ws, { ...base, variants: [{ external_id: 'v' }] });
      const product = await read(ws, 'p-1');
      expect(Object.keys(product).sort()).toEqual(PRODUCT_KEYS);
      expect(Object.keys(product.variants[0]).sort()).toEqual(VARIANT_KEYS);
      expect(product).toMatchObject({
        url: null,
        image_url: null,
        in_stock: null,
        stock_qty: null,
        categories: [],
        compare_at_price: null,
        description: null,
        product_type: null,
        weight: null,
      });
      expect(product.metadata).toEqual({});
      expect(new Date(product.synced_at).toISOString()).toBe(product.synced_at);
    });
  });

  describe('webhook rule 8: product events', () => {
    it('product events upsert by (platform, external_id)', async () => {
      const ws = await h().workspace();
      expect(await send(website(ws), 'product_created', base)).toBe('applied');
      const created = await read(ws, 'p-1');
      expect(await send(website(ws), 'product_updated', { ...base, title: 'Updated' })).toBe('applied');
      expect(await send(website(ws), 'product_created', { ...base, title: 'Created again' })).toBe('applied');
      const body = await list(ws);
      expect(body.meta.total).toBe(1);
      expect(body.data[0]).toMatchObject({ id: created.id, title: 'Created again' });
    });

    it('product_updated for an unseen product creates it', async () => {
      const ws = await h().workspace();
      expect(await send(website(ws), 'product_updated', base)).toBe('applied');
      expect((await read(ws, 'p-1')).title).toBe('Linen Shirt');
    });

    it('the whole product is sent each time: omitted fields are cleared', async () => {
      const ws = await h().workspace();
      await upsert(ws, {
        ...base,
        currency: 'EUR',
        url: 'https://shop.test/p',
        image_url: 'https://cdn.shop.test/p.jpg',
        in_stock: true,
        stock_qty: 4,
        categories: ['Shirts'],
        compare_at_price: 59,
        description: 'Long text',
        product_type: 'Apparel',
        weight: 0.3,
        metadata: { brand: 'Acme' },
      });
      await upsert(ws, { external_id: 'p-1', title: 'Bare' });
      const product = await read(ws, 'p-1');
      // toMatchObject takes `{}` as "any object": metadata is checked exactly below.
      expect(product.metadata).toEqual({});
      expect(product).toMatchObject({
        title: 'Bare',
        price: 49,
        currency: 'USD',
        url: null,
        image_url: null,
        in_stock: null,
        stock_qty: null,
        categories: [],
        compare_at_price: null,
        description: null,
        product_type: null,
        weight: null,
      });
    });

    it('an identical redelivery is ignored and does not bump synced_at', async () => {
      const ws = await h().workspace();
      const payload = { ...base, categories: ['a', 'b'], metadata: { x: '1', y: '2' }, variants: [{ external_id: 'v' }] };
      expect(await upsert(ws, payload)).toBe('applied');
      const first = await read(ws, 'p-1');
      await tick();
      // Same product, keys in another order: still identical.
      const reordered = { metadata: { y: '2', x: '1' }, variants: [{ external_id: 'v' }], ...base, categories: ['a', 'b'] };
      expect(await upsert(ws, reordered)).toBe('ignored');
      // Same values in another representation: still identical.
      expect(await upsert(ws, { ...payload, price: '49.00', external_id: 'p-1' })).toBe('ignored');
      expect((await read(ws, 'p-1')).synced_at).toBe(first.synced_at);
    });

    it('a changed payload is applied', async () => {
      const ws = await h().workspace();
      await upsert(ws, base);
      const first = await read(ws, 'p-1');
      await tick();
      expect(await upsert(ws, { ...base, categories: ['New'] })).toBe('applied');
      const second = await read(ws, 'p-1');
      expect(second.categories).toEqual(['New']);
      expect(Date.parse(second.synced_at)).toBeGreaterThan(Date.parse(first.synced_at));
      // Back to the first payload: a change too, so applied again.
      expect(await upsert(ws, base)).toBe('applied');
      expect((await read(ws, 'p-1')).categories).toEqual([]);
    });

    it('product_deleted removes the product and its variants from the catalog', async () => {
      const ws = await h().workspace();
      await upsert(ws, { ...base, variants: [{ external_id: 'a' }, { external_id: 'b' }] });
      const { id } = await read(ws, 'p-1');
      expect(await send(website(ws), 'product_deleted', { external_id: 'p-1' })).toBe('deleted');
      expect(await read(ws, 'p-1')).toBeUndefined();
      expect(await h().services.db.knex('product_variants').where({ product_id: id })).toHaveLength(0);
      expect(await send(website(ws), 'product_deleted', { external_id: 'p-1' })).toBe('ignored');
    });

    it('product_deleted needs only product.external_id and removes only that platform’s product', async () => {
      const ws = await h().workspace();
      const shopify = { workspaceId: ws.id, platform: 'shopify', domain: 'acme.myshopify.com' };
      await upsert(ws, base);
      await send(shopify, 'product_created', base);
      expect(await send(shopify, 'product_deleted', { external_id: 'p-1' })).toBe('deleted');
      expect(await read(ws, 'p-1', 'shopify')).toBeUndefined();
      expect(await read(ws, 'p-1', 'website')).toBeDefined();
      expect(await send(shopify, 'product_deleted', {})).toBe('invalid');
    });

    it('a product of the wrong shape is invalid, never an exception', async () => {
      const ws = await h().workspace();
      for (const product of [null, undefined, 'p-1', 42, [], { ...base, price: 'cheap' }, { ...base, variants: 'none' }]) {
        await expect(upsert(ws, product)).resolves.toBe('invalid');
      }
      await expect(send(website(ws), 'product_deleted', null)).resolves.toBe('invalid');
      expect((await list(ws)).meta.total).toBe(0);
    });

    it('an invalid product leaves the stored one as it was', async () => {
      const ws = await h().workspace();
      await upsert(ws, { ...base, description: 'kept' });
      expect(await upsert(ws, { ...base, stock_qty: 'lots' })).toBe('invalid');
      expect((await read(ws, 'p-1')).description).toBe('kept');
    });
  });

  describe('management API', () => {
    const post = (ws: TestWorkspace, json: unknown) =>
      h().request({ method: 'POST', url: '/api/v1/ecommerce/products', key: ws.apiKey, json });

    it('POST /ecommerce/products creates a manual product: 201 with the product', async () => {
      const ws = await h().workspace();
      const res = await post(ws, {
        external_id: 'm-1',
        title: 'Mug',
        price: '12.5',
        categories: ['Kitchen'],
        variants: [{ external_id: 'm-1-blue', options: { color: 'Blue' }, price: 12.5, stock_qty: 2 }],
        platform: 'website',
      });
      expect(res.statusCode).toBe(201);
      const product = res.json();
      expect(Object.keys(product).sort()).toEqual(PRODUCT_KEYS);
      expect(product).toMatchObject({
        external_id: 'm-1',
        title: 'Mug',
        price: 12.5,
        currency: 'USD',
        stock_qty: 2,
        in_stock: true,
        platform: 'manual',
        source: 'manual',
      });
      const again = await h().request({ method: 'GET', url: `/api/v1/ecommerce/products/${product.id}`, key: ws.apiKey });
      expect(again.statusCode).toBe(200);
      expect(again.json()).toEqual(product);
    });

    it('POST with a known external_id updates that manual product instead of duplicating it', async () => {
      const ws = await h().workspace();
      const first = (await post(ws, { external_id: 'm-1', title: 'Mug', price: 12 })).json();
      const res = await post(ws, { external_id: 'm-1', title: 'Big mug', price: 14 });
      expect(res.statusCode).toBe(200);
      expect(res.json()).toMatchObject({ id: first.id, title: 'Big mug', price: 14 });
      expect((await list(ws, '?platform=manual')).meta.total).toBe(1);
    });

    it('POST without an external_id twice makes two products', async () => {
      const ws = await h().workspace();
      const a = (await post(ws, { title: 'Mug', price: 12 })).json();
      const b = (await post(ws, { title: 'Mug', price: 12 })).json();
      expect(a.external_id).not.toBe(b.external_id);
      expect((await list(ws)).meta.total).toBe(2);
    });

    it('POST validation errors are 400s naming the field', async () => {
      const ws = await h().workspace();
      const cases: Array<[unknown, RegExp]> = [
        [{ price: 5 }, /^invalid request: title is required$/],
        [{ title: 'x', price: -1 }, /^invalid request: price must not be negative/],
        [{ title: 'x', price: 'cheap' }, /^invalid request: price must be a number/],
        [{ title: 'x', stock_qty: 2.5 }, /^invalid request: stock_qty /],
        [{ title: 'x', currency: 'dollars' }, /^invalid request: currency must be a three-letter ISO 4217 code/],
        [{ title: 'x', metadata: { a: { b: 1 } } }, /^invalid request: metadata\.a /],
        [{ title: 'x', categories: 'Shirts' }, /^invalid request: categories must be an array/],
        [{ title: 'x', variants: [{ price: 'free' }] }, /^invalid request: variants\[0\]\.price must be a number/],
        [{ title: 'x', in_stock: 'maybe' }, /^invalid request: in_stock must be a boolean/],
        [[1, 2], /^invalid request: body must be an object/],
      ];
      for (const [json, message] of cases) {
        const res = await post(ws, json);
        expect(res.statusCode, JSON.stringify(json)).toBe(400);
        expect(res.json().error).toMatch(message);
      }
      expect((await list(ws)).meta.total).toBe(0);
    });

    it('GET /ecommerce/products lists with {data, meta} and pages', async () => {
      const ws = await h().workspace();
      for (let i = 1; i <= 5; i++) await upsert(ws, { ...base, external_id: `p-${i}` });
      const page = await list(ws, '?page=2&perPage=2');
      expect(page.meta).toEqual({ page: 2, perPage: 2, total: 5 });
      expect(page.data).toHaveLength(2);
      const all = await list(ws, '?perPage=10');
      expect(new Set(all.data.map((p: { external_id: string }) => p.external_id)).size).toBe(5);
    });

    it('GET /ecommerce/products filters by platform, external_id and source', async () => {
      const ws = await h().workspace();
      await upsert(ws, { ...base, external_id: 'w-1' });
      await upsert(ws, { ...base, external_id: 'shared' });
      await send({ workspaceId: ws.id, platform: 'shopify', domain: 'a.myshopify.com' }, 'product_created', {
        ...base,
        external_id: 'shared',
      });
      await send({ workspaceId: ws.id, platform: 'shopify', domain: 'b.myshopify.com' }, 'product_created', {
        ...base,
        external_id: 's-b',
      });
      await post(ws, { external_id: 'm-1', title: 'Manual', price: 1 });
      const ids = async (query: string) =>
        (await list(ws, query)).data.map((p: { platform: string; external_id: string }) => `${p.platform}/${p.external_id}`).sort();
      expect(await ids('?platform=website')).toEqual(['website/shared', 'website/w-1']);
      expect(await ids('?platform=manual')).toEqual(['manual/m-1']);
      expect(await ids('?external_id=shared')).toEqual(['shopify/shared', 'website/shared']);
      expect(await ids('?source=shopify:b.myshopify.com')).toEqual(['shopify/s-b']);
      expect(await ids('?platform=shopify&external_id=shared')).toEqual(['shopify/shared']);
    });

    it('GET /ecommerce/products/{id} answers 404 {error:"not found"} for an unknown id', async () => {
      const ws = await h().workspace();
      for (const id of ['00000000-0000-7000-8000-000000000000', 'nope']) {
        const res = await h().request({ method: 'GET', url: `/api/v1/ecommerce/products/${id}`, key: ws.apiKey });
        expect(res.statusCode).toBe(404);
        expect(res.json().error).toBe('not found');
      }
    });

    it('the catalog routes need the API key', async () => {
      for (const [method, url] of [
        ['GET', '/api/v1/ecommerce/products'],
        ['GET', '/api/v1/ecommerce/products/x'],
        ['POST', '/api/v1/ecommerce/products'],
      ] as const) {
        const res = await h().request({ method, url, json: method === 'POST' ? { title: 'x' } : undefined });
        expect(res.statusCode).toBe(401);
      }
    });
  });

  describe('workspaces', () => {
    it("one workspace never sees or changes another's products", async () => {
      const a = await h().workspace('A');
      const b = await h().workspace('B');
      await upsert(a, { ...base, title: 'A shirt' });
      const aProduct = await read(a, 'p-1');
      expect((await list(b)).meta.total).toBe(0);
      const other = await h().request({ method: 'GET', url: `/api/v1/ecommerce/products/${aProduct.id}`, key: b.apiKey });
      expect(other.statusCode).toBe(404);
      // The same key in B is B's own product; deleting it in B leaves A's.
      await upsert(b, { ...base, title: 'B shirt' });
      expect((await read(b, 'p-1')).id).not.toBe(aProduct.id);
      expect(await send(website(b), 'product_deleted', { external_id: 'p-1' })).toBe('deleted');
      expect((await read(a, 'p-1')).title).toBe('A shirt');
      // A's identical payload is still "identical" for A only: B's first write of it is applied.
      expect(await upsert(b, { ...base, title: 'A shirt' })).toBe('applied');
    });
  });

  describe('imports are set-based', () => {
    it('a chunk of 1000 products takes a bounded number of statements', async () => {
      const ws = await h().workspace();
      const records = Array.from({ length: 1000 }, (_, i) => ({
        external_id: `bulk-${i}`,
        title: `Bulk ${i}`,
        price: 1 + i,
        variants: [{ external_id: `bulk-${i}-a` }, { external_id: `bulk-${i}-b` }],
      }));
      const knex = h().services.db.knex;
      let statements = 0;
      const count = () => statements++;
      knex.on('query', count);
      try {
        const first = await h().services.products.upsertManual(ws.id, records);
        expect(first.every((o) => 'status' in o && o.status === 'inserted')).toBe(true);
        const insertStatements = statements;
        statements = 0;
        const second = await h().services.products.upsertManual(
          ws.id,
          records.map((r) => ({ ...r, title: `${r.title}!` })),
        );
        expect(second.every((o) => 'status' in o && o.status === 'updated')).toBe(true);
        // One lookup, the upserts and variant inserts (a few rows-per-statement chunks), one variant delete,
        // the transaction's own statements: a dozen at most, never one a product.
        expect(insertStatements).toBeLessThanOrEqual(12);
        expect(statements).toBeLessThanOrEqual(12);
      } finally {
        knex.removeListener('query', count);
      }
      expect((await list(ws)).meta.total).toBe(1000);
      expect(await knex('product_variants').whereIn('product_id', knex('products').where({ workspace_id: ws.id }).select('id'))).toHaveLength(2000);
    });

    it('the same product twice in one chunk is applied in order', async () => {
      const ws = await h().workspace();
      const outcomes = await h().services.products.upsertManual(ws.id, [
        { external_id: 'dup', title: 'First', price: 10 },
        { external_id: 'dup', title: 'Second', price: 0 },
        { external_id: 'dup', title: 'Second', price: 0 },
      ]);
      expect(outcomes.map((o) => ('status' in o ? o.status : o.error))).toEqual(['inserted', 'updated', 'unchanged']);
      expect(await read(ws, 'dup', 'manual')).toMatchObject({ title: 'Second', price: 10 });
      expect((await list(ws)).meta.total).toBe(1);
    });

    it('a bad record is reported and the rest of the chunk is written', async () => {
      const ws = await h().workspace();
      const outcomes = await h().services.products.upsertManual(ws.id, [
        { external_id: 'ok-1', title: 'OK' },
        { external_id: 'bad', price: 3 },
        { external_id: 'ok-2', title: 'OK too' },
      ]);
      expect(outcomes[1]).toEqual({ error: 'title is required' });
      expect((await list(ws)).meta.total).toBe(2);
    });
  });
});

describe('summariseVariants', () => {
  const variant = (fields: Record<string, unknown>) => ({
    external_id: null,
    sku: null,
    title: null,
    options: null,
    price: null,
    compare_at_price: null,
    in_stock: null,
    stock_qty: null,
    image_url: null,
    url: null,
    position: null,
    ...fields,
  });

  it('a variant without in_stock counts as in stock when its quantity is above 0', () => {
    expect(summariseVariants([variant({ stock_qty: 2 }), variant({ stock_qty: 0 })]).in_stock).toBe(true);
    expect(summariseVariants([variant({ stock_qty: 0 })]).in_stock).toBe(false);
    expect(summariseVariants([variant({})]).in_stock).toBeNull();
  });
});
