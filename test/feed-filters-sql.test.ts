import { describe, expect, it } from 'vitest';
import { createFeedService } from '../src/domain/feeds/feed-service.js';
import type { FeedRanker } from '../src/domain/recommendations/rankings.js';
import { createFeedStore } from '../src/domain/feeds/feed-store.js';
import { DEFAULT_SETTINGS, type FeedSettings } from '../src/domain/feeds/feed.schema.js';
import { titleKey } from '../src/domain/products/product-filters.js';
import { describeEachDatabase } from './helpers/harness.js';

const collator = new Intl.Collator('en', { sensitivity: 'base', numeric: true });
/** The order title_asc had when feeds sorted in JavaScript (ties: exact title; newest is not needed here). */
const byCollator = (a: string, b: string) => collator.compare(a, b) || (a < b ? -1 : a > b ? 1 : 0);
const byKey = (a: string, b: string) => {
  const [ka, kb] = [titleKey(a), titleKey(b)];
  return ka < kb ? -1 : ka > kb ? 1 : a < b ? -1 : a > b ? 1 : 0;
};

describe('titleKey', () => {
  it('orders titles as Intl.Collator("en", base, numeric) does', () => {
    const alphabet = [...'aAbBeEzZéÉüÜñÅçøæßŁ0123456789 -_.,&/()\'!?#+$:;@[]{}|~^`<=>*%"\\’–—…€©«»•'];
    // A fixed pseudo-random corpus: the same on every run.
    let seed = 42;
    const next = (n: number) => ((seed = (seed * 1103515245 + 12345) % 2 ** 31), seed % n);
    const titles = Array.from({ length: 3000 }, () => Array.from({ length: 1 + next(7) }, () => alphabet[next(alphabet.length)]).join(''));
    titles.push('Item 10', 'item 9', 'Item 09', 'Éclair', 'eclair', 'Straße', 'strasse', 'Æon', 'aeon', 'ﬁsh', 'fish');
    expect([...titles].sort(byKey)).toEqual([...titles].sort(byCollator));
  });
});

type Integration = { workspaceId: string; platform: string; domain: string };

describeEachDatabase('feed filters in SQL', (h) => {
  const integrationOf = (workspaceId: string): Integration => ({ workspaceId, platform: 'website', domain: 'shop.test' });
  const send = (workspaceId: string, event: 'product_updated' | 'product_deleted', product: unknown) =>
    h().services.db.knex.transaction((trx) => h().services.products.applyWebhookEvent(trx, integrationOf(workspaceId), event, product));

  /** External ids the feed matches in its plain order, and its product_count. */
  const evaluate = async (workspaceId: string, body: Record<string, unknown>) => {
    const created = await h().services.feeds.create(workspaceId, { name: 'f', ...body });
    const reply = await h().services.feeds.get(workspaceId, created.feed.id, { preview: '100' });
    return { ids: reply.products!.map((p) => p.external_id), count: reply.product_count };
  };
  const filterRows = async (table: string, workspaceId: string) =>
    Number(
      (
        (await h().services.db.knex(table).whereIn('product_id', h().services.db.knex('products').where({ workspace_id: workspaceId }).select('id')).count({ n: '*' })) as Array<{
          n: number | string;
        }>
      )[0]!.n,
    );

  it('categories, metadata and variants follow product updates; a deleted product leaves feed and count', async () => {
    const ws = (await h().workspace()).id;
    await send(ws, 'product_updated', {
      external_id: 'p1',
      title: 'One',
      categories: ['Shirts'],
      metadata: { material: 'Cotton' },
      variants: [{ external_id: 'v1', options: { Size: 'M' }, in_stock: true }],
    });
    await send(ws, 'product_updated', { external_id: 'p2', title: 'Two', categories: ['Pants'] });
    expect(await evaluate(ws, { categories: ['Shirts'] })).toEqual({ ids: ['p1'], count: 1 });
    expect(await evaluate(ws, { metadata: [{ key: 'material', operator: 'contains', value: 'cot' }] })).toEqual({ ids: ['p1'], count: 1 });
    expect((await evaluate(ws, { variant_options: { Size: ['M'] } })).ids).toEqual(['p1']);

    // Categories and metadata replaced; variants replaced by a sold-out L.
    await send(ws, 'product_updated', {
      external_id: 'p1',
      title: 'One',
      categories: ['Pants', 'Sale'],
      metadata: { material: 'Linen' },
      variants: [{ external_id: 'v2', options: { Size: 'L' }, in_stock: false }],
    });
    expect(await evaluate(ws, { categories: ['Shirts'] })).toEqual({ ids: [], count: 0 });
    expect(await evaluate(ws, { categories: ['Pants'] })).toEqual({ ids: ['p2', 'p1'], count: 2 });
    expect((await evaluate(ws, { metadata: [{ key: 'material', operator: 'contains', value: 'cot' }] })).count).toBe(0);
    expect((await evaluate(ws, { metadata: [{ key: 'material', operator: 'equals', value: 'Linen' }] })).ids).toEqual(['p1']);
    expect((await evaluate(ws, { variant_options: { Size: ['M'] } })).ids).toEqual([]);
    expect((await evaluate(ws, { variant_options: { Size: ['L'] } })).ids).toEqual(['p1']);
    expect((await evaluate(ws, { variant_options: { Size: ['L'] }, variant_in_stock: true })).ids).toEqual([]);
    expect(await filterRows('product_categories', ws)).toBe(3);
    expect(await filterRows('product_variant_options', ws)).toBe(1);

    expect(await send(ws, 'product_deleted', { external_id: 'p1' })).toBe('deleted');
    expect(await evaluate(ws, { categories: ['Pants'] })).toEqual({ ids: ['p2'], count: 1 });
    expect((await evaluate(ws, { metadata: [{ key: 'material', operator: 'not_equals', value: 'x' }] })).ids).toEqual(['p2']);
    expect(await filterRows('product_categories', ws)).toBe(1);
    expect(await filterRows('product_metadata', ws)).toBe(0);
    expect(await filterRows('product_variant_options', ws)).toBe(0);
  });

  it('contains matches text, not LIKE wildcards, whatever its case', async () => {
    const ws = (await h().workspace()).id;
    await send(ws, 'product_updated', { external_id: 'pct', title: 'A', metadata: { promo: '50% OFF_NOW' } });
    await send(ws, 'product_updated', { external_id: 'plain', title: 'B', metadata: { promo: '50 off now' } });
    await send(ws, 'product_updated', { external_id: 'accent', title: 'C', metadata: { promo: 'ÉTÉ \\ winter' } });
    const contains = async (value: string) => (await evaluate(ws, { metadata: [{ key: 'promo', operator: 'contains', value }] })).ids.sort();
    expect(await contains('% off_')).toEqual(['pct']);
    expect(await contains('0_')).toEqual([]);
    expect(await contains('off')).toEqual(['pct', 'plain']);
    expect(await contains('été \\ W')).toEqual(['accent']);
    expect((await evaluate(ws, { metadata: [{ key: 'promo', operator: 'not_contains', value: '%' }] })).ids.sort()).toEqual(['accent', 'plain']);
  });

  it('title_asc sorts as the collator: case, accents and numbers; equal titles newest first', async () => {
    const ws = (await h().workspace()).id;
    const titles = ['item 10', 'Item 9', 'item 09', 'éclair', 'Eclair', 'apple', 'Zebra', 'Item 9b', '(special)', 'Über', 'uber', 'Straße', 'strasse 2'];
    for (const [i, title] of titles.entries()) await send(ws, 'product_updated', { external_id: `t${i}`, title });
    await send(ws, 'product_updated', { external_id: 'dup', title: 'apple' });
    const { ids } = await evaluate(ws, { sort_by: 'title_asc' });
    const expected = titles.map((title, i) => ({ title, id: `t${i}`, at: i })).concat([{ title: 'apple', id: 'dup', at: titles.length }]);
    expected.sort((a, b) => byCollator(a.title, b.title) || b.at - a.at);
    expect(ids).toEqual(expected.map((e) => e.id));
  });

  it('reindexFilters (emk feeds reindex-filters) rebuilds the side tables and title keys from the products', async () => {
    const ws = (await h().workspace()).id;
    for (let i = 0; i < 30; i++) {
      await send(ws, 'product_updated', {
        external_id: `r${i}`,
        title: `Thing ${30 - i}`,
        categories: i % 2 ? ['Odd'] : ['Even'],
        metadata: i % 3 ? {} : { third: 'Yes' },
        variants: [{ external_id: `r${i}v`, options: { Size: i % 5 ? 'M' : 'L' } }],
      });
    }
    const feeds = [
      { categories: ['Odd'], sort_by: 'title_asc' },
      { metadata: [{ key: 'third', operator: 'equals', value: 'Yes' }] },
      { variant_options: { Size: ['L'] }, sort_by: 'title_asc' },
    ];
    const before = await Promise.all(feeds.map((f) => evaluate(ws, f)));
    expect(before.map((b) => b.count)).toEqual([15, 10, 6]);

    const { knex } = h().services.db;
    const ids = knex('products').where({ workspace_id: ws }).select('id');
    for (const table of ['product_categories', 'product_metadata', 'product_variant_options']) await knex(table).whereIn('product_id', ids).delete();
    await knex('products').where({ workspace_id: ws }).update({ title_key: '' });
    expect((await evaluate(ws, feeds[0]!)).count).toBe(0);

    expect(await h().services.products.reindexFilters(ws)).toEqual({ products: 30 });
    expect(await Promise.all(feeds.map((f) => evaluate(ws, f)))).toEqual(before);
  });

  it('filtered() is a query to clone and join; the ranker gets it with the limit, null falls back to the plain order', async () => {
    const ws = (await h().workspace()).id;
    for (const [id, price] of [['a', 5], ['b', 15], ['c', 25], ['d', 35]] as const) {
      await send(ws, 'product_updated', { external_id: id, title: id.toUpperCase(), price, categories: ['All'] });
    }
    const { knex, dialect } = h().services.db;
    const store = createFeedStore(dialect);
    const feed: FeedSettings = { ...DEFAULT_SETTINGS, price_min: 10, sort_by: 'price_asc', recommendation_type: 'best_selling' };
    const base = store.filtered(knex, ws, feed);
    const joined = await base
      .clone()
      .join('product_categories as pc', 'pc.product_id', 'p.id')
      .where('pc.category', 'All')
      .select('p.external_id')
      .orderBy('p.external_id', 'desc');
    expect(joined.map((r: { external_id: string }) => r.external_id)).toEqual(['d', 'c', 'b']);
    expect(await base.clone().count({ n: '*' })).toEqual([{ n: expect.anything() }]);
    expect(await store.count(knex, ws, feed)).toBe(3);

    const calls: Array<{ limit: number; contactId: string | undefined }> = [];
    let answer: 'ranked' | 'none' = 'ranked';
    const ranker: FeedRanker = async ({ db, workspaceId, filtered, limit, contactId }) => {
      calls.push({ limit, contactId });
      if (answer === 'none') return null;
      // Joins its own data (here: the price, descending) to the filtered products.
      const rows = await filtered().select('p.id').where('p.workspace_id', workspaceId).orderBy('p.price', 'desc').limit(limit);
      expect(db).toBe(knex);
      return rows.map((r: { id: string }) => r.id);
    };
    const service = createFeedService({
      knex,
      reader: () => knex,
      writeTransaction: h().services.db.writeTransaction,
      dialect,
      products: h().services.products,
      ranker,
    });
    const { feed: saved } = await service.create(ws, { name: 'ranked', price_min: 10, sort_by: 'price_asc', recommendation_type: 'best_selling' });
    const external = (r: { data: Array<{ external_id: string }> }) => r.data.map((p) => p.external_id);
    expect(external(await service.productsFor(ws, saved.id, { limit: '2', contact_id: 'c1' }))).toEqual(['d', 'c']);
    expect(calls).toEqual([{ limit: 2, contactId: 'c1' }]);
    answer = 'none';
    expect(external(await service.productsFor(ws, saved.id, { limit: '2' }))).toEqual(['b', 'c']);
    // Catalog-only types never reach the ranker.
    const { feed: newest } = await service.create(ws, { name: 'new', recommendation_type: 'newest' });
    await service.productsFor(ws, newest.id);
    expect(calls).toHaveLength(2);
  });

  it('PostgreSQL connections run without JIT compilation (it slowed feed counts)', async (context) => {
    if (h().dialect !== 'postgres') context.skip();
    const { rows } = await h().services.db.knex.raw('SHOW jit');
    expect(rows[0].jit).toBe('off');
  });
});
